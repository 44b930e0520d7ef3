/* Rank divergence, randomized (the protocol test's sequences with one rank deviating): each
 * sequence draws a configuration and a legal call program (steps with random micro_steps,
 * forward and backward passes, evaluation passes, zs_unit_get_param, zs_engine_save between
 * steps, and a last one-micro-step step), then one rank changes it at a random point in one of
 * these ways: a forward pass of its own between steps (rank-0 sampling), an extra
 * zs_unit_get_param, a save where the others step, a missing, extra or other-unit
 * zs_unit_grads_ready, two units' backward in the other order, one more micro-step, a gather of
 * another unit. Where the change makes the ranks' collective calls differ in this configuration,
 * every rank must return a non-OK status, none ZS_ERR_TIMEOUT (the divergence is diagnosed, not
 * waited out), within comm_timeout_s + 5 s, and the ranks that followed the program must name it
 * ("ranks diverged" or "disagree on the step's shape"). Where it does not (the change is local:
 * a gather with full params, a get_param of unsharded state, backward order before the last
 * micro-step with full gradients) the program is legal: every rank returns OK and the weights
 * agree on every rank. After each sequence every rank destroys its engine and goes on with the
 * next one on the same communicator; the job must end with every rank finalising MPI.
 *
 * --micro: rank 1 runs one more whole micro-step than rank 0 at stages 0 and 1, where the
 * reductions line up (each rank would divide by its own count): every rank must fail (run also
 * with --check-off (comm_check = 0): then the step's agreement alone must catch it).
 *
 * --sample: the case on its own: two steps with rank 0 sampling alone in between, at
 * stage 3 (every rank fails, naming zs_unit_gather outside a step) and at stages 0-2 and stage 1
 * with sharded params off (legal: all OK, same weights).
 *
 * Usage: test_engine_diverge [--seqs N] [--seed S] | --sample | --micro */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine_model.h"
#include "zs_test.h"

#define TIMEOUT_S 20.0
#define MAX_CALLS 512

typedef enum { C_BEGIN, C_GATHER, C_RELEASE, C_GRAD, C_READY, C_STEP, C_GETP, C_SAVE } ckind;
typedef struct {
  ckind k;
  int u;    /* unit, or micro_steps for C_BEGIN */
  int last; /* C_READY: in the last micro-step of its step */
  int bwd;  /* C_GATHER: of a backward */
} call;

typedef enum {
  D_SAMPLE,
  D_GETP,
  D_SAVE,
  D_SKIP_READY,
  D_EXTRA_READY,
  D_UNIT_READY,
  D_ORDER,
  D_MICRO,
  D_GATHER_UNIT,
  D_MORE_MICRO,
  D_N
} dkind;
static const char *dname[D_N] = {"sampling pass",          "extra get_param",
                                 "save against step",      "missing grads_ready",
                                 "extra grads_ready",      "grads_ready of another unit",
                                 "backward order",         "micro_steps count",
                                 "gather of another unit", "one more whole micro-step"};

typedef struct {
  int stage, sp, so, sg, prefetch, det;
} cfgd;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int add(call *p, int n, ckind k, int u) {
  if (n < MAX_CALLS) p[n] = (call){k, u, 0, 0};
  return n + 1;
}

/* One step of m micro-steps: forward, then backward in reverse with a reduction per unit. */
static int add_step(call *p, int n, int m) {
  n = add(p, n, C_BEGIN, m);
  for (int k = 0; k < m; k++) {
    for (int u = 0; u < TM_NUNITS; u++) {
      n = add(p, n, C_GATHER, u);
      n = add(p, n, C_RELEASE, u);
    }
    for (int u = TM_NUNITS - 1; u >= 0; u--) {
      n = add(p, n, C_GATHER, u);
      if (n <= MAX_CALLS) p[n - 1].bwd = 1;
      n = add(p, n, C_GRAD, u);
      n = add(p, n, C_READY, u);
      if (n <= MAX_CALLS) p[n - 1].last = k == m - 1;
      n = add(p, n, C_RELEASE, u);
    }
  }
  return add(p, n, C_STEP, 0);
}

