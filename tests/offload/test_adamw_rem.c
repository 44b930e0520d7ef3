/* The remainder master (zs_config.master = ZS_MASTER_REMAINDER; src/base/bf16_rem.h and
 * src/optim/adamw/cpu/adamw_rem.h):
 *  1. the split (bf16 compute copy, 16-bit remainder) and the join are a bijection on all 2^32
 *     fp32 patterns (exhaustive; --quick: a stride plus every edge class), and the compute copy is
 *     the bf16 value nearest to the master with ties away from zero, by an independent rounding
 *     (frexp/round in double) on finite masters;
 *  2. round-to-nearest-even cannot do this: an even bf16 value has 65537 fp32 preimages;
 *  3. each element's update against a reference written here: the master taken as a float, the
 *     AdamW of the header in float with fmaf (libm) in the documented order, the result split by
 *     the independent rounding; random inputs with ties, both signs, zeros, subnormals and huge
 *     values, m and v in fp32 and bf16;
 *  4. every path (scalar, AVX2, AVX-512: those this CPU has), the public entry and the threaded
 *     split give the scalar path's bits.
 * Usage: test_adamw_rem [--quick] */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/bf16.h"
#include "base/bf16_rem.h"
#include "optim/adamw/cpu/adamw_rem.h"
#include "optim/adamw/adamw_rem_mt.h"
#include "optim/adamw/host_update.h"
#include "offload/worker_pool.h"
#include "zs_test.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static float f_of(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static uint32_t bits_of(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

/* Independent rounding of a finite float to bf16, nearest with ties away from zero: 8
   significant bits for normal magnitudes, a multiple of 2^-133 (bf16's subnormal step) below
   2^-126; C's round() takes halves away from zero. Overflow gives infinity. */
static uint16_t ref_bf16_ta(float x) {
  const double d = (double)x;
  double r;
  if (fabs(d) < 0x1p-126) {
    r = ldexp(round(ldexp(d, 133)), -133);
  } else {
    int e;
    const double mant = frexp(d, &e);
    r = ldexp(round(ldexp(mant, 8)), e - 8);
  }
  const float f = (float)r; /* exact: r has <= 8 significant bits, or is 2^128 -> inf */
  uint16_t h = (uint16_t)(bits_of(f) >> 16);
  if (r == 0 && signbit(d)) h = 0x8000; /* -0 stays -0 */
  return h;
}

/* Part 1 on pattern b: join(split(b)) == b, and the compute copy is the reference rounding. */
static int check_pattern(uint32_t b) {
  const uint16_t p = zs_rem_param_bits(b), r = zs_rem_rem_bits(b);
  if (zs_rem_join_bits(p, r) != b) {
    fprintf(stderr, "  pattern 0x%08x: split 0x%04x/0x%04x joins to 0x%08x\n", b, p, r,
            zs_rem_join_bits(p, r));
    return 0;
  }
  const float f = f_of(b);
  if (isfinite(f) && p != ref_bf16_ta(f)) {
    fprintf(stderr, "  pattern 0x%08x (%g): compute copy 0x%04x, reference 0x%04x\n", b, f, p,
            ref_bf16_ta(f));
    return 0;
  }
  return 1;
}

/* Part 1: the bijection, exhaustively (or every stride-th pattern plus the edges); the reference
   rounding on a stride (it is slow) and on every edge pattern. */
