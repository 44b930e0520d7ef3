/* CPU AdamW paths: scalar, AVX2 and AVX-512 give identical bits (those this CPU has; the others
 * are reported as skipped), the threaded split gives the same bits as one thread, and every
 * path matches an independent float64 AdamW (textbook, decoupled weight decay) to 1e-6 relative.
 *
 * Each configuration (length, grad dtype, param-out dtype, weight decay, grad scale) runs four
 * steps (t = 1, 2, 3, then 1000 to exercise the late bias corrections) from m = v = 0.
 * The same for bf16 moments (zs_cpu_adamw_m16: every path the scalar bits; a float64 reference of
 * that algorithm). The host tier's per-mode update (optim/adamw/host_update.h) run in chunks as the
 * CUDA copy pipeline cuts them gives the scalar bits in both moment dtypes, and refuses a master
 * mode it does not run with the sentence.
 * Usage: test_adamw_paths [--expect-active scalar|avx2|avx512] [--quick] */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "optim/adamw/cpu/adamw.h"
#include "optim/adamw/adamw_mt.h"
#include "optim/adamw/host_update.h"
#include "offload/worker_pool.h"
#include "zs_test.h"

#define NPATHS 3 /* scalar, avx2, avx512 */
#define TOL 1e-6

static const float LR = 3e-3f, B1 = 0.9f, B2 = 0.999f, EPS = 1e-8f;

/* splitmix64: deterministic inputs. */
static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* A value spread over six decades: sign * [1, 2) * 2^[-14, 6). */
static float rng_spread(void) {
  uint64_t r = rng_next();
  double mag = ldexp(1.0 + (double)(r >> 11) * 0x1.0p-53, (int)(((r >> 1) & 1023) % 20) - 14);
  return (float)(r & 1 ? -mag : mag);
}

/* Independent bf16 rounding (nearest, ties to even) of a normal float, via frexp/rint. */
static uint16_t ref_bf16(float x) {
  int e;
  double mant = frexp((double)x, &e);            /* x = mant * 2^e, 0.5 <= |mant| < 1 */
  double r = ldexp(rint(ldexp(mant, 8)), e - 8); /* 8 significant bits */
  float f = (float)r;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}
static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* One path's state and output. */
typedef struct {
  float *p, *m, *v;
  void *out;
} state;

static void state_init(state *s, size_t n, const float *p0) {
  s->p = malloc(n * sizeof(float));
  s->m = calloc(n, sizeof(float));
  s->v = calloc(n, sizeof(float));
  s->out = malloc(n * sizeof(float));
  if (!s->p || !s->m || !s->v || !s->out) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  memcpy(s->p, p0, n * sizeof(float));
}
static void state_free(state *s) {
  free(s->p);
  free(s->m);
  free(s->v);
  free(s->out);
}

/* Bitwise equality of two states (and outputs of `osz` bytes per element, 0 = none). */
static int state_same(const state *a, const state *b, size_t n, size_t osz) {
  return memcmp(a->p, b->p, n * 4) == 0 && memcmp(a->m, b->m, n * 4) == 0 &&
         memcmp(a->v, b->v, n * 4) == 0 && (!osz || memcmp(a->out, b->out, n * osz) == 0);
}

/* Textbook AdamW step in float64 from the float state before the step (p0, m0, v0), compared
   with the float result. The float code rounds each operation, so "1e-6 relative" is measured
   against the magnitude of the terms that form each result (a sum of terms of opposite sign can
   cancel to ~0 while its rounding error stays proportional to the terms). Returns the number of
   mismatching elements and prints the first. */
static size_t check_f64(const state *after, const float *p0, const float *m0, const float *v0,
                        const float *g, size_t n, long long t, double gscale, float wd,
                        const char *what) {
  double b1 = B1, b2 = B2, lr = LR, eps = EPS;
  double bc1 = 1.0 - pow(b1, (double)t), bc2 = 1.0 - pow(b2, (double)t);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double gd = (double)g[i] * gscale;
    double m = b1 * m0[i] + (1.0 - b1) * gd;
    double v = b2 * v0[i] + (1.0 - b2) * gd * gd;
    double mhat = m / bc1, vhat = v / bc2;
    double den = sqrt(vhat) + eps;
    double p = p0[i] - lr * (mhat / den + (double)wd * p0[i]); /* decoupled decay */
    double mag_m = b1 * fabs(m0[i]) + (1.0 - b1) * fabs(gd);
    double tol_m = TOL * mag_m + DBL_MIN;
    double tol_v = TOL * v + DBL_MIN;
    double tol_p =
        TOL * (fabs(p0[i]) + lr * (fabs((double)wd * p0[i]) + mag_m / bc1 / den)) + DBL_MIN;
    if (fabs(after->m[i] - m) > tol_m || fabs(after->v[i] - v) > tol_v ||
        fabs(after->p[i] - p) > tol_p) {
      if (!bad)
        fprintf(stderr, "  %s i=%zu: p %.9g vs %.9g, m %.9g vs %.9g, v %.9g vs %.9g\n", what, i,
                after->p[i], p, after->m[i], m, after->v[i], v);
      bad++;
    }
  }
  return bad;
}

