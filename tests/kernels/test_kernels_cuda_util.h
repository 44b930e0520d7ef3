/* Helpers shared by the CUDA kernel tests: device detection (skip without a GPU), seeded random
   host data rounded to the kernel dtype, host <-> device copies with dtype conversion, NaN
   poisoning, and tolerance comparison. Fatal CUDA errors end the test (exit 1). */
#ifndef ZS_TESTS_KERNELS_TEST_KERNELS_CUDA_UTIL_H
#define ZS_TESTS_KERNELS_TEST_KERNELS_CUDA_UTIL_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/bf16.h"
#include "zs_test.h"

/* Dies on a CUDA runtime failure, naming the call. */
#define CU_OK(call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* 1 when a CUDA device is visible; 0 after printing the skip line when none is (the test then
   exits 0). Any other CUDA failure ends the test with exit 1 (zs_test_cuda_absent). */
static inline int kt_have_device(void) {
  return !zs_test_cuda_absent(1);
}

static uint64_t kt_rng = 0;

/* Seeds from ZS_TEST_SEED or the clock, and prints the seed so a failure can be replayed. */
static inline void kt_seed(const char *test) {
  const char *s = getenv("ZS_TEST_SEED");
  kt_rng = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
  printf("%s: seed %llu (ZS_TEST_SEED to replay)\n", test, (unsigned long long)kt_rng);
  kt_rng = kt_rng * 2862933555777941757ull + 3037000493ull;
}

/* Uniform in [0, 1). */
static inline double kt_u01(void) {
  kt_rng ^= kt_rng << 13;
  kt_rng ^= kt_rng >> 7;
  kt_rng ^= kt_rng << 17;
  return (double)(kt_rng >> 11) * (1.0 / 9007199254740992.0);
}

static inline size_t kt_esize(zs_dtype dt) {
  return dt == ZS_BF16 ? 2 : 4;
}

/* x rounded to what dt can hold (bf16: nearest even). */
static inline float kt_round(zs_dtype dt, float x) {
  return dt == ZS_BF16 ? zs_bf16_to_f32(zs_f32_to_bf16(x)) : x;
}

/* Host array of n uniform values in [lo, hi), already representable in dt. Caller frees. */
static inline float *kt_rand(size_t n, float lo, float hi, zs_dtype dt) {
  float *h = malloc((n ? n : 1) * sizeof *h);
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++)
    h[i] = kt_round(dt, (float)(lo + (hi - lo) * kt_u01()));
  return h;
}

/* Device buffer of n elements of dt filled with NaN (all-ones bytes are NaN in f32 and bf16). */
static inline void *kt_dev_nan(size_t n, zs_dtype dt) {
  void *d = NULL;
  CU_OK(cudaMalloc(&d, (n ? n : 1) * kt_esize(dt)));
  CU_OK(cudaMemset(d, 0xff, (n ? n : 1) * kt_esize(dt)));
  return d;
}

/* Device copy of host fp32 values stored as dt. */
static inline void *kt_upload(const float *h, size_t n, zs_dtype dt) {
  void *d = kt_dev_nan(n, dt);
  if (dt == ZS_F32) {
    CU_OK(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
    return d;
  }
  uint16_t *t = malloc((n ? n : 1) * 2);
  if (!t) exit(1);
  for (size_t i = 0; i < n; i++)
    t[i] = zs_f32_to_bf16(h[i]);
  CU_OK(cudaMemcpy(d, t, n * 2, cudaMemcpyHostToDevice));
  free(t);
  return d;
}

/* Device values of dt as host fp32 (into h). */
static inline void kt_download(float *h, const void *d, size_t n, zs_dtype dt) {
  CU_OK(cudaDeviceSynchronize());
  if (dt == ZS_F32) {
    CU_OK(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
    return;
  }
  uint16_t *t = malloc((n ? n : 1) * 2);
  if (!t) exit(1);
  CU_OK(cudaMemcpy(t, d, n * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i++)
    h[i] = zs_bf16_to_f32(t[i]);
  free(t);
}

/* Compares a device result with the CPU reference: every element finite where the reference is,
   and |got - ref| <= tol * (|ref| + rms(ref) + scale) (relative, with the array's scale and the
   inputs' scale as the floor, so results that cancel to near zero are held to the rounding of
   their terms: with one element rms(ref) is |ref| and floors nothing). Counts one failure per
   array and prints the worst element. */
static inline void kt_compare_scaled(const char *what, const void *dev, zs_dtype dt,
                                     const float *ref, size_t n, double tol, double scale) {
  float *got = malloc((n ? n : 1) * sizeof *got);
  if (!got) exit(1);
  kt_download(got, dev, n, dt);
  double ss = 0.0;
  for (size_t i = 0; i < n; i++)
    ss += (double)ref[i] * ref[i];
  double rms = n ? sqrt(ss / (double)n) : 0.0;
  size_t bad = 0, worst = 0;
  double worst_r = 0.0;
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - (double)ref[i]);
    double lim = tol * (fabs((double)ref[i]) + rms + scale) + 1e-30;
    double r = isfinite(got[i]) || !isfinite(ref[i]) ? err / lim : INFINITY;
    if (isnan(r)) r = INFINITY;
    if (r > 1.0) bad++;
    if (r > worst_r) {
      worst_r = r;
      worst = i;
    }
  }
  ZS_EXPECT(bad == 0, "%s: %zu of %zu elements off (worst [%zu]: got %.9g, want %.9g, %.3g x tol)",
            what, bad, n, worst, n ? got[worst] : 0.0f, n ? ref[worst] : 0.0f, worst_r);
  free(got);
}

/* kt_compare_scaled with no floor but the array's own scale. */
static inline void kt_compare(const char *what, const void *dev, zs_dtype dt, const float *ref,
                              size_t n, double tol) {
  kt_compare_scaled(what, dev, dt, ref, n, tol, 0.0);
}

/* Relative tolerance of a dtype: fp32 ~1e-5, bf16 ~1e-2 (its outputs are rounded to 8 bits). */
static inline double kt_tol(zs_dtype dt, double f32_tol) {
  return dt == ZS_BF16 ? 1e-2 : f32_tol;
}

#endif