static void test_bijection(int quick) {
  size_t bad = 0, joined = 0, seen = 0;
  const uint64_t stride = quick ? 9973 : 1;
  /* The join is cheap: every pattern (or the stride), a pair seen once each. */
  for (uint64_t b = 0; b < (1ull << 32); b += stride) {
    const uint32_t x = (uint32_t)b;
    if (zs_rem_join_bits(zs_rem_param_bits(x), zs_rem_rem_bits(x)) != x) bad++;
    joined++;
  }
  ZS_EXPECT(bad == 0, "%zu of %zu patterns do not survive split and join", bad, joined);
  /* Injective both ways: the split of every (param, rem) pair's join is that pair. */
  if (!quick) {
    size_t pairs_bad = 0;
    for (uint64_t k = 0; k < (1ull << 32); k++) {
      const uint16_t p = (uint16_t)(k >> 16), r = (uint16_t)k;
      const uint32_t b = zs_rem_join_bits(p, r);
      pairs_bad += zs_rem_param_bits(b) != p || zs_rem_rem_bits(b) != r;
    }
    ZS_EXPECT(pairs_bad == 0, "%zu (param, rem) pairs do not survive join and split", pairs_bad);
  }
  /* The rounding: a stride over all patterns, then the edge classes of every sign and exponent:
     the tie (low half 0x8000), one either side of it, the smallest and largest low halves. */
  bad = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 65521) {
    bad += !check_pattern((uint32_t)b);
    seen++;
  }
  static const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff};
  for (uint32_t hi = 0; hi < 0x10000; hi++)
    for (size_t k = 0; k < sizeof lows / sizeof lows[0]; k++) {
      bad += !check_pattern(hi << 16 | lows[k]);
      seen++;
    }
  ZS_EXPECT(bad == 0, "%zu of %zu patterns off the reference rounding", bad, seen);
  printf("  bijection: %zu patterns joined (%s), %zu checked against the reference rounding\n",
         joined, quick ? "strided" : "all 2^32", seen);
}

/* Part 2: the number of fp32 patterns that round to nearest even onto 1.0 (0x3f80, even). */
static void test_rne_preimages(void) {
  size_t n = 0;
  for (uint32_t b = 0x3f700000u; b < 0x3f900000u; b++)
    n += zs_f32_to_bf16(f_of(b)) == 0x3f80;
  ZS_EXPECT(n == 65537, "RNE preimages of bf16 1.0: %zu, the header says 65537", n);
}

/* A master value of one of the classes: ties (low half 0x8000), either sign, zeros,
   subnormals, huge, ordinary spread. */
static float rng_master(void) {
  const uint64_t r = rng_next();
  const uint32_t sign = (uint32_t)(r & 1) << 31;
  uint32_t b;
  switch ((r >> 1) % 8) {
  case 0: /* a tie of the compute rounding */
    b = (uint32_t)(((r >> 8) % 0x7f7fu + 1) << 16) | 0x8000u;
    break;
  case 1: /* zero */
    b = 0;
    break;
  case 2: /* subnormal */
    b = (uint32_t)(r >> 20) & 0x007fffffu;
    break;
  case 3: /* huge: exponent 120..126 above the bias */
    b = (uint32_t)(((r >> 8) % 7 + 247) << 23) | ((uint32_t)(r >> 32) & 0x7fffffu);
    break;
  case 4: /* one off a tie */
    b = (uint32_t)(((r >> 8) % 0x7f7fu + 1) << 16) | ((r >> 40) & 1 ? 0x8001u : 0x7fffu);
    break;
  default: /* spread over many decades */
    b = (uint32_t)(((r >> 8) % 60 + 97) << 23) | ((uint32_t)(r >> 32) & 0x7fffffu);
  }
  return f_of(b | sign);
}

/* A gradient as bf16: zeros, tiny, ordinary. */
static uint16_t rng_grad(void) {
  const uint64_t r = rng_next();
  if (r % 7 == 0) return (uint16_t)((r >> 3) & 1 ? 0x8000 : 0);
  const uint32_t e = (uint32_t)((r >> 8) % 40 + 100);
  return (uint16_t)(((uint32_t)(r >> 20) & 1) << 15 | e << 7 | ((uint32_t)(r >> 30) & 0x7f));
}

