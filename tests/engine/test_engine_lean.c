/* Lean mode (zs_config.master = ZS_MASTER_LEAN) through the engine, on the CPU device:
 *
 *  1. A float64 reference of exactly the lean algorithm (AdamW in double, then the stochastic
 *     rounding of zshard.h applied to the exact value with the bits zshard.h defines, written
 *     here) over 5 steps of two units whose gradients the test fixes: the engine computes p in
 *     float32, which moves p' by a few fp32 ulps (2^-16 of a bf16 spacing each) before rounding, so
 *     it rounds the other way only where the exact value lies within that distance of the
 *     rounding threshold: a few in 10^4 roundings. Required: at least 99% of the params bit for
 *     bit, the others exactly one bf16 ulp apart.
 *  2. Convergence against fp32-master training (the same bf16 params): least squares with a
 *     realizable target y = X w*, 600 steps with lr decaying from 5e-2 to 1e-4. Both modes end near
 * the best that bf16 params allow: params off w* by about a bf16 spacing each, plus Adam's step,
 * give an excess loss of at most B = trace(H)/2 * sum_i (2 ulp(w*_i) + lr_end)^2 (H = X^T X / n,
 *     trace(H) >= its largest eigenvalue). Required: both losses below B, |L_lean - L_fp32| <= B,
 *     and both at least 100x below the initial loss.
 *  3. Checkpoints both ways: a lean checkpoint loads into fp32-master mode exactly (the master is
 *     the lean params widened, m and v the same bits), and an fp32-master checkpoint loads into
 *     lean mode with the params rounded to nearest even (m and v the same bits), on the stage
 *     given for saving and another for loading (any world size).
 * Usage: test_engine_lean --dir DIR [--stage S] [--load-stage S] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "zs_test.h"

#define N0 1000 /* unit "a" */
#define N1 3001 /* unit "b": odd, so shards are uneven */
#define STEPS 5
static const float LR = 1e-2f, WD = 0.1f;
static const zs_tensor_desc ta[1] = {{"w", 1, {N0, 0, 0, 0}, 0}};
static const zs_tensor_desc tb[2] = {{"w", 1, {N1 - 7, 0, 0, 0}, 0}, {"b", 1, {7, 0, 0, 0}, 1}};

/* ---- bf16 and the lean rounding, from zshard.h's text ---- */
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bf(float x) { /* round to nearest even (finite x) */
  uint32_t u = f2u(x), lo = u & 0xffffu, hi = u >> 16;
  if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) hi++;
  return u2f(hi << 16);
}
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t fmix32(uint32_t x) {
  x = (x ^ (x >> 16)) * 0x85ebca6bu;
  x = (x ^ (x >> 13)) * 0xc2b2ae35u;
  return x ^ (x >> 16);
}
static uint32_t bits_of(int64_t t, int unit, uint64_t off) { /* rounding_seed 0 */
  const uint64_t K = mix64(mix64(mix64(0x9e3779b97f4a7c15ull) + (uint64_t)t) + (uint64_t)unit);
  const uint64_t q = off / 2; /* elements 2q, 2q + 1 share one hash (low, high half) */
  const uint32_t h =
      fmix32((uint32_t)q ^ (uint32_t)K ^ fmix32((uint32_t)(q >> 32) ^ (uint32_t)(K >> 32)));
  return off % 2 == 0 ? (h & 0xffffu) : (h >> 16);
}
/* The exact value x rounded stochastically with r: from the bf16 magnitude below |x| (lo) to the
   one above (hi) when (|x| - lo) / (hi - lo) * 2^16 + r reaches 2^16. */
static double sr_exact(double x, uint32_t r) {
  const double a = fabs(x);
  float lo = u2f(f2u((float)a) & 0xffff0000u);
  if ((double)lo > a) lo = u2f(f2u(lo) - 0x10000u); /* (float) rounded up past a bf16 value */
  const float hi = u2f(f2u(lo) + 0x10000u);
  const double q = (a - lo) / ((double)hi - lo);
  const double y = q * 65536.0 + r >= 65536.0 ? hi : lo;
  return x < 0 ? -y : y;
}

