/* Lean-mode AdamW (zs_config.master = ZS_MASTER_LEAN; src/optim/adamw/cpu/adamw_lean.h):
 *
 *  1. Bitwise: every CPU path this machine has (scalar, AVX2, AVX-512) and the threaded split over
 *     a pool give exactly the bits of an independent reference written here from the contract
 *     of docs/OPTIMIZER.md §3, §6 (the float order, the hash, the rounding), for fp32 and bf16
 *     moments, lengths around every vector width, keys whose offsets cross 2^32, and extreme
 *     values (a huge lr that saturates at bf16's largest finite or overflows to inf, NaN and inf
 *     gradients).
 *  2. Statistics: the stochastic rounding is unbiased (the mean of many roundings of a value
 *     between two bf16 neighbours is the value, within 5 binomial standard deviations), and the
 *     hash's 16 bits are balanced (each bit set half the time, a chi-square over 256 buckets of the
 *     top byte within its 5-sigma band) over consecutive elements, steps and units.
 * Usage: test_adamw_lean [--quick] */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "optim/adamw/cpu/adamw_lean.h"
#include "optim/adamw/adamw_lean_mt.h"
#include "optim/adamw/host_update.h"
#include "offload/worker_pool.h"
#include "zs_test.h"

/* ---- the reference, from zshard.h's text (no library code) ---- */

static uint64_t ref_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t ref_fmix32(uint32_t x) {
  x = (x ^ (x >> 16)) * 0x85ebca6bu;
  x = (x ^ (x >> 13)) * 0xc2b2ae35u;
  return x ^ (x >> 16);
}
/* r of element j of unit `unit` at step t. */
static uint32_t ref_bits(uint64_t seed, int64_t t, int unit, uint64_t j) {
  uint64_t K = ref_mix64(ref_mix64(ref_mix64(seed ^ 0x9e3779b97f4a7c15ull) + (uint64_t)t) +
                         (uint64_t)(int64_t)unit);
  uint32_t k0 = (uint32_t)K, k1 = (uint32_t)(K >> 32);
  const uint64_t q = j / 2; /* the pair of j shares one hash: low half even, high half odd */
  const uint32_t h = ref_fmix32((uint32_t)q ^ k0 ^ ref_fmix32((uint32_t)(q >> 32) ^ k1));
  return j % 2 == 0 ? (h & 0xffffu) : (h >> 16);
}
static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* Stochastic rounding written as "lower neighbour, up with probability frac / 2^16": the lower
   bf16 magnitude is the truncation, it goes up one when frac + r reaches 2^16, never past 0x7f7f;
   NaN keeps its top bits and becomes quiet, inf stays inf. */
static uint16_t ref_round(float x, uint32_t r) {
  const uint32_t u = f2u(x), sign = (u >> 16) & 0x8000u;
  if (isnan(x)) return (uint16_t)((u >> 16) | 0x40u);
  if (isinf(x)) return (uint16_t)(u >> 16);
  uint32_t lower = (u & 0x7fffffffu) >> 16, frac = u & 0xffffu;
  uint32_t mag = lower + (frac + r >= 0x10000u ? 1u : 0u);
  if (mag > 0x7f7fu) mag = 0x7f7fu;
  return (uint16_t)(sign | mag);
}
/* Round to nearest even (bf16 moments), via the integer definition of IEEE rounding. */
static uint16_t ref_rne(float x) {
  const uint32_t u = f2u(x);
  if (isnan(x)) return (uint16_t)((u >> 16) | 0x40u);
  uint32_t hi = u >> 16, lo = u & 0xffffu;
  if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) hi++;
  return (uint16_t)hi;
}

typedef struct {
  float lr, b1, b2, eps, wd;
  int64_t t;
  float gscale;
} hyper;