/* The update of one element written here: adamw.h's documented order on floats with fmaf. */
static void ref_update(const zs_adamw_coef *c, float *p, float *m, float *v, float grad) {
  const float g = grad * c->gscale;
  const float mn = fmaf(c->beta1, *m, c->omb1 * g);
  const float vn = fmaf(c->beta2, *v, (c->omb2 * g) * g);
  const float den = sqrtf(vn * c->bc2) + c->eps;
  const float upd = (mn * c->bc1) / den;
  *p = fmaf(c->neg_lr, fmaf(c->wd, *p, upd), *p);
  *m = mn;
  *v = vn;
}

/* RNE bf16 of the moments, independently: frexp/rint (finite, normal or zero values). */
static uint16_t ref_bf16_rne(float x) {
  if (x == 0) return (uint16_t)(bits_of(x) >> 16);
  int e;
  const double mant = frexp((double)x, &e);
  return (uint16_t)(bits_of((float)ldexp(rint(ldexp(mant, 8)), e - 8)) >> 16);
}

#define NPATHS_REM 3 /* scalar, avx2, avx512 */
enum { K_SCALAR, K_AVX2, K_AVX512, K_PUBLIC, K_MT, K_HOST, NK };

/* One configuration: n elements, moments fp32 or bf16, three steps (t = 1, 2, 1000). */
static void run_config(zs_pool *pool, size_t n, zs_dtype mdt, float wd, const int *have) {
  const size_t ms = zs_dtype_size(mdt);
  float *master = malloc(n * 4), *rm = malloc(n * 4), *rv = malloc(n * 4);
  uint16_t *grad = malloc(n * 2), *param[NK], *rem[NK];
  void *m[NK], *v[NK];
  if (!master || !rm || !rv || !grad) exit(1);
  for (int k = 0; k < NK; k++) {
    param[k] = malloc(n * 2);
    rem[k] = malloc(n * 2);
    m[k] = calloc(n, ms);
    v[k] = calloc(n, ms);
    if (!param[k] || !rem[k] || !m[k] || !v[k]) exit(1);
  }
  for (size_t i = 0; i < n; i++) {
    master[i] = rng_master();
    rm[i] = rv[i] = 0;
    for (int k = 0; k < NK; k++) { /* the split by the reference rounding */
      param[k][i] = ref_bf16_ta(master[i]);
      rem[k][i] = (uint16_t)(bits_of(master[i]) & 0xffffu);
    }
  }
  const long long steps[] = {1, 2, 1000};
  size_t ties = 0;
  for (int st = 0; st < 3; st++) {
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, 1e-3f, 0.9f, 0.95f, 1e-8f, wd, steps[st], 0.5);
    for (size_t i = 0; i < n; i++)
      grad[i] = rng_grad();
    for (int k = 0; k < NPATHS_REM; k++)
      if (have[k])
        zs_cpu_adamw_rem_ex(NULL, (zs_adamw_isa)k, &c, param[k], rem[k], m[k], v[k], mdt, grad, n);
    zs_cpu_adamw_rem(&c, param[K_PUBLIC], rem[K_PUBLIC], m[K_PUBLIC], v[K_PUBLIC], mdt, grad, n);
    zs_cpu_adamw_rem_ex(pool, ZS_ADAMW_ISA_AUTO, &c, param[K_MT], rem[K_MT], m[K_MT], v[K_MT], mdt,
                        grad, n);
    /* The host tier's update (optim/adamw/host_update.h) in chunks as the CUDA copy pipeline cuts
       them (7 elements, then 1000 at a time): the state by lo, grad and params by the chunk. */
    zs_opt_host_fn fn = NULL;
    ZS_OK_OR_DIE(zs_host_update_for(ZS_MASTER_REMAINDER, mdt, &fn));
    const zs_opt_state hs = {NULL, {m[K_HOST], v[K_HOST]}, rem[K_HOST], {0, 0, 0}};
    for (size_t lo = 0; lo < n;) {
      const size_t left = n - lo,
                   len = lo == 0 ? (left < 7 ? left : 7) : (left < 1000 ? left : 1000);
      fn(pool, &c, &hs, lo, len, grad + lo, ZS_BF16, param[K_HOST] + lo, ZS_BF16);
      lo += len;
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      ref_update(&c, &master[i], &rm[i], &rv[i], zs_bf16_to_f32(grad[i]));
      if (mdt == ZS_BF16) { /* stored rounded: the next step widens the stored value */
        rm[i] = zs_bf16_to_f32(ref_bf16_rne(rm[i]));
        rv[i] = zs_bf16_to_f32(ref_bf16_rne(rv[i]));
      }
      const uint16_t wp = ref_bf16_ta(master[i]), wr = (uint16_t)(bits_of(master[i]) & 0xffffu);
      ties += (bits_of(master[i]) & 0xffffu) == 0x8000u;
      float gm, gv;
      if (mdt == ZS_BF16) {
        gm = zs_bf16_to_f32(((uint16_t *)m[K_SCALAR])[i]);
        gv = zs_bf16_to_f32(((uint16_t *)v[K_SCALAR])[i]);
      } else {
        gm = ((float *)m[K_SCALAR])[i];
        gv = ((float *)v[K_SCALAR])[i];
      }
      if (param[K_SCALAR][i] != wp || rem[K_SCALAR][i] != wr || bits_of(gm) != bits_of(rm[i]) ||
          bits_of(gv) != bits_of(rv[i])) {
        if (!bad)
          fprintf(stderr,
                  "  n=%zu t=%lld i=%zu: param/rem 0x%04x/0x%04x want 0x%04x/0x%04x (master %a), "
                  "m %a want %a, v %a want %a\n",
                  n, steps[st], i, param[K_SCALAR][i], rem[K_SCALAR][i], wp, wr, (double)master[i],
                  (double)gm, (double)rm[i], (double)gv, (double)rv[i]);
        bad++;
      }
    }
    ZS_EXPECT(bad == 0, "n=%zu moments %s wd=%g t=%lld: %zu elements off the reference", n,
              mdt == ZS_BF16 ? "bf16" : "f32", (double)wd, steps[st], bad);
    for (int k = 1; k < NK; k++) {
      if (k < NPATHS_REM && !have[k]) continue;
      ZS_EXPECT(memcmp(param[k], param[K_SCALAR], n * 2) == 0 &&
                    memcmp(rem[k], rem[K_SCALAR], n * 2) == 0 &&
                    memcmp(m[k], m[K_SCALAR], n * ms) == 0 &&
                    memcmp(v[k], v[K_SCALAR], n * ms) == 0,
                "n=%zu moments %s t=%lld: path %d differs from scalar", n,
                mdt == ZS_BF16 ? "bf16" : "f32", steps[st], k);
    }
  }
  (void)ties;
  for (int k = 0; k < NK; k++) {
    free(param[k]);
    free(rem[k]);
    free(m[k]);
    free(v[k]);
  }
  free(master);
  free(rm);
  free(rv);
  free(grad);
}

int main(int argc, char **argv) {
  int quick = 0;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
  test_bijection(quick);
  test_rne_preimages();
  int have[NPATHS_REM];
  for (int k = 0; k < NPATHS_REM; k++) {
    have[k] = zs_adamw_isa_supported((zs_adamw_isa)k);
    printf("  path %s: %s\n", zs_adamw_isa_name((zs_adamw_isa)k), have[k] ? "run" : "skipped");
  }
  zs_pool *pool = NULL;
  ZS_OK_OR_DIE(zs_pool_create(3, ZS_POOL_UNBOUND, &pool));
  static const size_t lens[] = {1, 7, 8, 9, 15, 16, 17, 33, 1000, 70001};
  for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
    for (int md = 0; md < 2; md++)
      for (int w = 0; w < 2; w++)
        run_config(pool, lens[l], md ? ZS_BF16 : ZS_F32, w ? 0.1f : 0.0f, have);
  zs_pool_destroy(pool);
  ZS_TEST_END("test_adamw_rem");
}
