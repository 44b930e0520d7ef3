/* The divergence check where it costs most: a step of tiny units, so each collective is all
 * latency. Stage 3, prefetch 1, one micro-step: per step every unit is gathered for its forward
 * and again for its backward and reduced once, then the step's agreement. In one run, engines are
 * created alternately with ZS_COMM_CHECK=0 (headers off; the step's agreement and its hash stay)
 * and ZS_COMM_CHECK=1 (a header exchange before every collective): each round times --steps steps
 * after 5 warm-up steps (the slowest rank's time); prints every round, the medians and the
 * difference per step and per collective. --knob flight: the same with the check on and the
 * flight recorder off (ZS_FLIGHT_ENTRIES=0) and on (256 entries, the default), ZS_FLIGHT_DIR set
 * (to /tmp unless it is; nothing is written there unless an engine fails).
 *
 * Usage: mpirun -np 4 build/bench/diverge_latency [--units N] [--numel N] [--steps N] [--rounds N]
 *                                                  [--knob check|flight]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zshard.h"

#include "bench_util.h"

/* Exits the benchmark with the library's message (a benchmark, not the library, may exit). */
static void ok(zs_status rc, const char *what) {
  if (rc == ZS_OK) return;
  fprintf(stderr, "diverge_latency: %s: %s: %s\n", what, zs_status_str(rc), zs_last_error());
  exit(1);
}

/* One step: forward gathers, backward gathers with a gradient each, the update. */
static void step(zs_engine *e, zs_unit **u, int nu, int numel, int rank) {
  ok(zs_engine_begin_step(e, 1), "begin_step");
  for (int i = 0; i < nu; i++) {
    ok(zs_unit_gather(u[i]), "gather");
    ok(zs_unit_release(u[i]), "release");
  }
  for (int i = nu - 1; i >= 0; i--) {
    ok(zs_unit_gather(u[i]), "gather");
    float *g = zs_unit_grad(u[i], 0);
    if (!g) ok(ZS_ERR_STATE, "grad");
    for (int k = 0; k < numel; k++)
      g[k] = 1e-3f * (float)((k + rank) % 7);
    ok(zs_unit_grads_ready(u[i]), "grads_ready");
    ok(zs_unit_release(u[i]), "release");
  }
  ok(zs_engine_step(e, NULL), "step");
}

/* The variable the rounds switch and its off and on values (--knob). */
static const char *knob_var = "ZS_COMM_CHECK", *knob_off = "0", *knob_on = "1";

/* Microseconds per step of one engine made with the knob on or off (slowest rank). */
static double round_us(zs_comm *comm, int on_, int nu, int numel, int steps) {
  setenv(knob_var, on_ ? knob_on : knob_off, 1);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.prefetch_units = 1;
  zs_engine *e = NULL;
  ok(zs_engine_create(&cfg, comm, &e), "create");
  zs_unit **u = calloc((size_t)nu, sizeof *u);
  float *v = calloc((size_t)numel, sizeof *v);
  const zs_tensor_desc t = {"w", 1, {numel, 0, 0, 0}, 0};
  for (int i = 0; i < nu; i++) {
    char name[32];
    snprintf(name, sizeof name, "u%d", i);
    ok(zs_engine_add_unit(e, name, 1, &t, &u[i]), "add_unit");
  }
  ok(zs_engine_commit(e), "commit");
  for (int i = 0; i < nu; i++)
    ok(zs_unit_set_param(u[i], 0, v), "set_param");
  const int rank = zs_comm_rank(comm);
  for (int s = 0; s < 5; s++)
    step(e, u, nu, numel, rank);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now();
  for (int s = 0; s < steps; s++)
    step(e, u, nu, numel, rank);
  double us = (bench_now() - t0) * 1e6 / steps, worst = 0;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  zs_engine_destroy(e);
  free(u);
  free(v);
  return worst;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
  int nu = 8, numel = 16, steps = 400, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--units")) nu = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--numel")) numel = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--knob") && !strcmp(argv[i + 1], "flight")) {
      setenv("ZS_FLIGHT_DIR", "/tmp", 0); /* the ring exists only with a directory to write to */
      knob_var = "ZS_FLIGHT_ENTRIES";
      knob_off = "0";
      knob_on = "256";
    }
  }
  if (nu < 1 || numel < 1 || steps < 1 || rounds < 1 || rounds > 64) {
    fprintf(stderr,
            "usage: diverge_latency [--units N] [--numel N] [--steps N] [--rounds 1..64]\n");
    return 2;
  }
  zs_comm *comm = NULL;
  ok(zs_comm_init_mpi(&argc, &argv, &comm), "comm");
  const int rank = zs_comm_rank(comm);
  double off[64], on[64];
  for (int r = 0; r < rounds; r++) {
    off[r] = round_us(comm, 0, nu, numel, steps);
    on[r] = round_us(comm, 1, nu, numel, steps);
    if (rank == 0) printf("round %d: %.1f us/step off, %.1f on\n", r, off[r], on[r]);
  }
  const double m0 = median(off, rounds), m1 = median(on, rounds);
  /* Collectives per step that carry a header: 2 gathers and 1 reduction per unit, the step's
     agreement (its all-gather). */
  const int colls = 3 * nu + 1;
  if (rank == 0)
    printf("headline: diverge_latency %s: world %d, %d units of %d floats, %d steps x %d rounds: "
           "median %.1f us/step off, %.1f on: %+.1f%% (%+.2f us per collective, %d per step)\n",
           knob_var, zs_comm_size(comm), nu, numel, steps, rounds, m0, m1, 100 * (m1 - m0) / m0,
           (m1 - m0) / colls, colls);
  zs_comm_destroy(comm);
  return 0;
}