/* The legal program: steps with evaluation passes, get_param and saves between them. */
static int draw_program(rng *r, call *p) {
  int n = 0;
  for (int s = 0, ns = 2 + (int)rnd(r, 2); s < ns; s++) {
    if (rnd(r, 3) == 0)
      for (int u = 0; u < TM_NUNITS; u++) {
        n = add(p, n, C_GATHER, u);
        n = add(p, n, C_RELEASE, u);
      }
    if (rnd(r, 3) == 0) n = add(p, n, C_GETP, (int)rnd(r, TM_NUNITS));
    if (rnd(r, 6) == 0) n = add(p, n, C_SAVE, 0);
    n = add_step(p, n, 1 + (int)rnd(r, 3));
  }
  return add_step(p, n, 1); /* the last step: every rank makes collective calls at the end */
}

static int insert(call *p, int n, int at, const call *c, int k) {
  if (n + k > MAX_CALLS) return n;
  memmove(p + at + k, p + at, (size_t)(n - at) * sizeof *p);
  memcpy(p + at, c, (size_t)k * sizeof *c);
  return n + k;
}

/* A random index of a call of kind k (with bwd/last filters), or -1. */
static int pick(rng *r, const call *p, int n, ckind k, int need_bwd) {
  int idx[MAX_CALLS], c = 0;
  for (int i = 0; i < n; i++)
    if (p[i].k == k && (!need_bwd || p[i].bwd == (need_bwd > 0))) idx[c++] = i;
  return c ? idx[rnd(r, (uint32_t)c)] : -1;
}

/* Applies deviation d to p; returns the new length and sets *divergent: whether this makes the
   ranks' collective calls differ under configuration c (else the changed program is legal). */
static int deviate(rng *r, call *p, int n, dkind d, const cfgd *c, int *divergent) {
  *divergent = 1;
  int i;
  switch (d) {
  case D_SAMPLE: {
    i = pick(r, p, n, C_BEGIN, 0);
    call f[2 * TM_NUNITS];
    for (int u = 0; u < TM_NUNITS; u++) {
      f[2 * u] = (call){C_GATHER, u, 0, 0};
      f[2 * u + 1] = (call){C_RELEASE, u, 0, 0};
    }
    *divergent = c->sp; /* full params: the gathers are local */
    return insert(p, n, i, f, 2 * TM_NUNITS);
  }
  case D_GETP: {
    call g = {C_GETP, (int)rnd(r, TM_NUNITS), 0, 0};
    *divergent = c->so; /* unsharded optimizer state: get_param reads it locally */
    return insert(p, n, pick(r, p, n, C_BEGIN, 0), &g, 1);
  }
  case D_SAVE: {
    call s = {C_SAVE, 0, 0, 0};
    return insert(p, n, pick(r, p, n, C_BEGIN, 0), &s, 1);
  }
  case D_SKIP_READY:
    i = pick(r, p, n, C_READY, 0);
    memmove(p + i, p + i + 1, (size_t)(n - i - 1) * sizeof *p);
    return n - 1;
  case D_EXTRA_READY:
    i = pick(r, p, n, C_READY, 0);
    return insert(p, n, i, &p[i], 1);
  case D_UNIT_READY:
    i = pick(r, p, n, C_READY, 0);
    p[i].u = (p[i].u + 1) % TM_NUNITS;
    return n;
  case D_ORDER: {
    /* Swap the backward blocks (gather, grad, ready, release) of unit u and u - 1. */
    int idx[MAX_CALLS], cnt = 0;
    for (int q = 0; q < n; q++)
      if (p[q].k == C_READY && p[q].u >= 1) idx[cnt++] = q;
    i = idx[rnd(r, (uint32_t)cnt)];
    call blk[4];
    memcpy(blk, p + i - 2, sizeof blk);
    memmove(p + i - 2, p + i + 2, sizeof blk);
    memcpy(p + i + 2, blk, sizeof blk);
    /* Local when neither the gathers nor the reductions of that micro-step communicate. */
    /* Deterministic mode reduces every micro-step at stages 0-1 too (the global order). */
    *divergent = c->sp || c->sg || blk[2].last || c->det;
    return n;
  }
  case D_MICRO:
    i = pick(r, p, n, C_BEGIN, 0);
    p[i].u++;
    return n;
  case D_GATHER_UNIT:
    i = pick(r, p, n, C_GATHER, -1); /* a forward gather: its release then fails locally */
    p[i].u = (p[i].u + 1) % TM_NUNITS;
    return n;
  case D_MORE_MICRO: {
    /* A step with micro_steps + 1 whose extra micro-step is complete: at stages 0-1 the
       reductions (last micro-step only) line up, and only the step's shape tells. */
    i = pick(r, p, n, C_BEGIN, 0);
    call m[MAX_CALLS];
    const int k = add_step(m, 0, 1) - 2; /* one micro-step: drop the begin and the step */
    p[i].u++;
    return insert(p, n, i + 1, m + 1, k);
  }
  default:
    return n;
  }
}