/* The coefficients as zshard.h defines them (double, rounded once to float). */
static zs_adamw_coef coef_of(const hyper *h) {
  zs_adamw_coef c;
  c.gscale = h->gscale;
  c.beta1 = h->b1;
  c.omb1 = 1.0f - h->b1;
  c.beta2 = h->b2;
  c.omb2 = 1.0f - h->b2;
  c.bc1 = (float)(1.0 / (1.0 - pow((double)h->b1, (double)h->t)));
  c.bc2 = (float)(1.0 / (1.0 - pow((double)h->b2, (double)h->t)));
  c.eps = h->eps;
  c.wd = h->wd;
  c.neg_lr = -h->lr;
  return c;
}

/* One element of the lean update, zshard.h's float order. */
static void ref_elem(const zs_adamw_coef *c, uint16_t *p, float *m, float *v, uint16_t g16,
                     uint32_t r) {
  float p32 = u2f((uint32_t)*p << 16), g = u2f((uint32_t)g16 << 16) * c->gscale;
  float mn = fmaf(c->beta1, *m, c->omb1 * g);
  float vn = fmaf(c->beta2, *v, (c->omb2 * g) * g);
  float den = sqrtf(vn * c->bc2) + c->eps;
  float upd = (mn * c->bc1) / den;
  p32 = fmaf(c->neg_lr, fmaf(c->wd, p32, upd), p32);
  *p = ref_round(p32, r);
  *m = mn;
  *v = vn;
}

/* ---- inputs ---- */
static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
  return ref_mix64(rng += 0x9e3779b97f4a7c15ull);
}
/* sign * [1, 2) * 2^[lo, lo + span) */
static float spread(int lo, int span) {
  uint64_t r = rnd();
  double mag = ldexp(1.0 + (double)(r >> 11) * 0x1.0p-53, (int)((r >> 1) % (uint64_t)span) + lo);
  return (float)(r & 1 ? -mag : mag);
}
static uint16_t bf(float x) {
  return ref_rne(x);
}

typedef struct {
  uint16_t *p, *g;
  float *m32, *v32;
  uint16_t *m16, *v16;
} arrays;

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}
static void arrays_alloc(arrays *a, size_t n) {
  a->p = xmalloc(n * 2);
  a->g = xmalloc(n * 2);
  a->m16 = xmalloc(n * 2);
  a->v16 = xmalloc(n * 2);
  a->m32 = xmalloc(n * 4);
  a->v32 = xmalloc(n * 4);
}
static void arrays_free(arrays *a) {
  free(a->p);
  free(a->g);
  free(a->m16);
  free(a->v16);
  free(a->m32);
  free(a->v32);
}
static void arrays_copy(arrays *d, const arrays *s, size_t n) {
  memcpy(d->p, s->p, n * 2);
  memcpy(d->g, s->g, n * 2);
  memcpy(d->m16, s->m16, n * 2);
  memcpy(d->v16, s->v16, n * 2);
  memcpy(d->m32, s->m32, n * 4);
  memcpy(d->v32, s->v32, n * 4);
}
/* Random state; extreme 1: params near bf16's largest finite and some NaN / inf gradients;
   extreme 2: the params alone; extreme 3 (no randomness): p = +-0x7f7f, g = -+1, m = v = 0, so
   that at t = 1 with lr = 2^119 every new p is +-0x7f7f8000 exactly (finite, above bf16's largest
   finite: half the lanes must clamp, and no block has a non-finite value). */