/* Checks the param output against the master: f32 equal bits, bf16 the independent rounding. */
static size_t check_out(const state *s, size_t n, zs_dtype dt) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (dt == ZS_F32) {
      bad += memcmp(&((float *)s->out)[i], &s->p[i], 4) != 0;
    } else if (fabsf(s->p[i]) >= FLT_MIN) {
      uint16_t got = ((uint16_t *)s->out)[i], want = ref_bf16(s->p[i]);
      if (got != want && !bad)
        fprintf(stderr, "  bf16 out i=%zu: %g -> 0x%04x (%g), want 0x%04x (%g)\n", i, s->p[i], got,
                bf16_value(got), want, bf16_value(want));
      bad += got != want;
    }
  }
  return bad;
}

static int have[NPATHS];
static zs_pool *pool;

/* The host tier's update of mode (master, md) over n elements in chunks as the CUDA copy pipeline
   cuts them (7 elements, then 1000 at a time): the state by lo, grad and out by the chunk. */
static void host_chunks(int master, zs_dtype md, const zs_adamw_coef *c, float *p, void *m, void *v,
                        const void *g, zs_dtype gdt, void *out, zs_dtype odt, size_t n) {
  zs_opt_host_fn fn = NULL;
  ZS_OK_OR_DIE(zs_host_update_for(master, md, &fn));
  const zs_opt_state hs = {p, {m, v}, NULL, {0, 0, 0}};
  const size_t gs = zs_dtype_size(gdt), os = zs_dtype_size(odt);
  for (size_t lo = 0; lo < n;) {
    const size_t left = n - lo, len = lo == 0 ? (left < 7 ? left : 7) : (left < 1000 ? left : 1000);
    fn(pool, c, &hs, lo, len, (const char *)g + lo * gs, gdt, out ? (char *)out + lo * os : NULL,
       odt);
    lo += len;
  }
}

/* One configuration through four steps on every path, the public entry, and the pool. */
static void run_config(size_t n, zs_dtype gdt, int out_kind, float wd, double gscale) {
  zs_dtype odt = out_kind == 2 ? ZS_BF16 : ZS_F32;
  size_t osz = out_kind == 0 ? 0 : out_kind == 1 ? 4 : 2;
  float *p0 = malloc(n * 4), *gf = malloc(n * 4), *pb = malloc(n * 4), *mb = malloc(n * 4),
        *vb = malloc(n * 4);
  uint16_t *gb = malloc(n * 2);
  if (!p0 || !gf || !pb || !mb || !vb || !gb) exit(1);
  for (size_t i = 0; i < n; i++)
    p0[i] = rng_spread();
  enum { S_SCALAR, S_AVX2, S_AVX512, S_PUBLIC, S_MT, S_HOST, NS };
  state s[NS];
  for (int k = 0; k < NS; k++)
    state_init(&s[k], n, p0);
  char what[160];
  const long long steps[4] = {1, 2, 3, 1000};
  for (int st = 0; st < 4; st++) {
    long long t = steps[st];
    for (size_t i = 0; i < n; i++) {
      float x = rng_spread();
      if (gdt == ZS_BF16) { /* the gradient the kernels see is the bf16 value */
        gb[i] = ref_bf16(x);
        gf[i] = bf16_value(gb[i]);
      } else {
        gf[i] = x;
      }
    }
    const void *g = gdt == ZS_BF16 ? (const void *)gb : (const void *)gf;
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, LR, B1, B2, EPS, wd, t, gscale);
    memcpy(pb, s[S_SCALAR].p, n * 4);
    memcpy(mb, s[S_SCALAR].m, n * 4);
    memcpy(vb, s[S_SCALAR].v, n * 4);
    for (int k = 0; k < NPATHS; k++)
      if (have[k])
        zs_cpu_adamw_ex(NULL, (zs_adamw_isa)k, &c, s[k].p, s[k].m, s[k].v, g, gdt,
                        osz ? s[k].out : NULL, odt, n);
    zs_cpu_adamw(&c, s[S_PUBLIC].p, s[S_PUBLIC].m, s[S_PUBLIC].v, g, gdt,
                 osz ? s[S_PUBLIC].out : NULL, odt, n);
    zs_cpu_adamw_mt(pool, &c, s[S_MT].p, s[S_MT].m, s[S_MT].v, g, gdt, osz ? s[S_MT].out : NULL,
                    odt, n);
    host_chunks(ZS_MASTER_FP32, ZS_F32, &c, s[S_HOST].p, s[S_HOST].m, s[S_HOST].v, g, gdt,
                osz ? s[S_HOST].out : NULL, odt, n);
    snprintf(what, sizeof what, "n=%zu grad=%s out=%s wd=%g gscale=%g t=%lld", n,
             gdt == ZS_BF16 ? "bf16" : "f32",
             out_kind == 0 ? "none"
             : osz == 4    ? "f32"
                           : "bf16",
             (double)wd, gscale, t);
    for (int k = 1; k < NS; k++)
      if (k >= NPATHS || have[k])
        ZS_EXPECT(state_same(&s[S_SCALAR], &s[k], n, osz), "%s: path %d differs from scalar", what,
                  k);
    size_t bad = check_f64(&s[S_SCALAR], pb, mb, vb, gf, n, t, gscale, wd, what);
    ZS_EXPECT(bad == 0, "%s: %zu elements off the float64 reference", what, bad);
    if (osz) {
      bad = check_out(&s[S_SCALAR], n, odt);
      ZS_EXPECT(bad == 0, "%s: %zu param outputs wrong", what, bad);
    }
  }
  for (int k = 0; k < NS; k++)
    state_free(&s[k]);
  free(p0);
  free(gf);
  free(gb);
  free(pb);
  free(mb);
  free(vb);
}