static int check_off; /* --check-off: zs_config.comm_check = 0 (the program's setting) */

static zs_engine *make(zs_comm *comm, const cfgd *c, zs_unit **u) {
  zs_config cfg;
  zs_config_default(&cfg);
  if (check_off) cfg.comm_check = 0;
  cfg.stage = c->stage;
  if (c->stage == 1 && c->sp) cfg.shard_params = ZS_SHARD_YES;
  cfg.prefetch_units = c->prefetch;
  cfg.deterministic = c->det;
  cfg.comm_timeout_s = TIMEOUT_S;
  cfg.adamw.lr = 0.05f;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int i = 0; i < TM_NUNITS; i++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[i].name, tm_units[i].ntensors, tm_units[i].t, &u[i]));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_EXPECT(check_off ? zs_engine_config(e)->comm_check == 0 &&
                            zs_test_origin(e, "comm_check") == ZS_ORIGIN_PROGRAM
                      : zs_engine_config(e)->comm_check == 1,
            "engine info: %s", zs_engine_info(e));
  for (int i = 0; i < TM_NUNITS; i++)
    for (int t = 0; t < tm_units[i].ntensors; t++) {
      float *v = malloc((size_t)tm_numel(i, t) * 4);
      for (int64_t k = 0; k < tm_numel(i, t); k++)
        v[k] = tm_init(tm_base(i, t) + k);
      ZS_OK_OR_DIE(zs_unit_set_param(u[i], t, v));
      free(v);
    }
  return e;
}

/* The backward of unit un: a rank- and step-dependent gradient (params used when held). */
static zs_status grad(zs_unit *u, int un, int rank, int step) {
  for (int t = 0; t < tm_units[un].ntensors; t++) {
    float *g = zs_unit_grad(u, t);
    if (!g) return ZS_ERR_STATE; /* zs_last_error says why */
    const float *p = zs_unit_is_gathered(u) ? zs_unit_param(u, t) : NULL;
    for (int64_t i = 0; i < tm_numel(un, t); i++) {
      const int64_t gi = tm_base(un, t) + i;
      g[i] += tm_a(rank * 97 + step, gi) * ((p ? p[i] : 0.0f) - tm_t(rank * 97 + step, gi));
    }
  }
  return ZS_OK;
}

/* Runs p on this rank until the first failure; returns it (ZS_OK when every call succeeded). */
static zs_status run(zs_engine *e, zs_unit **u, const call *p, int n, int rank, const char *dir,
                     int *at) {
  float buf[512];
  int step = 0;
  for (int i = 0; i < n; i++) {
    zs_status rc = ZS_OK;
    switch (p[i].k) {
    case C_BEGIN:
      rc = zs_engine_begin_step(e, p[i].u);
      break;
    case C_GATHER:
      rc = zs_unit_gather(u[p[i].u]);
      break;
    case C_RELEASE:
      rc = zs_unit_release(u[p[i].u]);
      break;
    case C_GRAD:
      rc = grad(u[p[i].u], p[i].u, rank, step);
      break;
    case C_READY:
      rc = zs_unit_grads_ready(u[p[i].u]);
      break;
    case C_STEP:
      rc = zs_engine_step(e, NULL);
      step++;
      break;
    case C_GETP:
      rc = zs_unit_get_param(u[p[i].u], 0, buf);
      break;
    case C_SAVE:
      rc = zs_engine_save(e, dir);
      break;
    }
    if (rc != ZS_OK) {
      *at = i;
      return rc;
    }
  }
  *at = n;
  return ZS_OK;
}