static void arrays_fill(arrays *a, size_t n, int extreme) {
  for (size_t i = 0; i < n; i++) {
    if (extreme == 3) {
      a->p[i] = (i & 1) ? 0xff7fu : 0x7f7fu;
      a->g[i] = (i & 1) ? 0x3f80u : 0xbf80u;
      a->m32[i] = a->v32[i] = 0.0f;
      a->m16[i] = a->v16[i] = 0;
      continue;
    }
    a->p[i] = bf(extreme && i % 3 == 0
                     ? (i & 8 ? -1.0f : 1.0f) * u2f(0x7f7f0000u - (uint32_t)(rnd() % 3) * 0x10000u)
                     : spread(-12, 14));
    a->g[i] = bf(spread(-20, 24));
    if (extreme == 1 && i % 11 == 5) a->g[i] = (i & 16) ? 0x7fc0u /* NaN */ : 0xff80u /* -inf */;
    float m = 0.1f * spread(-20, 20), v = fabsf(spread(-30, 26));
    a->m32[i] = m;
    a->v32[i] = v;
    a->m16[i] = bf(m);
    a->v16[i] = bf(v);
  }
}

/* The reference over a whole call starting at unit element elem0. */
static void ref_call(const hyper *h, uint64_t seed, int unit, uint64_t elem0, arrays *a, int mbf16,
                     size_t n) {
  const zs_adamw_coef c = coef_of(h);
  for (size_t i = 0; i < n; i++) {
    const uint32_t r = ref_bits(seed, h->t, unit, elem0 + i);
    if (mbf16) {
      float m = u2f((uint32_t)a->m16[i] << 16), v = u2f((uint32_t)a->v16[i] << 16);
      ref_elem(&c, &a->p[i], &m, &v, a->g[i], r);
      a->m16[i] = ref_rne(m);
      a->v16[i] = ref_rne(v);
    } else {
      ref_elem(&c, &a->p[i], &a->m32[i], &a->v32[i], a->g[i], r);
    }
  }
}

/* Bitwise equality of p and the moments; names the first difference. */
static int same(const arrays *x, const arrays *y, int mbf16, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    int d = x->p[i] != y->p[i];
    if (mbf16)
      d |= x->m16[i] != y->m16[i] || x->v16[i] != y->v16[i];
    else
      d |= f2u(x->m32[i]) != f2u(y->m32[i]) || f2u(x->v32[i]) != f2u(y->v32[i]);
    if (d) {
      fprintf(stderr, "%s: element %zu: p %04x vs %04x\n", what, i, x->p[i], y->p[i]);
      return 0;
    }
  }
  return 1;
}

/* One configuration on every path and on the pool, against the reference. */
static void check_config(zs_pool *pool, const hyper *h, uint64_t seed, int unit, uint64_t elem0,
                         size_t n, int mbf16, int extreme) {
  arrays init, want, got;
  arrays_alloc(&init, n);
  arrays_alloc(&want, n);
  arrays_alloc(&got, n);
  arrays_fill(&init, n, extreme);
  arrays_copy(&want, &init, n);
  ref_call(h, seed, unit, elem0, &want, mbf16, n);
  const zs_adamw_coef c = coef_of(h);
  const zs_lean_key k = zs_lean_key_make(seed, h->t, unit, elem0);
  for (int isa = ZS_ADAMW_ISA_SCALAR; isa <= ZS_ADAMW_ISA_AVX512; isa++) {
    if (!zs_adamw_isa_supported((zs_adamw_isa)isa)) continue;
    arrays_copy(&got, &init, n);
    zs_adamw_kernel_lean_for((zs_adamw_isa)isa)(&c, &k, got.p, mbf16 ? (void *)got.m16 : got.m32,
                                                mbf16 ? (void *)got.v16 : got.v32, mbf16, got.g, n);
    char what[160];
    snprintf(what, sizeof what, "%s n %zu elem0 %#llx mbf16 %d extreme %d t %lld",
             zs_adamw_isa_name((zs_adamw_isa)isa), n, (unsigned long long)elem0, mbf16, extreme,
             (long long)h->t);
    ZS_EXPECT(same(&got, &want, mbf16, n, what), "%s differs from the reference", what);
  }
  arrays_copy(&got, &init, n);
  zs_cpu_adamw_lean_ex(pool, ZS_ADAMW_ISA_AUTO, &c, &k, got.p, mbf16 ? (void *)got.m16 : got.m32,
                       mbf16 ? (void *)got.v16 : got.v32, mbf16, got.g, n);
  ZS_EXPECT(same(&got, &want, mbf16, n, "pool"), "pool (n %zu, mbf16 %d) differs", n, mbf16);
  /* The host tier's update (optim/adamw/host_update.h) in chunks as the CUDA copy pipeline cuts
     them (7 elements, then 1000 at a time): the state by lo, grad and params by the chunk, the key
     of element 0 of the segment. */
  arrays_copy(&got, &init, n);
  zs_opt_host_fn fn = NULL;
  ZS_OK_OR_DIE(zs_host_update_for(ZS_MASTER_LEAN, mbf16 ? ZS_BF16 : ZS_F32, &fn));
  const zs_opt_state st = {
      NULL, {mbf16 ? (void *)got.m16 : got.m32, mbf16 ? (void *)got.v16 : got.v32}, NULL, k};
  for (size_t lo = 0; lo < n;) {
    const size_t left = n - lo, len = lo == 0 ? (left < 7 ? left : 7) : (left < 1000 ? left : 1000);
    fn(pool, &c, &st, lo, len, got.g + lo, ZS_BF16, got.p + lo, ZS_BF16);
    lo += len;
  }
  ZS_EXPECT(same(&got, &want, mbf16, n, "host tier"), "host tier (n %zu, mbf16 %d) differs", n,
            mbf16);
  arrays_free(&init);
  arrays_free(&want);
  arrays_free(&got);
}

