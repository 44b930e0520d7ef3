/* The compute-copy rounding hook (round_hook.h). */
#include "base/round_hook.h"

#ifdef ZS_TEST_HOOKS
static int hook_ties_away; /* set by the test before its engines exist */

void zs_test_hook_fp32_ties_away(int on) {
  hook_ties_away = on != 0;
}

int zs_hook_fp32_ties_away(void) {
  return hook_ties_away;
}
#else
int zs_hook_fp32_ties_away(void) {
  return 0;
}
#endif
