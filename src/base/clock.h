/* The library's clocks, header-only (static inline) so that every layer and the kernels library
 * read the same ones: the monotonic clock every timeout and back-off is measured on, and the
 * wall clock the divergence headers carry between hosts. */
#ifndef ZS_BASE_CLOCK_H
#define ZS_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic seconds (CLOCK_MONOTONIC): for intervals and deadlines on this host only. */
static inline double zs_clock_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wall-clock microseconds (CLOCK_REALTIME): comparable across the hosts of a job, unlike the
   monotonic clock; may jump when the system clock is set. */
static inline uint64_t zs_clock_wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#endif
