/* The NVMe tier's test hook (nvme_hooks.h): compiled only into the test build of the library. */
#include "offload/nvme_hooks.h"

#include <stdatomic.h>

/* I/Os left before the failing one (0: disarmed), and its errno. */
static _Atomic uint64_t hook_left;
static _Atomic int hook_err;

void zs_nvme_hook_fail_io(uint64_t nth, int err) {
  atomic_store(&hook_err, err);
  atomic_store(&hook_left, nth);
}

int zs_nvme_hook_io(void) {
  uint64_t left = atomic_load(&hook_left);
  while (left > 0) {
    if (atomic_compare_exchange_weak(&hook_left, &left, left - 1))
      return left == 1 ? atomic_load(&hook_err) : 0;
  }
  return 0;
}
