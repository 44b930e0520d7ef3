/* The free-memory measurement's test hook (free_hook.h). */
#include "base/free_hook.h"

#ifdef ZS_TEST_HOOKS
static int hook_on;       /* set by the test before its commits */
static size_t hook_bytes; /* what they measure */

void zs_test_hook_free_bytes(int on, size_t bytes) {
  hook_on = on != 0;
  hook_bytes = bytes;
}

int zs_hook_free_bytes(size_t *bytes) {
  if (hook_on) *bytes = hook_bytes;
  return hook_on;
}
#else
int zs_hook_free_bytes(size_t *bytes) {
  (void)bytes;
  return 0;
}
#endif
