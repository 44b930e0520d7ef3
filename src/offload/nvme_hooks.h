/* The NVMe tier's test hook, which exists only in the test build of the library (ZS_TEST_HOOKS:
 * the zshard_internal archive the tests link; CMakeLists.txt builds nvme_*.c twice). The shipped
 * libzshard compiles the empty inline version below, so it has no hook. Not for use outside
 * src/offload and the tests. */
#ifndef ZS_OFFLOAD_NVME_HOOKS_H
#define ZS_OFFLOAD_NVME_HOOKS_H

#include <stdint.h>

#ifdef ZS_TEST_HOOKS
/* Arms the hook: the nth I/O queued from now on by any ring of this process (1 = the next; the
   asynchronous checkpoint writer's ring counts too: offload/direct_out.h) is
   submitted as usual but completes with -err (an errno, e.g. EIO). nth = 0 disarms. Tests only;
   process-wide, thread-safe. */
void zs_nvme_hook_fail_io(uint64_t nth, int err);
/* Called by the ring for each I/O it queues: the errno that I/O must complete with (0: its real
   result). */
int zs_nvme_hook_io(void);
/* Arms the short-completion hook: the nth I/O queued from now on (1 = the next) is handed to the
   kernel for only the first half of its length (rounded down to 4096 bytes, at least 4096), so it
   completes short and the ring must resubmit the rest. nth = 0 disarms. Tests only. */
void zs_nvme_hook_short_io(uint64_t nth);
/* Called by the ring for each I/O it queues: 1 when that I/O must be cut short. */
int zs_nvme_hook_io_short(void);
/* Arms the submit hook: the nth io_uring_submit call from now on (1 = the next) fails with -err
   without handing anything to the kernel. nth = 0 disarms. Tests only. */
void zs_nvme_hook_fail_submit(uint64_t nth, int err);
/* Called by the ring before each io_uring_submit: the errno that call must fail with (0: none). */
int zs_nvme_hook_submit(void);
#else
static inline int zs_nvme_hook_io(void) {
  return 0;
}
static inline int zs_nvme_hook_io_short(void) {
  return 0;
}
static inline int zs_nvme_hook_submit(void) {
  return 0;
}
#endif

#endif