static int count_extremes(void) {
  /* The extreme configuration must reach the saturating, overflowing and NaN branches. */
  const hyper h = {1e36f, 0.9f, 0.999f, 1e-8f, 0.0f, 2, 1.0f};
  const zs_adamw_coef c = coef_of(&h);
  arrays a;
  const size_t n = 4096;
  arrays_alloc(&a, n);
  arrays_fill(&a, n, 1);
  int sat = 0, inf = 0, nan = 0;
  for (size_t i = 0; i < n; i++) {
    uint16_t p = a.p[i];
    ref_elem(&c, &p, &a.m32[i], &a.v32[i], a.g[i], ref_bits(7, 2, 1, i));
    sat += (p & 0x7fffu) == 0x7f7fu;
    inf += (p & 0x7fffu) == 0x7f80u;
    nan += (p & 0x7fffu) > 0x7f80u;
  }
  arrays_free(&a);
  ZS_EXPECT(sat > 0 && nan > 0, "extreme inputs: %d saturated, %d inf, %d NaN", sat, inf, nan);
  return sat;
}

/* ---- statistics ---- */

/* The mean of N roundings (fresh bits each) of x, between bf16 neighbours lo < hi, is x: the
   count of "up" is binomial(N, q) with q = (x - lo) / (hi - lo). */
static void check_unbiased(float x, int N) {
  const uint32_t u = f2u(x);
  const float lo = u2f(u & 0xffff0000u), hi = u2f((u & 0xffff0000u) + 0x10000u);
  const double q = ((double)x - lo) / ((double)hi - lo);
  long up = 0;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    const uint16_t b = zs_lean_round(u, zs_lean_bits(0x1234u, 0x5678u, (uint64_t)i * 7919u + 3u));
    const float y = u2f((uint32_t)b << 16);
    ZS_EXPECT(y == lo || y == hi, "%.9g rounded to %.9g, not a neighbour", (double)x, (double)y);
    up += y == hi;
    sum += y;
  }
  const double sd = sqrt((double)N * q * (1 - q));
  ZS_EXPECT(fabs((double)up - N * q) <= 5 * sd + 1,
            "x %.9g: %ld of %d up, expected %.1f +- %.1f (5 sd)", (double)x, up, N, N * q, 5 * sd);
  const double mean = sum / N, sd_mean = fabs((double)hi - lo) * sqrt(q * (1 - q) / N);
  ZS_EXPECT(fabs(mean - x) <= 5 * sd_mean + 1e-30, "x %.9g: mean %.9g (sd of the mean %.3g)",
            (double)x, mean, sd_mean);
}

