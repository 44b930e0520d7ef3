/* The optimizer (src/optim/optim.h), alone and owned by engines.
 *
 * Alone, on the CPU device: the norm of gradients added in pieces equals the float64 norm, the
 * clipping coefficient follows zshard.h's rule, and zs_optim_update writes zs_cpu_adamw's bits.
 * Owned: each engine owns its optimizer's CPU workers: two engines in one process, created with
 * different ZS_ADAMW_THREADS, each get their own pool of that size; both train to the same bits,
 * within fp32 rounding of a float64 AdamW reference; and destroying one leaves the other's
 * workers running (its later steps still match the reference). The unit is large enough
 * (> 65536 elements) that the update is split over the workers. CPU device, one rank. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "optim/adamw/adamw.h"
#include "optim/adamw/cpu/adamw.h"
#include "optim/optim.h"
#include "zs_test.h"

#define N 200003 /* odd: the workers' tiles do not divide it */
#define STEPS_BOTH 3
#define STEPS_AFTER 2

static const zs_tensor_desc one[1] = {{"w", 1, {N, 0, 0, 0}, 0}};

/* Deterministic gradients of step s (varied sign and size). */
static float grad_of(size_t i, int s) {
  uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(s * 40503u + 17u);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return ((float)(x % 20001u) - 10000.0f) * 1e-4f;
}

static zs_engine *make_engine(zs_comm *comm, const char *threads, zs_unit **u, const float *p0) {
  setenv("ZS_ADAMW_THREADS", threads, 1); /* read once, at create */
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 0;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "u", 1, one, u));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(zs_unit_set_param(*u, 0, p0));
  return e;
}

static void step(zs_engine *e, zs_unit *u, int s) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_OK_OR_DIE(zs_unit_gather(u));
  float *g = zs_unit_grad(u, 0);
  ZS_EXPECT(g != NULL, "zs_unit_grad");
  for (size_t i = 0; g && i < N; i++)
    g[i] = grad_of(i, s);
  ZS_OK_OR_DIE(zs_unit_grads_ready(u));
  ZS_OK_OR_DIE(zs_unit_release(u));
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
}

/* AdamW in float64 with zs_config_default's hyper-parameters (decoupled weight decay). */
static void ref_step(double *p, double *m, double *v, int s) {
  zs_config c;
  zs_config_default(&c);
  const double b1 = c.adamw.beta1, b2 = c.adamw.beta2, lr = c.adamw.lr;
  const double eps = c.adamw.eps, wd = c.adamw.weight_decay;
  const double bc1 = 1.0 / (1.0 - pow(b1, s + 1)), bc2 = 1.0 / (1.0 - pow(b2, s + 1));
  for (size_t i = 0; i < N; i++) {
    const double g = grad_of(i, s);
    m[i] = b1 * m[i] + (1 - b1) * g;
    v[i] = b2 * v[i] + (1 - b2) * g * g;
    p[i] -= lr * (wd * p[i] + (m[i] * bc1) / (sqrt(v[i] * bc2) + eps));
  }
}

static size_t off_reference(const float *got, const double *ref, const char *what) {
  size_t bad = 0;
  for (size_t i = 0; i < N; i++)
    if (fabs((double)got[i] - ref[i]) > 2e-6 * (1.0 + fabs(ref[i]))) {
      if (!bad)
        fprintf(stderr, "%s: element %zu is %.9g, float64 reference %.9g\n", what, i,
                (double)got[i], ref[i]);
      bad++;
    }
  return bad;
}

