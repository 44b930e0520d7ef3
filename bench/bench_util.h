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

/* Adds a GPT-2 d12-shaped model's units to e (C 768, vocab 50304, 1024 positions, L blocks of
   12 tensors, the final norm): 124.5M parameters at L = 12. */
static inline void bench_add_gpt2(zs_engine *e, int L) {
  const int64_t C = 768, V = 50304, T = 1024;
  zs_tensor_desc emb[2] = {{"wte", 2, {V, C, 0, 0}, 0}, {"wpe", 2, {T, C, 0, 0}, 0}};
  zs_tensor_desc blk[12] = {
      {"ln1_w", 1, {C}, 1},     {"ln1_b", 1, {C}, 1},           {"qkv_w", 2, {3 * C, C}, 0},
      {"qkv_b", 1, {3 * C}, 1}, {"proj_w", 2, {C, C}, 0},       {"proj_b", 1, {C}, 1},
      {"ln2_w", 1, {C}, 1},     {"ln2_b", 1, {C}, 1},           {"fc_w", 2, {4 * C, C}, 0},
      {"fc_b", 1, {4 * C}, 1},  {"fcproj_w", 2, {C, 4 * C}, 0}, {"fcproj_b", 1, {C}, 1}};
  zs_tensor_desc lnf[2] = {{"lnf_w", 1, {C}, 1}, {"lnf_b", 1, {C}, 1}};
  DIE(zs_engine_add_unit(e, "embedding", 2, emb, NULL));
  for (int l = 0; l < L; l++) {
    char name[32];
    snprintf(name, sizeof name, "block.%d", l);
    DIE(zs_engine_add_unit(e, name, 12, blk, NULL));
  }
  DIE(zs_engine_add_unit(e, "ln_f", 2, lnf, NULL));
}

#endif