/* ---- the engine ---- */
static float init_of(int u, size_t i) {
  return (float)((double)(mix64(((uint64_t)u << 40) + i) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}
static float grad_of(int u, size_t i, int s) { /* bf16 values, independent of p */
  const double x = (double)(mix64(((uint64_t)u << 40) + i + ((uint64_t)s << 20) + 99) >> 11);
  return bf((float)((x * 0x1.0p-53 - 0.5) * ldexp(1.0, (int)(i % 7) - 6)));
}

static zs_engine *make(zs_comm *comm, int stage, int master, float lr, float wd, zs_unit **u,
                       const zs_tensor_desc *const *t, const int *nt, int nunits) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.param_dtype = ZS_BF16;
  cfg.reduce_dtype = ZS_F32;
  cfg.deterministic = 1;
  cfg.master = master;
  cfg.adamw.lr = lr;
  cfg.adamw.weight_decay = wd;
  cfg.comm_timeout_s = 60;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int k = 0; k < nunits; k++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", k);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, nt[k], t[k], &u[k]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

static int g_rank, g_world; /* this rank and the world size */

/* One step with the test's gradients: rank 0 adds them, the others nothing, so the reduced sum is
   exactly them and the engine's mean is their fp32 product with (float)(1 / world). */
static void step_fixed(zs_engine *e, zs_unit **u, int s) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int k = 0; k < 2; k++) {
    ZS_OK_OR_DIE(zs_unit_gather(u[k]));
    for (int t = 0; t < (k ? 2 : 1); t++) {
      uint16_t *g = zs_unit_grad(u[k], t);
      const size_t base = k == 1 && t == 1 ? N1 - 7 : 0, n = (size_t)zs_unit_numel(u[k], t);
      for (size_t i = 0; g && g_rank == 0 && i < n; i++)
        g[i] = (uint16_t)(f2u(grad_of(k, base + i, s)) >> 16);
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[k]));
    ZS_OK_OR_DIE(zs_unit_release(u[k]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
}

static void get_unit(zs_unit *u, int nt, float *out) {
  size_t off = 0;
  for (int t = 0; t < nt; t++) {
    ZS_OK_OR_DIE(zs_unit_get_param(u, t, out + off));
    off += (size_t)zs_unit_numel(u, t);
  }
}
static void set_unit(zs_unit *u, int nt, const float *in) {
  size_t off = 0;
  for (int t = 0; t < nt; t++) {
    ZS_OK_OR_DIE(zs_unit_set_param(u, t, in + off));
    off += (size_t)zs_unit_numel(u, t);
  }
}

/* The float64 lean reference of unit k (n elements, initial values h) after STEPS steps. */
static void reference(int k, int n, const float *h, double *p) {
  double *m = calloc((size_t)n, 8), *v = calloc((size_t)n, 8);
  for (int i = 0; i < n; i++)
    p[i] = bf(h[i]); /* set_param rounds to nearest even: the lean master */
  for (int s = 1; s <= STEPS; s++)
    for (int i = 0; i < n; i++) {
      const double g = grad_of(k, (size_t)i, s) / g_world, wd = k == 1 && i >= N1 - 7 ? 0.0 : WD;
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.999 * v[i] + 0.001 * g * g;
      const double mh = m[i] / (1 - pow(0.9, s)), vh = v[i] / (1 - pow(0.999, s));
      const double np = p[i] - LR * (mh / (sqrt(vh) + 1e-8) + wd * p[i]);
      p[i] = sr_exact(np, bits_of(s, k, (uint64_t)i));
    }
  free(m);
  free(v);
}

/* Part 1: the engine against the float64 lean reference. */
static void check_reference(zs_comm *comm, int stage, int rank) {
  const zs_tensor_desc *t[2] = {ta, tb};
  const int nt[2] = {1, 2}, n[2] = {N0, N1};
  zs_unit *u[2];
  zs_engine *e = make(comm, stage, ZS_MASTER_LEAN, LR, WD, u, t, nt, 2);
  ZS_EXPECT(zs_engine_config(e)->master == ZS_MASTER_LEAN &&
                zs_engine_config(e)->rounding_seed == 0,
            "the engine does not run lean mode with rounding_seed 0: %s", zs_engine_info(e));
  float *h[2];
  for (int k = 0; k < 2; k++) {
    h[k] = malloc((size_t)n[k] * 4);
    for (int i = 0; i < n[k]; i++)
      h[k][i] = init_of(k, (size_t)i);
    set_unit(u[k], nt[k], h[k]);
  }
  for (int s = 1; s <= STEPS; s++)
    step_fixed(e, u, s);
  long same = 0, ulp1 = 0, worse = 0, total = 0;
  for (int k = 0; k < 2; k++) {
    double *p = malloc((size_t)n[k] * 8);
    float *got = malloc((size_t)n[k] * 4);
    reference(k, n[k], h[k], p);
    get_unit(u[k], nt[k], got);
    for (int i = 0; i < n[k]; i++) {
      const uint32_t want = f2u((float)p[i]), have = f2u(got[i]);
      total++;
      if (have == want)
        same++;
      else if (have == want + 0x10000u || have + 0x10000u == want)
        ulp1++;
      else if (worse++ < 5)
        fprintf(stderr, "unit %d element %d: engine %.9g, reference %.9g\n", k, i, (double)got[i],
                p[i]);
    }
    free(p);
    free(got);
    free(h[k]);
  }
  if (rank == 0)
    printf("lean vs float64 reference (stage %d): %ld of %ld bitwise, %ld one ulp apart\n", stage,
           same, total, ulp1);
  ZS_EXPECT(worse == 0 && same >= total * 99 / 100,
            "%ld of %ld differ by more than one bf16 ulp, %ld by one", worse, total, ulp1);
  zs_engine_destroy(e);
}

/* ---- Part 2: convergence against fp32-master training ---- */
#define D 64
#define NS 256
#define LSTEPS 600
static const zs_tensor_desc tw[1] = {{"w", 1, {D, 0, 0, 0}, 0}};

typedef struct {
  double x[NS][D], y[NS], wstar[D];
} lsq;

static void lsq_make(lsq *q) {
  for (int j = 0; j < D; j++)
    q->wstar[j] = (double)(mix64(5000 + (uint64_t)j) >> 11) * 0x1.0p-53 * 4.0 - 2.0;
  for (int i = 0; i < NS; i++) {
    q->y[i] = 0;
    for (int j = 0; j < D; j++) {
      q->x[i][j] = (double)(mix64(((uint64_t)i << 20) + (uint64_t)j) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
      q->y[i] += q->x[i][j] * q->wstar[j];
    }
  }
}
/* Loss 1/(2n) |Xw - y|^2 at w and its gradient (g may be NULL). */
static double lsq_loss(const lsq *q, const double *w, double *g) {
  double L = 0;
  if (g) memset(g, 0, D * sizeof *g);
  for (int i = 0; i < NS; i++) {
    double r = -q->y[i];
    for (int j = 0; j < D; j++)
      r += q->x[i][j] * w[j];
    L += r * r;
    for (int j = 0; g && j < D; j++)
      g[j] += q->x[i][j] * r / NS;
  }
  return L / (2 * NS);
}

/* Trains the least-squares model in one mode; returns the loss at the final bf16 params. */
static double lsq_train(zs_comm *comm, int stage, int master, const lsq *q, double *loss0) {
  const zs_tensor_desc *t[1] = {tw};
  const int nt[1] = {1};
  zs_unit *u;
  zs_engine *e = make(comm, stage, master, 1e-2f, 0.0f, &u, t, nt, 1);
  float w0[D];
  for (int j = 0; j < D; j++)
    w0[j] = 0.0f;
  ZS_OK_OR_DIE(zs_unit_set_param(u, 0, w0));
  double w[D], g[D];
  for (int s = 0; s <= LSTEPS; s++) {
    ZS_OK_OR_DIE(zs_unit_gather(u));
    const uint16_t *pw = zs_unit_param(u, 0);
    for (int j = 0; j < D; j++)
      w[j] = u2f((uint32_t)pw[j] << 16);
    const double L = lsq_loss(q, w, g);
    if (s == 0) *loss0 = L;
    if (s == LSTEPS) {
      ZS_OK_OR_DIE(zs_unit_release(u));
      zs_engine_destroy(e);
      return L;
    }
    ZS_OK_OR_DIE(zs_unit_release(u));
    for (int j = 0; j < D; j++)
      g[j] *= g_world; /* rank 0 adds the whole gradient: the engine's mean divides by world */
    ZS_OK_OR_DIE(zs_engine_set_lr(e, (float)(5e-2 * pow(2e-3, (double)s / LSTEPS))));
    ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
    ZS_OK_OR_DIE(zs_unit_gather(u));
    uint16_t *gg = zs_unit_grad(u, 0);
    for (int j = 0; gg && g_rank == 0 && j < D; j++)
      gg[j] = (uint16_t)(f2u(bf((float)g[j])) >> 16);
    ZS_OK_OR_DIE(zs_unit_grads_ready(u));
    ZS_OK_OR_DIE(zs_unit_release(u));
    ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  }
  return 0;
}

static void check_convergence(zs_comm *comm, int stage, int rank) {
  lsq *q = malloc(sizeof *q);
  lsq_make(q);
  double L0a, L0b;
  const double Lf = lsq_train(comm, stage, ZS_MASTER_FP32, q, &L0a);
  const double Ll = lsq_train(comm, stage, ZS_MASTER_LEAN, q, &L0b);
  /* The bound: trace(H) / 2 * sum_i (2 ulp(w*_i) + lr_end)^2. */
  double tr = 0, dev = 0;
  for (int i = 0; i < NS; i++)
    for (int j = 0; j < D; j++)
      tr += q->x[i][j] * q->x[i][j] / NS;
  for (int j = 0; j < D; j++) {
    const float lo = u2f(f2u((float)fabs(q->wstar[j])) & 0xffff0000u);
    const double ulp = (double)u2f(f2u(lo) + 0x10000u) - lo, d = 2 * ulp + 1e-4;
    dev += d * d;
  }
  const double B = tr / 2 * dev;
  if (rank == 0)
    printf("least squares, %d steps (stage %d): loss %.3g -> fp32 master %.3g, lean %.3g; "
           "bound %.3g\n",
           LSTEPS, stage, L0a, Lf, Ll, B);
  ZS_EXPECT(Lf <= B && Ll <= B && fabs(Ll - Lf) <= B, "losses fp32 %.3g lean %.3g, bound %.3g", Lf,
            Ll, B);
  ZS_EXPECT(Lf * 100 <= L0a && Ll * 100 <= L0b, "no convergence: %.3g -> %.3g / %.3g", L0a, Lf, Ll);
  free(q);
}

/* ---- Part 3: checkpoints across the modes ---- */

/* Rank-local check that the moments of engines a and b agree bit for bit on the flat elements
   both hold (every element is checked on some rank when either side is unsharded). */
static void same_moments(zs_unit *a, zs_unit *b, const char *what) {
  const size_t lo = a->opt_off > b->opt_off ? a->opt_off : b->opt_off;
  size_t hi =
      a->opt_off + a->opt_n < b->opt_off + b->opt_n ? a->opt_off + a->opt_n : b->opt_off + b->opt_n;
  if (hi > a->lay.numel_total) hi = a->lay.numel_total;
  long bad = 0;
  for (size_t i = lo; i < hi; i++) {
    const float *ma = a->opt[0], *mb = b->opt[0], *va = a->opt[1], *vb = b->opt[1];
    bad += f2u(ma[i - a->opt_off]) != f2u(mb[i - b->opt_off]) ||
           f2u(va[i - a->opt_off]) != f2u(vb[i - b->opt_off]);
  }
  ZS_EXPECT(bad == 0, "%s: unit %s: %ld of %zu moments differ", what, a->name, bad,
            hi > lo ? hi - lo : 0);
}

static void check_ckpt(zs_comm *comm, int stage, int lstage, const char *dir) {
  const zs_tensor_desc *t[2] = {ta, tb};
  const int nt[2] = {1, 2}, n[2] = {N0, N1};
  char path[4200];
  float *got[2], *want[2];
  for (int k = 0; k < 2; k++) {
    got[k] = malloc((size_t)n[k] * 4);
    want[k] = malloc((size_t)n[k] * 4);
  }
  for (int from_lean = 0; from_lean < 2; from_lean++) {
    zs_unit *us[2], *ul[2];
    zs_engine *es =
        make(comm, stage, from_lean ? ZS_MASTER_LEAN : ZS_MASTER_FP32, LR, WD, us, t, nt, 2);
    for (int k = 0; k < 2; k++) {
      for (int i = 0; i < n[k]; i++)
        want[k][i] = init_of(k + 5, (size_t)i);
      set_unit(us[k], nt[k], want[k]);
    }
    for (int s = 1; s <= 3; s++)
      step_fixed(es, us, s);
    snprintf(path, sizeof path, "%s/%s", dir, from_lean ? "lean" : "fp32");
    ZS_OK_OR_DIE(zs_test_save(es, path));
    zs_engine *el =
        make(comm, lstage, from_lean ? ZS_MASTER_FP32 : ZS_MASTER_LEAN, LR, WD, ul, t, nt, 2);
    ZS_OK_OR_DIE(zs_engine_load(el, path));
    for (int k = 0; k < 2; k++) {
      get_unit(us[k], nt[k], want[k]);
      get_unit(ul[k], nt[k], got[k]);
      long bad = 0;
      for (int i = 0; i < n[k]; i++) /* lean -> fp32: exact; fp32 -> lean: nearest even */
        bad += f2u(got[k][i]) != f2u(from_lean ? want[k][i] : bf(want[k][i]));
      ZS_EXPECT(bad == 0, "%s checkpoint loaded into %s: unit %d: %ld of %d params differ",
                from_lean ? "lean" : "fp32-master", from_lean ? "fp32-master" : "lean", k, bad,
                n[k]);
      same_moments(us[k], ul[k], from_lean ? "lean -> fp32 master" : "fp32 master -> lean");
    }
    if (from_lean) {
      /* A lean run resumed from its checkpoint continues the same rounding stream: two more steps
         give the uninterrupted run's bits. */
      zs_unit *ur[2];
      zs_engine *er = make(comm, lstage, ZS_MASTER_LEAN, LR, WD, ur, t, nt, 2);
      ZS_OK_OR_DIE(zs_engine_load(er, path));
      for (int s = 4; s <= 5; s++) {
        step_fixed(es, us, s);
        step_fixed(er, ur, s);
      }
      for (int k = 0; k < 2; k++) {
        get_unit(us[k], nt[k], want[k]);
        get_unit(ur[k], nt[k], got[k]);
        ZS_EXPECT(!memcmp(got[k], want[k], (size_t)n[k] * 4),
                  "lean resumed on stage %d differs from the uninterrupted run (unit %d)", lstage,
                  k);
      }
      zs_engine_destroy(er);
    }
    zs_engine_destroy(el);
    zs_engine_destroy(es);
  }
  for (int k = 0; k < 2; k++) {
    free(got[k]);
    free(want[k]);
  }
}

int main(int argc, char **argv) {
  int stage = 3, lstage = 1;
  const char *dir = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--stage")) stage = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--load-stage")) lstage = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
  }
  if (!dir) {
    fprintf(stderr, "usage: test_engine_lean --dir DIR [--stage S] [--load-stage S]\n");
    return 2;
  }
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm);
  g_rank = rank;
  g_world = zs_comm_size(comm);
  check_reference(comm, stage, rank);
  check_convergence(comm, stage, rank);
  check_ckpt(comm, stage, lstage, dir);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_lean");
}