/* The optimizer's API without an engine: norm in pieces, clip coefficient, one update. */
static void optim_alone(void) {
  zs_dev d;
  ZS_OK_OR_DIE(zs_dev_open(&d, ZS_DEVICE_CPU, -1));
  const zs_optim_cfg oc = {&d,
                           ZS_F32,
                           ZS_F32,
                           NULL,
                           0,
                           0,
                           0,
                           1,
                           0,
                           {NULL, NULL, NULL},
                           {ZS_MASTER_FP32, ZS_F32},
                           zs_opt_adamw.module};
  zs_optim *o = NULL;
  ZS_OK_OR_DIE(zs_optim_create(&oc, &o));
  enum { M = 1000 };
  float g[M];
  double sum = 0;
  for (int i = 0; i < M; i++) {
    g[i] = grad_of((size_t)i, 7);
    sum += (double)g[i] * g[i];
  }
  uint64_t bins[ZS_SQ_NWORDS];
  ZS_OK_OR_DIE(zs_optim_norm_start(o, bins));
  ZS_OK_OR_DIE(zs_optim_norm_add(o, bins, g, 300)); /* pieces: the sum does not depend on them */
  ZS_OK_OR_DIE(zs_optim_norm_add(o, bins, g + 300, M - 300));
  zs_optim_norm nm;
  ZS_OK_OR_DIE(zs_optim_norm_finish(o, bins, NULL, NULL, 0.25, &nm));
  ZS_EXPECT(nm.nonfinite == 0 && fabs(nm.norm - sqrt(sum) * 0.25) <= 1e-12 * nm.norm,
            "norm %.17g, float64 %.17g, non-finite %llu", nm.norm, sqrt(sum) * 0.25,
            (unsigned long long)nm.nonfinite);
  g[5] = NAN;
  ZS_OK_OR_DIE(zs_optim_norm_start(o, bins));
  ZS_OK_OR_DIE(zs_optim_norm_add(o, bins, g, M));
  ZS_OK_OR_DIE(zs_optim_norm_finish(o, bins, NULL, NULL, 1.0, &nm));
  ZS_EXPECT(nm.nonfinite == 1, "a NaN gradient counts %llu non-finite values",
            (unsigned long long)nm.nonfinite);
  ZS_EXPECT(zs_optim_clip_coef(3.0, 0.0) == 1.0 && zs_optim_clip_coef(0.5, 1.0) == 1.0 &&
                zs_optim_clip_coef(4.0, 1.0) == 1.0 / (4.0 + 1e-6),
            "clip coefficient off the rule");
  /* One update equals zs_cpu_adamw's bits (decay and no-decay coefficients). */
  zs_config cfg;
  zs_config_default(&cfg);
  for (int nwd = 0; nwd < 2; nwd++) {
    float p[M], m[M], v[M], p2[M], m2[M], v2[M];
    for (int i = 0; i < M; i++) {
      p[i] = p2[i] = grad_of((size_t)i, 8);
      m[i] = m2[i] = 0.1f * grad_of((size_t)i, 9);
      v[i] = v2[i] = fabsf(grad_of((size_t)i, 10));
      g[i] = grad_of((size_t)i, 11);
    }
    ZS_OK_OR_DIE(zs_optim_prepare(o, &cfg, 1, 3, 0.5));
    const zs_optim_seg seg = {p, {m, v}, g, p, M, nwd, 0, 0, 0, 0, 0, NULL, NULL};
    ZS_OK_OR_DIE(zs_optim_update(o, &seg));
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, cfg.adamw.lr, cfg.adamw.beta1, cfg.adamw.beta2, cfg.adamw.eps,
                       nwd ? 0.0f : cfg.adamw.weight_decay, 3, 0.5);
    zs_cpu_adamw(&c, p2, m2, v2, g, ZS_F32, p2, ZS_F32, M);
    ZS_EXPECT(!memcmp(p, p2, sizeof p) && !memcmp(m, m2, sizeof m) && !memcmp(v, v2, sizeof v),
              "zs_optim_update (no_weight_decay %d) differs from zs_cpu_adamw", nwd);
  }
  zs_optim_destroy(o);
  zs_dev_close(&d);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  float *p0 = malloc(N * sizeof *p0), *pa = malloc(N * sizeof *pa), *pb = malloc(N * sizeof *pb);
  double *rp = malloc(N * sizeof *rp), *rm = calloc(N, sizeof *rm), *rv = calloc(N, sizeof *rv);
  if (!p0 || !pa || !pb || !rp || !rm || !rv) return 1;
  for (size_t i = 0; i < N; i++)
    rp[i] = p0[i] = grad_of(i, 1000) * 10.0f;

  optim_alone();
  zs_unit *ua = NULL, *ub = NULL;
  zs_engine *a = make_engine(comm, "2", &ua, p0);
  zs_engine *b = make_engine(comm, "3", &ub, p0);
  unsetenv("ZS_ADAMW_THREADS");
  int oa = -1, ca = -1, ob = -1, cb = -1;
  zs_optim_workers(a->optim, &oa, &ca);
  zs_optim_workers(b->optim, &ob, &cb);
  ZS_EXPECT(ca == 2 && cb == 3 && oa == 0 && ob == 0,
            "CPU workers: engine a %d (want 2), engine b %d (want 3); offload %d, %d (want 0)", ca,
            cb, oa, ob);
  ZS_EXPECT(a->optim != b->optim, "the engines share one optimizer");

  for (int s = 0; s < STEPS_BOTH; s++) { /* interleaved: both pools busy in turn */
    step(a, ua, s);
    step(b, ub, s);
    ref_step(rp, rm, rv, s);
  }
  ZS_OK_OR_DIE(zs_unit_get_param(ua, 0, pa));
  ZS_OK_OR_DIE(zs_unit_get_param(ub, 0, pb));
  ZS_EXPECT(memcmp(pa, pb, N * sizeof *pa) == 0, "2 and 3 workers give different bits");
  size_t bad = off_reference(pa, rp, "engine a");
  ZS_EXPECT(bad == 0, "engine a: %zu elements off the float64 reference", bad);

  zs_engine_destroy(a); /* must not stop b's workers */
  for (int s = STEPS_BOTH; s < STEPS_BOTH + STEPS_AFTER; s++) {
    step(b, ub, s);
    ref_step(rp, rm, rv, s);
  }
  zs_optim_workers(b->optim, &ob, &cb);
  ZS_EXPECT(cb == 3, "engine b has %d CPU workers after a's destroy (want 3)", cb);
  ZS_OK_OR_DIE(zs_unit_get_param(ub, 0, pb));
  bad = off_reference(pb, rp, "engine b after a's destroy");
  ZS_EXPECT(bad == 0, "engine b after a's destroy: %zu elements off the float64 reference", bad);
  zs_engine_destroy(b);

  free(p0);
  free(pa);
  free(pb);
  free(rp);
  free(rm);
  free(rv);
  zs_comm_destroy(comm);
  if (!zs_test_failures) printf("test_engine_optim: each engine's workers, same bits\n");
  ZS_TEST_END("test_engine_optim");
}