/* Hash of every weight (the master, via get_param: collective at stages 1-3). */
static uint64_t weights_hash(zs_unit **u) {
  uint64_t h = 0;
  float buf[512];
  for (int i = 0; i < TM_NUNITS; i++)
    for (int t = 0; t < tm_units[i].ntensors; t++) {
      ZS_OK_OR_DIE(zs_unit_get_param(u[i], t, buf));
      for (int64_t k = 0; k < tm_numel(i, t); k++) {
        uint32_t b;
        memcpy(&b, &buf[k], 4);
        h = tm_hash(h ^ b);
      }
    }
  return h;
}

/* One program with rank dev changing it by d (d = D_N: nobody deviates). Checks the outcome
   on this rank and across ranks; verbose prints every rank's message. */
static void one(zs_comm *comm, uint64_t seed, const cfgd *c, const call *legal, int n, int dev,
                dkind d, rng *r, int verbose) {
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  call p[MAX_CALLS];
  memcpy(p, legal, (size_t)n * sizeof *p);
  int divergent = 0, np = n;
  if (d < D_N) {
    rng dr = *r; /* every rank draws the deviation, so all know whether it is divergent */
    np = deviate(&dr, p, n, d, c, &divergent);
    if (rank != dev) memcpy(p, legal, (size_t)(np = n) * sizeof *p);
  }
  char dir[128];
  snprintf(dir, sizeof dir, "/tmp/zs_diverge_%d_%llu", (int)getppid(), (unsigned long long)seed);
  zs_unit *u[TM_NUNITS];
  zs_engine *e = make(comm, c, u);
  const double t0 = now();
  int at = 0;
  const zs_status rc = run(e, u, p, np, rank, dir, &at);
  const double dt = now() - t0;
  char msg[1100];
  snprintf(msg, sizeof msg, "%s", rc == ZS_OK ? "" : zs_last_error());
  uint64_t h = rc == ZS_OK && !divergent ? weights_hash(u) : 0;
  zs_engine_destroy(e);
  const char *what = d < D_N ? dname[d] : "none";
  if (verbose || (divergent && rc == ZS_OK) || (!divergent && rc != ZS_OK))
    printf("seed %llu rank %d (deviating rank %d: %s, stage %d sp%d%s): %s after call %d, "
           "%.2f s: %s\n",
           (unsigned long long)seed, rank, dev, what, c->stage, c->sp,
           divergent ? " divergent" : " legal", zs_status_str(rc), at, dt, msg);
  if (divergent) {
    ZS_EXPECT(rc != ZS_OK, "seed %llu rank %d: %s by rank %d went unnoticed",
              (unsigned long long)seed, rank, what, dev);
    ZS_EXPECT(rc != ZS_ERR_TIMEOUT, "seed %llu rank %d: %s waited out, not diagnosed: %s",
              (unsigned long long)seed, rank, what, msg);
    ZS_EXPECT(dt <= TIMEOUT_S + 5.0, "seed %llu rank %d: failed after %.1f s",
              (unsigned long long)seed, rank, dt);
    if (rank != dev)
      ZS_EXPECT(strstr(msg, "ranks diverged") || strstr(msg, "disagree on the step's shape"),
                "seed %llu rank %d: the message does not name the divergence: %s",
                (unsigned long long)seed, rank, msg);
  } else {
    ZS_EXPECT(rc == ZS_OK, "seed %llu rank %d: a legal program (%s by rank %d) failed: %s",
              (unsigned long long)seed, rank, what, dev, msg);
    uint64_t all[64] = {0};
    MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int q = 0; q < world && q < 64; q++)
      ZS_EXPECT(all[q] == all[0], "seed %llu: rank %d's weights differ from rank 0's",
                (unsigned long long)seed, q);
  }
  MPI_Barrier(MPI_COMM_WORLD); /* the save directory is removed once every rank is done */
  if (rank == 0) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  }
}

