/* Each engine owns its optimizer's CPU workers (src/optim/optim.h): two engines in one process,
 * created with different ZS_ADAMW_THREADS, each get their own pool of that size; both train to
 * the same bits, within fp32 rounding of a float64 AdamW reference; and destroying one leaves
 * the other's workers running (its later steps still match the reference). The unit is large
 * enough (> 65536 elements) that the update is split over the workers. CPU device, one rank. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
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

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  float *p0 = malloc(N * sizeof *p0), *pa = malloc(N * sizeof *pa), *pb = malloc(N * sizeof *pb);
  double *rp = malloc(N * sizeof *rp), *rm = calloc(N, sizeof *rm), *rv = calloc(N, sizeof *rv);
  if (!p0 || !pa || !pb || !rp || !rm || !rv) return 1;
  for (size_t i = 0; i < N; i++)
    rp[i] = p0[i] = grad_of(i, 1000) * 10.0f;

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