/* The 16 bits over n consecutive elements of unit `unit` at step t: each bit is set n/2 times
   within 5 sd, and the top byte's 256 buckets pass a chi-square test (mean 255, sd sqrt(510);
   bound: 5 sd). */
static void check_hash(uint64_t seed, int64_t t, int unit, uint64_t elem0, size_t n) {
  const zs_lean_key k = zs_lean_key_make(seed, t, unit, elem0);
  long bit[16] = {0}, bucket[256] = {0};
  for (size_t i = 0; i < n; i++) {
    const uint32_t r = zs_lean_bits(k.k0, k.k1, k.elem0 + i);
    ZS_EXPECT(r <= 0xffffu && r == ref_bits(seed, t, unit, elem0 + i), "bits of %zu: %#x", i, r);
    for (int b = 0; b < 16; b++)
      bit[b] += (r >> b) & 1;
    bucket[r >> 8]++;
  }
  const double sd = sqrt((double)n / 4);
  for (int b = 0; b < 16; b++)
    ZS_EXPECT(fabs((double)bit[b] - n / 2.0) <= 5 * sd,
              "seed %llu t %lld unit %d: bit %d set %ld of %zu times", (unsigned long long)seed,
              (long long)t, unit, b, bit[b], n);
  double chi = 0, e = (double)n / 256;
  for (int b = 0; b < 256; b++)
    chi += (bucket[b] - e) * (bucket[b] - e) / e;
  ZS_EXPECT(fabs(chi - 255) <= 5 * sqrt(510.0), "seed %llu t %lld unit %d: chi-square %.1f",
            (unsigned long long)seed, (long long)t, unit, chi);
}

/* Neighbouring steps, units and elements draw unrelated bits: the bits of (t, t + 1),
   (unit, unit + 1), (j, j + 1) for even j (the two halves of one hash) and for odd j (the ends
   of two hashes) agree on each bit half the time. */
static void check_independent(size_t n) {
  long agree_t = 0, agree_u = 0, agree_e[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    const uint32_t a = ref_bits(0, 5, 2, i), b = ref_bits(0, 6, 2, i), c = ref_bits(0, 5, 3, i);
    const uint32_t d = ref_bits(0, 5, 2, i + 1);
    for (int k = 0; k < 16; k++) {
      agree_t += ((a ^ b) >> k & 1) == 0;
      agree_u += ((a ^ c) >> k & 1) == 0;
      agree_e[i & 1] += ((a ^ d) >> k & 1) == 0;
    }
  }
  const double N = 16.0 * (double)n, sd = sqrt(N / 4), Ne = N / 2, sde = sqrt(Ne / 4);
  ZS_EXPECT(fabs(agree_t - N / 2) <= 5 * sd && fabs(agree_u - N / 2) <= 5 * sd,
            "bits agree across steps %ld, across units %ld of %.0f", agree_t, agree_u, N);
  ZS_EXPECT(fabs(agree_e[0] - Ne / 2) <= 5 * sde && fabs(agree_e[1] - Ne / 2) <= 5 * sde,
            "bits of neighbouring elements agree %ld (one hash) and %ld (two) of %.0f", agree_e[0],
            agree_e[1], Ne);
}