/* Whether x (float64) within err rounds to bf16 r for sure: |r - x| + err < half an ulp of r. */
static int inside_half_ulp(uint16_t r, double x, double err) {
  double rv = bf16_value(r);
  if (!(fabs(rv) >= FLT_MIN)) return 0;
  int e;
  frexp(rv, &e); /* |rv| in [2^(e-1), 2^e): 8 significant bits, ulp 2^(e-8) */
  return fabs(rv - x) + err < ldexp(1.0, e - 9);
}

/* bf16 moments: every path (and the public entry, and the pool) gives the scalar path's bits,
   and the scalar path matches a float64 reference of exactly this algorithm: m and v widened
   from bf16, the textbook step in float64 from there, the master update from the unrounded new
   moments, and the stored moments the float64 ones rounded to bf16 (nearest even, ref_bf16). The
   float64 values may differ from the fp32 ones by a few ulps, and a value near a bf16 rounding
   boundary may then round the other way: such a moment is one bf16 ulp off, so the moments are
   compared to 1 bf16 ulp and the master to 1e-6 relative as above. */
static void run_config_m16(size_t n, zs_dtype gdt, int out_kind, float wd, double gscale) {
  zs_dtype odt = out_kind == 2 ? ZS_BF16 : ZS_F32;
  size_t osz = out_kind == 0 ? 0 : out_kind == 1 ? 4 : 2;
  enum { S_SCALAR, S_AVX2, S_AVX512, S_PUBLIC, S_MT, S_HOST, NS };
  float *p[NS];
  uint16_t *m[NS], *v[NS];
  void *out[NS];
  float *gf = malloc(n * 4), *p0 = malloc(n * 4);
  uint16_t *gb = malloc(n * 2), *m0 = malloc(n * 2), *v0 = malloc(n * 2);
  if (!gf || !gb || !p0 || !m0 || !v0) exit(1);
  for (size_t i = 0; i < n; i++)
    p0[i] = rng_spread();
  for (int k = 0; k < NS; k++) {
    p[k] = malloc(n * 4);
    m[k] = calloc(n, 2);
    v[k] = calloc(n, 2);
    out[k] = malloc(n * 4);
    if (!p[k] || !m[k] || !v[k] || !out[k]) exit(1);
    memcpy(p[k], p0, n * 4);
  }
  const long long steps[4] = {1, 2, 3, 1000};
  char what[160];
  for (int st = 0; st < 4; st++) {
    long long t = steps[st];
    for (size_t i = 0; i < n; i++) {
      float x = rng_spread();
      gb[i] = ref_bf16(x);
      gf[i] = gdt == ZS_BF16 ? bf16_value(gb[i]) : x;
    }
    const void *g = gdt == ZS_BF16 ? (const void *)gb : (const void *)gf;
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, LR, B1, B2, EPS, wd, t, gscale);
    memcpy(p0, p[S_SCALAR], n * 4);
    memcpy(m0, m[S_SCALAR], n * 2);
    memcpy(v0, v[S_SCALAR], n * 2);
    for (int k = 0; k < NPATHS; k++)
      if (have[k])
        zs_cpu_adamw_m16_ex(NULL, (zs_adamw_isa)k, &c, p[k], m[k], v[k], g, gdt,
                            osz ? out[k] : NULL, odt, n);
    zs_cpu_adamw_m16(&c, p[S_PUBLIC], m[S_PUBLIC], v[S_PUBLIC], g, gdt, osz ? out[S_PUBLIC] : NULL,
                     odt, n);
    zs_cpu_adamw_m16_ex(pool, ZS_ADAMW_ISA_AUTO, &c, p[S_MT], m[S_MT], v[S_MT], g, gdt,
                        osz ? out[S_MT] : NULL, odt, n);
    host_chunks(ZS_MASTER_PARAMS, ZS_BF16, &c, p[S_HOST], m[S_HOST], v[S_HOST], g, gdt,
                osz ? out[S_HOST] : NULL, odt, n);
    snprintf(what, sizeof what, "bf16 moments n=%zu grad=%s out=%zu wd=%g gscale=%g t=%lld", n,
             gdt == ZS_BF16 ? "bf16" : "f32", osz, (double)wd, gscale, t);
    for (int k = 1; k < NS; k++)
      if (k >= NPATHS || have[k])
        ZS_EXPECT(!memcmp(p[k], p[S_SCALAR], n * 4) && !memcmp(m[k], m[S_SCALAR], n * 2) &&
                      !memcmp(v[k], v[S_SCALAR], n * 2) &&
                      (!osz || !memcmp(out[k], out[S_SCALAR], n * osz)),
                  "%s: path %d differs from scalar", what, k);
    /* The float64 reference of this algorithm. */
    double b1 = B1, b2 = B2, lr = LR, eps = EPS;
    double bc1 = 1.0 - pow(b1, (double)t), bc2 = 1.0 - pow(b2, (double)t);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      double gd = (double)gf[i] * gscale, mo = bf16_value(m0[i]), vo = bf16_value(v0[i]);
      double mm = b1 * mo + (1.0 - b1) * gd, vv = b2 * vo + (1.0 - b2) * gd * gd;
      double den = sqrt(vv / bc2) + eps;
      double pp = p0[i] - lr * ((mm / bc1) / den + (double)wd * p0[i]);
      double mag_m = b1 * fabs(mo) + (1.0 - b1) * fabs(gd);
      double tol_p =
          TOL * (fabs(p0[i]) + lr * (fabs((double)wd * p0[i]) + mag_m / bc1 / den)) + DBL_MIN;
      /* 1 bf16 ulp of the magnitude (2^-7 relative), plus the fp32 rounding of a cancelling m. */
      double tol_m = fabs(mm) * 0x1p-7 + TOL * mag_m + DBL_MIN, tol_v = vv * 0x1p-7 + DBL_MIN;
      uint16_t want_m = ref_bf16((float)mm), want_v = ref_bf16((float)vv);
      double got_m = bf16_value(m[S_SCALAR][i]), got_v = bf16_value(v[S_SCALAR][i]);
      int ok = fabs(p[S_SCALAR][i] - pp) <= tol_p && fabs(got_m - mm) <= tol_m &&
               fabs(got_v - vv) <= tol_v;
      /* Away from rounding boundaries (the float64 value plus the fp32 error bound stays inside
         half a bf16 ulp of its rounding) the bits are exactly the rounded float64 moments. */
      if (inside_half_ulp(want_m, mm, TOL * mag_m)) ok = ok && m[S_SCALAR][i] == want_m;
      if (inside_half_ulp(want_v, vv, TOL * vv)) ok = ok && v[S_SCALAR][i] == want_v;
      if (!ok && !bad)
        fprintf(stderr, "  %s i=%zu: p %.9g vs %.9g, m %.9g vs %.9g, v %.9g vs %.9g\n", what, i,
                p[S_SCALAR][i], pp, got_m, mm, got_v, vv);
      bad += !ok;
    }
    ZS_EXPECT(bad == 0, "%s: %zu elements off the float64 reference", what, bad);
  }
  for (int k = 0; k < NS; k++) {
    free(p[k]);
    free(m[k]);
    free(v[k]);
    free(out[k]);
  }
  free(gf);
  free(gb);
  free(p0);
  free(m0);
  free(v0);
}