/* The case: two steps, rank 0 samples alone in between. */
static void sample_case(zs_comm *comm) {
  const cfgd cases[] = {{3, 1, 1, 1, 1, 1}, {3, 1, 1, 1, 0, 0}, {0, 0, 0, 0, 1, 1},
                        {1, 0, 1, 0, 1, 1}, {2, 0, 1, 1, 1, 0}, {1, 1, 1, 0, 1, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    call p[MAX_CALLS];
    int n = add_step(p, 0, 2);
    n = add_step(p, n, 1);
    rng r = {k}; /* the pass goes before one of the two steps */
    one(comm, 900 + k, &cases[k], p, n, 0, D_SAMPLE, &r, 1);
  }
}

/* One more micro-step on rank 1, at stages 0 and 1 (full gradients, reduced once: the
   reductions line up and only the step's shape tells). In deterministic mode every micro-step
   is reduced, so the extra one adds collectives: caught by the header, and with the header off
   (--check-off) a mismatch of sizes that the transport reports, so that case runs only with
   the header on. */
static void micro_case(zs_comm *comm) {
  const cfgd cases[] = {{0, 0, 0, 0, 1, 0}, {1, 0, 1, 0, 1, 0}, {0, 0, 0, 0, 1, 1}};
  const size_t ncases = check_off ? 2 : 3;
  for (size_t k = 0; k < ncases; k++) {
    call p[MAX_CALLS];
    int n = add_step(p, 0, 2);
    n = add_step(p, n, 1);
    rng r = {k};
    one(comm, 950 + k, &cases[k], p, n, 1, D_MORE_MICRO, &r, 1);
  }
}

int main(int argc, char **argv) {
  int seqs = 40, sample = 0, micro = 0;
  uint64_t seed0 = 5000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--sample")) sample = 1;
    if (!strcmp(argv[i], "--micro")) micro = 1;
    if (!strcmp(argv[i], "--check-off")) check_off = 1;
    if (!strcmp(argv[i], "--seqs") && i + 1 < argc) seqs = atoi(argv[++i]);
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed0 = strtoull(argv[++i], NULL, 10);
  }
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int world = zs_comm_size(comm);
  if (sample || micro) {
    if (sample) sample_case(comm);
    if (micro) micro_case(comm);
  } else {
    for (int q = 0; q < seqs; q++) {
      const uint64_t seed = seed0 + 1000u * (uint64_t)world + (uint64_t)q;
      rng r = {seed};
      cfgd c = {0};
      c.stage = (int)rnd(&r, 4);
      c.so = c.stage >= 1;
      c.sg = c.stage >= 2;
      c.sp = c.stage >= 3 || (c.stage == 1 && rnd(&r, 3) == 0);
      c.prefetch = (int)rnd(&r, 3);
      c.det = (int)rnd(&r, 2);
      call p[MAX_CALLS];
      const int n = draw_program(&r, p);
      /* A quarter of the sequences stay legal: nobody deviates. */
      const dkind d = rnd(&r, 4) == 0 ? D_N : (dkind)rnd(&r, D_N);
      const int dev = (int)rnd(&r, (uint32_t)world);
      one(comm, seed, &c, p, n, dev, d == D_GATHER_UNIT && !c.sp ? D_N : d, &r, q < 3);
    }
  }
  if (zs_comm_rank(comm) == 0)
    printf("test_engine_diverge: world %d, %s, %d failure(s) on rank 0\n", world,
           sample  ? "rank-0 sampling"
           : micro ? "one more micro-step"
                   : "random deviations",
           zs_test_failures);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_diverge");
}