/* zs_lean_round's special cases against the reference, for many random bits. */
static void check_round_cases(void) {
  const uint32_t cases[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x8000ffffu, 0x0000ffffu,
                            0x00010000u, 0x3f800000u, 0x3f80ffffu, 0xbf808000u, 0x7f7f0000u,
                            0x7f7f0001u, 0x7f7fffffu, 0xff7fffffu, 0x7f7effffu, 0x7f800000u,
                            0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffa01234u, 0x7fffffffu};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (uint32_t r = 0; r <= 0xffffu; r += 0x101u) {
      const uint16_t got = zs_lean_round(cases[c], r), want = ref_round(u2f(cases[c]), r);
      ZS_EXPECT(got == want, "round(%08x, %04x) = %04x, want %04x", cases[c], r, got, want);
    }
  /* A finite value never becomes infinite; the largest ones saturate. */
  ZS_EXPECT(zs_lean_round(0x7f7fffffu, 0xffffu) == 0x7f7fu, "FLT_MAX must saturate");
  ZS_EXPECT(zs_lean_round(0x80000000u, 0xffffu) == 0x8000u, "-0 must stay -0");
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && !strcmp(argv[1], "--quick");
  zs_pool *pool = NULL;
  ZS_OK_OR_DIE(zs_pool_create(3, ZS_POOL_UNBOUND, &pool));
  const hyper hs[] = {{3e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1, 1.0f},
                      {1e-2f, 0.8f, 0.99f, 1e-6f, 0.0f, 3, 0.37f},
                      {1e-3f, 0.9f, 0.95f, 1e-8f, 0.01f, 1000, 2.5f}};
  const size_t lens[] = {1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1029};
  /* 0x1ffffff00: vector blocks on both sides of element 2^33, where the pair key changes */
  const uint64_t starts[] = {0, 5, 0xfffffff0ull, 0xfffffffbull, 0x1fffffff9ull, 0x1ffffff00ull};
  for (int mbf16 = 0; mbf16 < 2; mbf16++)
    for (size_t h = 0; h < sizeof hs / sizeof hs[0]; h++)
      for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++)
          check_config(pool, &hs[h], 42 + h, (int)l, starts[s], lens[l], mbf16, 0);
  /* Extreme values, and arrays long enough for the pool's tiles (offsets crossing 2^33, where
     the pair key changes, inside). */
  const hyper huge = {1e36f, 0.9f, 0.999f, 1e-8f, 0.0f, 2, 1.0f};
  for (int mbf16 = 0; mbf16 < 2; mbf16++) {
    check_config(pool, &huge, 7, 1, 0, 1000, mbf16, 1);
    /* saturation with few non-finite values (most blocks take the vector paths' finite short
       cut, which must clamp), then saturation in every lane pair with none at all */
    const hyper big = {2e35f, 0.9f, 0.999f, 1e-8f, 0.0f, 2, 1.0f};
    check_config(pool, &big, 8, 2, 6, 1000, mbf16, 2);
    const hyper sat = {0x1p119f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1.0f};
    check_config(pool, &sat, 8, 2, 6, 1000, mbf16, 3);
    check_config(pool, &hs[0], 9, 4, 0x1ffff0000ull, quick ? 70001 : 200003, mbf16, 0);
  }
  count_extremes();
  check_round_cases();
  /* Statistics: values across binades, subnormals and both signs. */
  const float xs[] = {1.00390625f + 0.001f, -3.14159265f, 1e-3f, -7.77e-20f,
                      0x1.234p-130f,        65504.1f,     0.1f,  -0.3f};
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
    check_unbiased(xs[i], quick ? 100000 : 400000);
  const size_t hn = quick ? 1 << 18 : 1 << 20;
  check_hash(0, 1, 0, 0, hn);
  check_hash(12345, 77, 9, 0xfffff000ull, hn);
  check_hash(~0ull, 1000000, 1 << 20, 1ull << 40, hn);
  check_independent(quick ? 1 << 16 : 1 << 18);
  zs_pool_destroy(pool);
  printf("test_adamw_lean: paths:%s%s%s\n", " scalar",
         zs_adamw_isa_supported(ZS_ADAMW_ISA_AVX2) ? " avx2" : " (avx2 skipped)",
         zs_adamw_isa_supported(ZS_ADAMW_ISA_AVX512) ? " avx512" : " (avx512 skipped)");
  ZS_TEST_END("test_adamw_lean");
}