int main(int argc, char **argv) {
  const char *expect = NULL;
  int quick = 0, expect_threads = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--expect-active") && i + 1 < argc)
      expect = argv[++i];
    else if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--expect-threads") && i + 1 < argc)
      expect_threads = atoi(argv[++i]);
  }
  for (int k = 0; k < NPATHS; k++) {
    have[k] = zs_adamw_isa_supported((zs_adamw_isa)k);
    printf("adamw path %-6s: %s\n", zs_adamw_isa_name((zs_adamw_isa)k),
           have[k] ? "tested" : "SKIPPED (this CPU lacks it)");
  }
  printf("active path: %s\n", zs_adamw_isa_name(zs_adamw_isa_active()));
  if (expect) {
    int want = -1;
    for (int k = 0; k < NPATHS; k++)
      if (!strcmp(zs_adamw_isa_name((zs_adamw_isa)k), expect)) want = k;
    if (want >= 0 && !have[want])
      printf("--expect-active %s: SKIPPED (this CPU lacks it)\n", expect);
    else
      ZS_EXPECT(want == (int)zs_adamw_isa_active(), "ZS_ADAMW_ISA: active path %s, expected %s",
                zs_adamw_isa_name(zs_adamw_isa_active()), expect);
  }
  /* ZS_ADAMW_THREADS as an engine's optimizer reads it (src/optim/optim.c) sizes the pool. */
  const int env_threads = zs_cpu_adamw_env_threads();
  if (expect_threads)
    ZS_EXPECT(env_threads == expect_threads, "ZS_ADAMW_THREADS: %d workers, expected %d",
              env_threads, expect_threads);
  /* 3 without it: an uneven split on any machine. */
  ZS_OK_OR_DIE(zs_pool_create(env_threads > 1 ? env_threads : 3, ZS_POOL_UNBOUND, &pool));

  const size_t lens[] = {1, 7, 15, 16, 17, 31, 33, 1000, 65537, 1000003};
  size_t nlens = sizeof lens / sizeof lens[0];
  if (quick) nlens -= 1;
  for (size_t li = 0; li < nlens; li++)
    for (int gb = 0; gb < 2; gb++)
      for (int ok = 0; ok < 3; ok++)
        for (int wdi = 0; wdi < 2; wdi++)
          run_config(lens[li], gb ? ZS_BF16 : ZS_F32, ok, wdi ? 0.1f : 0.0f,
                     (li + (size_t)ok) % 2 ? 0.37 : 1.0);
  for (size_t li = 0; li < nlens; li++)
    for (int gb = 0; gb < 2; gb++)
      for (int ok = 0; ok < 3; ok++)
        run_config_m16(lens[li], gb ? ZS_BF16 : ZS_F32, ok, li % 2 ? 0.1f : 0.0f,
                       (li + (size_t)ok) % 2 ? 0.37 : 1.0);

  /* The host tier runs the four master modes (the remainder and lean ones: test_adamw_rem and
     test_adamw_lean), fp32 or bf16 moments, nothing else. */
  for (int mode = 4; mode <= 5; mode++) {
    zs_opt_host_fn fn = NULL;
    ZS_EXPECT(zs_host_update_for(mode, ZS_F32, &fn) == ZS_ERR_INVALID_ARG && fn == NULL &&
                  strstr(zs_last_error(), "use ZS_MASTER_FP32, ZS_MASTER_PARAMS"),
              "master mode %d on the host tier: %s", mode, zs_last_error());
  }
  {
    zs_opt_host_fn fn = NULL;
    ZS_EXPECT(zs_host_update_for(ZS_MASTER_FP32, (zs_dtype)7, &fn) == ZS_ERR_INVALID_ARG,
              "moment dtype 7 on the host tier");
  }
  /* A tiny adamw.h-order case by hand: after one step from m = v = 0 the update is
     lr * sign(g) * |g| / (|g| + eps') for every path. */
  {
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, 0.5f, B1, B2, EPS, 0.0f, 1, 1.0);
    float p = 1.0f, m = 0.0f, v = 0.0f, g = 2.0f;
    zs_cpu_adamw(&c, &p, &m, &v, &g, ZS_F32, NULL, ZS_F32, 1);
    ZS_EXPECT(fabsf(p - 0.5f) < 1e-6f, "one step from zero state: p = %.9g, want ~0.5", p);
  }
  zs_pool_destroy(pool);
  if (!zs_test_failures) printf("test_adamw_paths: all paths agree bit for bit\n");
  ZS_TEST_END("test_adamw_paths");
}
