/* The NVMe tier's test hook (nvme_hooks.h): compiled only into the test build of the library. */
#include "offload/nvme_hooks.h"

#include <stdatomic.h>

/* I/Os left before the failing one (0: disarmed), and its errno; the same for the short I/O and
   the failing submit. */
static _Atomic uint64_t hook_left, short_left, submit_left;
static _Atomic int hook_err, submit_err;

/* Counts one event down on *left: 1 when it was the armed nth one. */
static int zs_hook_count(_Atomic uint64_t *left) {
  uint64_t l = atomic_load(left);
  while (l > 0) {
    if (atomic_compare_exchange_weak(left, &l, l - 1)) return l == 1;
  }
  return 0;
}

void zs_nvme_hook_fail_io(uint64_t nth, int err) {
  atomic_store(&hook_err, err);
  atomic_store(&hook_left, nth);
}

int zs_nvme_hook_io(void) {
  return zs_hook_count(&hook_left) ? atomic_load(&hook_err) : 0;
}

void zs_nvme_hook_short_io(uint64_t nth) {
  atomic_store(&short_left, nth);
}

int zs_nvme_hook_io_short(void) {
  return zs_hook_count(&short_left);
}

void zs_nvme_hook_fail_submit(uint64_t nth, int err) {
  atomic_store(&submit_err, err);
  atomic_store(&submit_left, nth);
}

int zs_nvme_hook_submit(void) {
  return zs_hook_count(&submit_left) ? atomic_load(&submit_err) : 0;
}
