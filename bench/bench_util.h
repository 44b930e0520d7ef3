/* What the benchmark programs share: ending on a failed call with the reason, and a monotonic
   clock. A benchmark ends (exit 1) on the first failure: it has nothing to report after one. */
#ifndef ZS_BENCH_BENCH_UTIL_H
#define ZS_BENCH_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "zshard.h"

/* Ends the benchmark when a zshard call fails, printing the call, its status and zs_last_error. */
#define DIE(call)                                                                                  \
  do {                                                                                             \
    zs_status rc_ = (call);                                                                        \
    if (rc_ != ZS_OK) {                                                                            \
      fprintf(stderr, "%s: %s: %s\n", #call, zs_status_str(rc_), zs_last_error());                 \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#ifdef CUDART_VERSION
/* Ends the benchmark when a CUDA runtime call fails (include cuda_runtime_api.h first). */
#define CU_OK(call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));                           \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#endif

/* Seconds on the monotonic clock. */
static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
