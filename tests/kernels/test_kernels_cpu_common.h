/* Shared helpers of the CPU kernel tests (tests/test_kernels_cpu_*.c): random data, comparison of
 * fp32 results against float64 references, and a float64 central-difference gradient driver.
 *
 * Method of every gradient test: the test holds an independent float64 forward f written in the
 * test itself. With a random dout, L(x) = sum(dout * f(x)) is a scalar; its gradient w.r.t. each
 * input element is estimated by (L(x + h) - L(x - h)) / 2h in float64 and compared with what the
 * kernel's backward added into a gradient buffer that was pre-filled with known random values
 * (so the += convention is checked at the same time: the prefill is subtracted before comparing).
 *
 * Tolerances (fp32 kernels against float64 references):
 *   forward  |got - want| <= 1e-5 * (|want| + 0.1 * max|want|)
 *   gradient |got - want| <= 1e-3 * (|want| + 0.01 * max|want|)
 * The max term is a floor for elements whose true value is (near) zero, where a relative error is
 * meaningless; it is a fraction of the largest magnitude of the same tensor.
 */
#ifndef ZS_TESTS_KERNELS_TEST_KERNELS_CPU_COMMON_H
#define ZS_TESTS_KERNELS_TEST_KERNELS_CPU_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_test.h"

#define KT_FWD_RTOL 1e-5
#define KT_GRAD_RTOL 1e-3
#define KT_FD_H 1e-5 /* central-difference step, float64 (truncation ~h^2, rounding ~1e-16/h) */

/* splitmix64: a tiny, seedable generator so every run sees the same data. */
static uint64_t kt_rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t kt_next(void) {
  uint64_t z = (kt_rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* Uniform in [lo, hi). */
static inline float kt_uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(kt_next() >> 11) * 0x1.0p-53);
}
/* Uniform integer in [0, n). */
static inline int kt_int(int n) {
  return (int)(kt_next() % (uint64_t)n);
}

/* Allocation that never returns NULL (a test cannot go on without its buffers). */
static inline void *kt_alloc(size_t bytes) {
  void *p = calloc(bytes ? bytes : 1, 1);
  if (!p) {
    fprintf(stderr, "FATAL: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}
static inline float *kt_floats(size_t n) {
  return kt_alloc(n * sizeof(float));
}
static inline double *kt_doubles(size_t n) {
  return kt_alloc(n * sizeof(double));
}

/* A new array of n random floats in [lo, hi). */
static inline float *kt_rand(size_t n, float lo, float hi) {
  float *p = kt_floats(n);
  for (size_t i = 0; i < n; i++)
    p[i] = kt_uniform(lo, hi);
  return p;
}
/* A float64 copy of a float array (the references compute on exactly the kernel's inputs). */
static inline double *kt_widen(const float *p, size_t n) {
  double *d = kt_doubles(n);
  for (size_t i = 0; i < n; i++)
    d[i] = p[i];
  return d;
}
static inline float *kt_copy(const float *p, size_t n) {
  float *q = kt_floats(n);
  memcpy(q, p, n * sizeof(float));
  return q;
}

/* Compares got (fp32) with want (float64) under |got - want| <= rtol * (|want| + floor *
   max|want|). Prints the worst element on failure; returns 1 when it passed. `base`, when not NULL,
   is subtracted from got first (the gradient prefill). */
static inline int kt_compare(const char *what, const float *got, const float *base,
                             const double *want, size_t n, double rtol, double floor) {
  double mx = 0.0;
  for (size_t i = 0; i < n; i++)
    mx = fmax(mx, fabs(want[i]));
  double worst = 0.0;
  size_t wi = 0;
  int ok = 1;
  for (size_t i = 0; i < n; i++) {
    double g = (double)got[i] - (base ? (double)base[i] : 0.0);
    double err = fabs(g - want[i]) / (fabs(want[i]) + floor * mx + 1e-30);
    if (!(err <= rtol)) ok = 0; /* NaN fails too */
    if (!(err <= worst)) {
      worst = err;
      wi = i;
    }
  }
  double g = n ? (double)got[wi] - (base ? (double)base[wi] : 0.0) : 0.0;
  ZS_EXPECT(ok, "%s: element %zu of %zu: got %.9g want %.9g (scaled error %.3g > %.1g)", what, wi,
            n, g, n ? want[wi] : 0.0, worst, rtol);
  return ok;
}

/* Forward check: fp32 kernel output against the float64 reference. */
static inline int kt_check_fwd(const char *what, const float *got, const double *want, size_t n) {
  return kt_compare(what, got, NULL, want, n, KT_FWD_RTOL, 0.1);
}

/* The scalar a gradient test differentiates: L = sum(dout * f(inputs)) in float64. The callback
   reads the test's float64 inputs (which kt_fd_grad perturbs in place) through ctx. */
typedef double (*kt_loss_fn)(void *ctx);

/* Central differences of loss w.r.t. x[idx[0..m-1]] (every element when idx is NULL, m = n),
   written to num[idx[i]]; x is restored exactly after each element. */
static inline void kt_fd_grad(kt_loss_fn loss, void *ctx, double *x, const size_t *idx, size_t m,
                              double *num) {
  for (size_t s = 0; s < m; s++) {
    size_t i = idx ? idx[s] : s;
    double x0 = x[i];
    x[i] = x0 + KT_FD_H;
    double lp = loss(ctx);
    x[i] = x0 - KT_FD_H;
    double lm = loss(ctx);
    x[i] = x0;
    num[i] = (lp - lm) / (2.0 * KT_FD_H);
  }
}

/* Gradient check of one input tensor of n elements: numeric gradient by kt_fd_grad, analytic one
   = grad - prefill (the kernel must have ADDED into grad). With idx != NULL only those m
   elements are compared (large tensors). */
static inline int kt_check_grad(const char *what, kt_loss_fn loss, void *ctx, double *x, size_t n,
                                const float *grad, const float *prefill, const size_t *idx,
                                size_t m) {
  double *num = kt_doubles(n);
  kt_fd_grad(loss, ctx, x, idx, idx ? m : n, num);
  int ok;
  if (!idx) {
    ok = kt_compare(what, grad, prefill, num, n, KT_GRAD_RTOL, 0.01);
  } else {
    float *g = kt_floats(m), *p = kt_floats(m);
    double *w = kt_doubles(m);
    for (size_t s = 0; s < m; s++) {
      g[s] = grad[idx[s]];
      p[s] = prefill[idx[s]];
      w[s] = num[idx[s]];
    }
    ok = kt_compare(what, g, p, w, m, KT_GRAD_RTOL, 0.01);
    free(g);
    free(p);
    free(w);
  }
  free(num);
  return ok;
}

/* A CPU fp32 kernel context, or the test dies. */
static inline zs_kernels *kt_cpu(void) {
  zs_kernels *k = NULL;
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k));
  return k;
}

#endif
