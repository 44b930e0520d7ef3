/* A small synthetic model for engine tests: units with awkward sizes (not divisible by 2, 3 or 4,
 * a tensor smaller than the world, a unit of one element) and a per-batch quadratic loss whose
 * gradient the test computes itself, like a user's backward would:
 *   L_b(p) = sum_i 0.5 * a_bi * (p_i - t_bi)^2     =>   dL_b/dp_i = a_bi * (p_i - t_bi)
 * a_bi in [0.5, 1.5), t_bi in [-1, 1), from a counter-based hash of (batch, global index). */
#ifndef ZS_TESTS_ENGINE_ENGINE_MODEL_H
#define ZS_TESTS_ENGINE_ENGINE_MODEL_H

#include <stdint.h>
#include <stdlib.h>

#include "zshard.h"

#define TM_NUNITS 4
#define TM_MAXT 3

typedef struct {
  const char *name;
  int ntensors;
  zs_tensor_desc t[TM_MAXT];
} tm_unit_def;

/* Not const: test_engine_protocol.c enlarges the head for its NVMe-tier sequences (and restores
   it); every other test leaves it as it is. */
static tm_unit_def tm_units[TM_NUNITS] = {
    {"embed", 2, {{"w", 2, {7, 5, 0, 0}, 0}, {"b", 1, {3, 0, 0, 0}, 1}}},
    {"tiny", 1, {{"s", 1, {1, 0, 0, 0}, 0}}},
    {"block",
     3,
     {{"w", 2, {13, 3, 0, 0}, 0}, {"ln", 1, {2, 0, 0, 0}, 1}, {"c", 1, {11, 0, 0, 0}, 0}}},
    {"head", 1, {{"w", 1, {257, 0, 0, 0}, 0}}},
};

/* Element count of tensor t of unit u. */
static inline int64_t tm_numel(int u, int t) {
  int64_t n = 1;
  for (int d = 0; d < tm_units[u].t[t].ndim; d++)
    n *= tm_units[u].t[t].shape[d];
  return n;
}

/* Global index of element 0 of (u, t) across the whole model. */
static inline int64_t tm_base(int u, int t) {
  int64_t b = 0;
  for (int i = 0; i < u; i++)
    for (int k = 0; k < tm_units[i].ntensors; k++)
      b += tm_numel(i, k);
  for (int k = 0; k < t; k++)
    b += tm_numel(u, k);
  return b;
}

static inline int64_t tm_total(void) {
  return tm_base(TM_NUNITS - 1, 0) + tm_numel(TM_NUNITS - 1, 0);
}

/* splitmix64: a counter-based hash, so every rank derives the same numbers. */
static inline uint64_t tm_hash(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
/* A random stream from one seed, identical on every rank that starts from the same seed (the
   randomized call-sequence tests draw their programs from it). */
typedef struct {
  uint64_t s;
} rng;
/* The next number in [0, n). */
static inline uint32_t rnd(rng *r, uint32_t n) {
  r->s = tm_hash(r->s);
  return (uint32_t)(r->s % n);
}
static inline double tm_unif(uint64_t a, uint64_t b) {
  return (double)(tm_hash(a * 0x100000001b3ull ^ tm_hash(b)) >> 11) * (1.0 / 9007199254740992.0);
}
/* Initial value of global element i. */
static inline float tm_init(int64_t i) {
  return (float)(tm_unif(7, (uint64_t)i) * 2.0 - 1.0);
}
static inline float tm_a(int64_t batch, int64_t i) {
  return (float)(0.5 + tm_unif((uint64_t)batch * 2 + 100, (uint64_t)i));
}
static inline float tm_t(int64_t batch, int64_t i) {
  return (float)(tm_unif((uint64_t)batch * 2 + 101, (uint64_t)i) * 2.0 - 1.0);
}

/* Sets every tensor of the committed units u[TM_NUNITS] to tm_init (zs_unit_set_param); the first
   failing call's status. */
static inline zs_status tm_set_init(zs_unit **u) {
  zs_status rc = ZS_OK;
  for (int i = 0; i < TM_NUNITS && rc == ZS_OK; i++)
    for (int k = 0; k < tm_units[i].ntensors && rc == ZS_OK; k++) {
      const int64_t n = zs_unit_numel(u[i], k);
      float *h = (float *)malloc((size_t)n * sizeof *h + 1);
      if (!h) return ZS_ERR_OUT_OF_MEMORY;
      for (int64_t j = 0; j < n; j++)
        h[j] = tm_init(tm_base(i, k) + j);
      rc = zs_unit_set_param(u[i], k, h);
      free(h);
    }
  return rc;
}

/* One step of one micro-batch, every rank the same batch s: gradient a * (p - t); the first
   failing call's status. */
static inline zs_status tm_step(zs_engine *e, zs_unit **u, int s) {
  zs_status rc = zs_engine_begin_step(e, 1);
  for (int i = TM_NUNITS - 1; i >= 0 && rc == ZS_OK; i--) {
    rc = zs_unit_gather(u[i]);
    for (int k = 0; k < tm_units[i].ntensors && rc == ZS_OK; k++) {
      const float *p = (const float *)zs_unit_param(u[i], k);
      float *g = (float *)zs_unit_grad(u[i], k);
      for (int64_t j = 0; j < zs_unit_numel(u[i], k); j++)
        g[j] += tm_a(s, tm_base(i, k) + j) * (p[j] - tm_t(s, tm_base(i, k) + j));
    }
    if (rc == ZS_OK) rc = zs_unit_grads_ready(u[i]);
    if (rc == ZS_OK) rc = zs_unit_release(u[i]);
  }
  return rc == ZS_OK ? zs_engine_step(e, NULL) : rc;
}

/* Every weight (collective) into out (tm_total floats); the first failing call's status. */
static inline zs_status tm_snapshot(zs_unit **u, float *out) {
  zs_status rc = ZS_OK;
  for (int i = 0; i < TM_NUNITS && rc == ZS_OK; i++)
    for (int k = 0; k < tm_units[i].ntensors && rc == ZS_OK; k++)
      rc = zs_unit_get_param(u[i], k, out + tm_base(i, k));
  return rc;
}

#endif
