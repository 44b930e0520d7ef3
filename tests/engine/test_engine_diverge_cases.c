/* Rank divergence, hand-made cases the randomized test (test_engine_diverge.c) cannot reach: its
 * units all differ in size, its ranks never abort, and it has no hybrid groups.
 *
 * --units (np 2): four units of the same size at stage 3, prefetch 1. Every rank gathers u0
 *   (which prefetches u1); then rank 1 sets a tensor of u1 (dropping its prefetched copy) while
 *   rank 0 sets one of u2; then every rank gathers u1. Rank 0 now prefetches u2 while rank 1
 *   gathers u1 itself: the same call, the same unit, the same count. Every rank must get
 *   ZS_ERR_COMM from that gather ("ranks diverged"), never OK with the other unit's values. The
 *   legal twin (every rank sets u1) must return OK with exactly the values set.
 * --order (np 2, prefetch 0): one step whose forward gathers u0 and u1 in the other order on
 *   rank 1. With the header (default) the first gather fails on every rank; with
 *   ZS_COMM_CHECK=0 the all-gathers pair silently (same sizes) and zs_engine_step's agreement
 *   (the running hash of the collective calls) must fail on every rank before the update. Then
 *   rank r says zs_unit_no_grad for unit r: caught the same ways (the agreement: its no-grad word).
 * --hybrid (np 4, 2 shard groups x 2 replicas): ranks 0 and 1 gather different units (their
 *   shard group fails), ranks 2 and 3 gather the same one (OK). Then every rank destroys: each
 *   destroy must return well within comm_timeout_s, and every rank must then reach a barrier on
 *   MPI_COMM_WORLD and finalise MPI.
 * --abort (np 2): rank 1 calls zs_engine_abort and destroys; rank 0 (a) destroys at once, or
 *   (b) first gathers (stage 3: collective): the gather must fail at once with ZS_ERR_COMM naming
 *   zs_engine_abort, and the destroy must return well within comm_timeout_s. A refused call's
 *   message (made just before destroy) must still be zs_last_error() after it.
 * --create (np 2): rank 1 asks for shard groups of 1, rank 0 for the whole world: the mesh's
 *   shape, exchanged before any group is split, differs, and both creates fail at once with
 *   ZS_ERR_INVALID_ARG naming both shapes (the failure path's destroy must not replace it); then
 *   rank 1's configuration is invalid (then its out is NULL), and rank 0's create fails at once
 *   naming rank 1.
 * --config (np 2): configurations that create fine but differ between the ranks (lean mode's
 *   rounding_seed; moment_dtype; optim.lr; grad_accum_fp32; groups, frozen units, the units'
 *   tensors): zs_engine_commit must refuse on every rank with ZS_ERR_INVALID_ARG naming the field,
 *   and the legal twin (the same values) must commit; per-rank optimizer state and gradients
 *   (the step refuses them) and gathers of different state arrays (ZS_ERR_COMM at once).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zs_test.h"

#define TIMEOUT_S 20.0
#define NU 4
#define NEL 64 /* elements of every unit: all units the same size */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Value k of unit i in version v (every rank derives the same). */
static float val(int i, int k, int v) {
  return (float)(i * 1000 + k) * 0.001f + (float)v;
}

static zs_engine *make(zs_comm *comm, int prefetch, int group, zs_unit **u) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.prefetch_units = prefetch;
  cfg.shard_group_size = group;
  cfg.comm_timeout_s = TIMEOUT_S;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  const zs_tensor_desc t = {"w", 1, {NEL, 0, 0, 0}, 0};
  for (int i = 0; i < NU; i++) {
    char name[16];
    snprintf(name, sizeof name, "u%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, &t, &u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  float v[NEL];
  for (int i = 0; i < NU; i++) {
    for (int k = 0; k < NEL; k++)
      v[k] = val(i, k, 0);
    ZS_OK_OR_DIE(zs_unit_set_param(u[i], 0, v));
  }
  return e;
}

/* D1: which unit a rank sets changes what its next gather moves. */
static void units_case(zs_comm *comm, int divergent) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u[NU];
  zs_engine *e = make(comm, 1, 0, u);
  ZS_OK_OR_DIE(zs_unit_gather(u[0])); /* prefetches u1 */
  const int set = divergent && rank == 0 ? 2 : 1;
  float v[NEL];
  for (int k = 0; k < NEL; k++)
    v[k] = val(set, k, 1);
  ZS_OK_OR_DIE(zs_unit_set_param(u[set], 0, v));
  ZS_OK_OR_DIE(zs_unit_release(u[0]));
  const double t0 = now();
  const zs_status rc = zs_unit_gather(u[1]);
  const double dt = now() - t0;
  const char *msg = rc == ZS_OK ? "" : zs_last_error();
  printf("units %s rank %d: %s after %.2f s: %s\n", divergent ? "divergent" : "legal", rank,
         zs_status_str(rc), dt, msg);
  if (divergent) {
    ZS_EXPECT(rc == ZS_ERR_COMM, "rank %d: a gather moving another unit of the same size gave %s",
              rank, zs_status_str(rc));
    ZS_EXPECT(rc == ZS_OK || strstr(msg, "ranks diverged"), "rank %d: message: %s", rank, msg);
    ZS_EXPECT(dt < TIMEOUT_S / 2, "rank %d: took %.1f s", rank, dt);
  } else {
    ZS_EXPECT(rc == ZS_OK, "rank %d: the legal twin failed: %s", rank, msg);
    const float *p = rc == ZS_OK ? zs_unit_param(u[1], 0) : NULL;
    int bad = 0;
    for (int k = 0; p && k < NEL; k++)
      bad += p[k] != val(1, k, 1);
    ZS_EXPECT(p && !bad, "rank %d: %d gathered values of u1 are not the ones set", rank, bad);
  }
  zs_engine_destroy(e);
}

/* D5: the forward's first two gathers in the other order on rank 1 (same sizes). */
static void order_case(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u[NU];
  zs_engine *e = make(comm, 0, 0, u);
  int order[NU] = {0, 1, 2, 3};
  if (rank == 1) order[0] = 1, order[1] = 0;
  const double t0 = now();
  zs_status rc = zs_engine_begin_step(e, 1);
  const char *where = "begin_step";
  for (int k = 0; k < NU && rc == ZS_OK; k++) { /* forward */
    where = "forward gather";
    rc = zs_unit_gather(u[order[k]]);
    if (rc == ZS_OK) rc = zs_unit_release(u[order[k]]);
  }
  for (int i = NU - 1; i >= 0 && rc == ZS_OK; i--) { /* backward */
    where = "backward";
    rc = zs_unit_gather(u[i]);
    float *g = rc == ZS_OK ? zs_unit_grad(u[i], 0) : NULL;
    if (rc == ZS_OK && !g) rc = ZS_ERR_STATE;
    for (int k = 0; g && k < NEL; k++)
      g[k] = 0.01f * (float)(k + rank);
    if (rc == ZS_OK) rc = zs_unit_grads_ready(u[i]);
    if (rc == ZS_OK) rc = zs_unit_release(u[i]);
  }
  if (rc == ZS_OK) {
    where = "step";
    rc = zs_engine_step(e, NULL);
  }
  const double dt = now() - t0;
  const char *msg = rc == ZS_OK ? "" : zs_last_error();
  const char *env = getenv("ZS_COMM_CHECK");
  printf("order rank %d (ZS_COMM_CHECK=%s): %s in %s after %.2f s: %s\n", rank, env ? env : "",
         zs_status_str(rc), where, dt, msg);
  ZS_EXPECT(rc == ZS_ERR_COMM, "rank %d: gathers in another order gave %s", rank,
            zs_status_str(rc));
  ZS_EXPECT(rc == ZS_OK || strstr(msg, "ranks diverged") || strstr(msg, "different collective"),
            "rank %d: message: %s", rank, msg);
  ZS_EXPECT(dt < TIMEOUT_S / 2, "rank %d: took %.1f s", rank, dt);
  zs_engine_destroy(e);
}

/* D7: rank r says zs_unit_no_grad for unit r (same sizes, as many reductions on every rank): the
   header catches the reduction of another unit; without it (ZS_COMM_CHECK=0) zs_engine_step's
   agreement does, on every rank, before any update. */
static void nograd_case(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u[NU];
  zs_engine *e = make(comm, 0, 0, u);
  zs_status rc = zs_engine_begin_step(e, 1);
  for (int i = NU - 1; i >= 0 && rc == ZS_OK; i--) {
    if (i == rank) {
      rc = zs_unit_no_grad(u[i]);
      continue;
    }
    rc = zs_unit_gather(u[i]);
    float *g = rc == ZS_OK ? zs_unit_grad(u[i], 0) : NULL;
    if (rc == ZS_OK && !g) rc = ZS_ERR_STATE;
    for (int k = 0; g && k < NEL; k++)
      g[k] = 0.01f;
    if (rc == ZS_OK) rc = zs_unit_grads_ready(u[i]);
    if (rc == ZS_OK) rc = zs_unit_release(u[i]);
  }
  if (rc == ZS_OK) rc = zs_engine_step(e, NULL);
  const char *msg = rc == ZS_OK ? "" : zs_last_error();
  printf("nograd rank %d: %s: %s\n", rank, zs_status_str(rc), msg);
  ZS_EXPECT(rc == ZS_ERR_COMM && (strstr(msg, "ranks diverged") || strstr(msg, "zs_unit_no_grad")),
            "rank %d: zs_unit_no_grad on different units gave %s: %s", rank, zs_status_str(rc),
            msg);
  zs_engine_destroy(e);
}

/* D2: a divergence inside one shard group of a hybrid; every destroy returns promptly. */
static void hybrid_case(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u[NU];
  zs_engine *e = make(comm, 0, 2, u);
  const zs_status rc = zs_unit_gather(u[rank == 1 ? 1 : 0]);
  const char *msg = rc == ZS_OK ? "" : zs_last_error();
  printf("hybrid rank %d: gather %s: %s\n", rank, zs_status_str(rc), msg);
  if (rank < 2)
    ZS_EXPECT(rc == ZS_ERR_COMM && strstr(msg, "ranks diverged"),
              "rank %d (the diverging shard group): %s: %s", rank, zs_status_str(rc), msg);
  else
    ZS_EXPECT(rc == ZS_OK, "rank %d (the healthy shard group): %s", rank, msg);
  const double t0 = now();
  zs_engine_destroy(e);
  const double dt = now() - t0;
  printf("hybrid rank %d: destroy took %.2f s\n", rank, dt);
  ZS_EXPECT(dt < TIMEOUT_S / 2, "rank %d: destroy took %.1f s", rank, dt);
  ZS_EXPECT(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "rank %d: barrier after destroy", rank);
}

/* D3/D4: rank 1 aborts; rank 0 destroys (b: after a gather) and keeps its own last error. */
static void abort_case(zs_comm *comm, int gather_first) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u[NU];
  zs_engine *e = make(comm, 0, 0, u);
  if (rank == 1) {
    ZS_OK_OR_DIE(zs_engine_abort(e));
    /* "later calls return ZS_ERR_STATE": the local setters too */
    ZS_EXPECT_STATUS(zs_engine_set_lr(e, 1e-3f), ZS_ERR_STATE);
    ZS_EXPECT_STATUS(zs_engine_set_user_meta(e, "x", 1), ZS_ERR_STATE);
    zs_engine_destroy(e);
    return;
  }
  if (gather_first) {
    const double t0 = now();
    const zs_status rc = zs_unit_gather(u[0]);
    const double dt = now() - t0;
    const char *msg = rc == ZS_OK ? "" : zs_last_error();
    printf("abort rank 0: gather %s after %.2f s: %s\n", zs_status_str(rc), dt, msg);
    ZS_EXPECT(rc == ZS_ERR_COMM && strstr(msg, "zs_engine_abort"),
              "rank 0: a gather after rank 1's abort: %s: %s", zs_status_str(rc), msg);
    ZS_EXPECT(dt < TIMEOUT_S / 2, "rank 0: the gather took %.1f s", dt);
  }
  /* A refused call of the caller's own: destroy must leave its message. */
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "late", 0, NULL, NULL), ZS_ERR_STATE);
  char mine[1024];
  snprintf(mine, sizeof mine, "%s", zs_last_error());
  const double t0 = now();
  zs_engine_destroy(e);
  const double dt = now() - t0;
  printf("abort rank 0: destroy took %.2f s; last error: %s\n", dt, zs_last_error());
  ZS_EXPECT(dt < TIMEOUT_S / 2, "rank 0: destroy took %.1f s after rank 1's abort", dt);
  ZS_EXPECT(!strcmp(zs_last_error(), mine), "rank 0: destroy replaced the last error '%s' by '%s'",
            mine, zs_last_error());
}

/* D4: creates that diverge after the world group is open (another shard group on rank 1): the
   mesh's shape is exchanged before any split, so every rank refuses at once, naming both. */
static void create_case(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.comm_timeout_s = TIMEOUT_S;
  cfg.shard_group_size = rank == 1 ? 1 : 0;
  zs_engine *e = NULL;
  const double t0 = now();
  const zs_status rc = zs_engine_create(&cfg, comm, &e);
  const double dt = now() - t0;
  const char *msg = rc == ZS_OK ? "" : zs_last_error();
  printf("create rank %d: %s after %.2f s: %s\n", rank, zs_status_str(rc), dt, msg);
  ZS_EXPECT(rc == ZS_ERR_INVALID_ARG && !e, "rank %d: create gave %s", rank, zs_status_str(rc));
  ZS_EXPECT(rc == ZS_OK || (strstr(msg, "disagree on the mesh") && strstr(msg, "shard_group_size")),
            "rank %d: create's message does not name the mesh: %s", rank, msg);
  ZS_EXPECT(dt < TIMEOUT_S / 2, "rank %d: create took %.1f s", rank, dt);
  if (e) zs_engine_destroy(e);
  /* Rank 1's configuration is invalid (a stage that does not exist): it refuses it, and rank 0
     learns so at once, not at the timeout of a collective rank 1 never enters. */
  cfg.shard_group_size = 0;
  cfg.stage = rank == 1 ? 9 : 3;
  const double t1 = now();
  const zs_status rc1 = zs_engine_create(&cfg, comm, &e);
  const double dt1 = now() - t1;
  const char *msg1 = rc1 == ZS_OK ? "" : zs_last_error();
  printf("create rank %d, rank 1's config invalid: %s after %.2f s: %s\n", rank, zs_status_str(rc1),
         dt1, msg1);
  ZS_EXPECT(rc1 == ZS_ERR_INVALID_ARG && !e &&
                strstr(msg1, rank == 1 ? "stage" : "rank 1 refused its configuration"),
            "rank %d: create gave %s: %s", rank, zs_status_str(rc1), msg1);
  ZS_EXPECT(dt1 < TIMEOUT_S / 2, "rank %d: create took %.1f s", rank, dt1);
  if (e) zs_engine_destroy(e);
  /* Rank 1 passes no place for the engine: it still takes part, so every rank refuses at once,
     and the next create on the same comm works. */
  cfg.stage = 3;
  const zs_status rc2 = zs_engine_create(&cfg, comm, rank == 1 ? NULL : &e);
  const char *msg2 = rc2 == ZS_OK ? "" : zs_last_error();
  ZS_EXPECT(rc2 == ZS_ERR_INVALID_ARG && !e &&
                strstr(msg2, rank == 1 ? "out is NULL" : "rank 1 refused its configuration"),
            "rank %d: create with rank 1's out NULL gave %s: %s", rank, zs_status_str(rc2), msg2);
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  zs_engine_destroy(e);
}

/* D5: configurations that differ between ranks are refused at commit, naming the field; so are
   parameter groups (rank 1 alone adds one, or alone puts the tensor in a group all added) and
   frozen units (rank 1 alone freezes the unit: rank 0 would write its checkpoint segment as a
   trained unit's while rank 1 keeps no state, and reduce its gradients alone), and the units
   themselves: a tensor's no_weight_decay (each rank would decay its replica or shard by its own
   rule), its name (checkpoints name it) and the number of units. */
static void config_case(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  enum { NCASES = 13 };
  const char *field[NCASES] = {NULL,
                               "zs_config.rounding_seed",
                               "zs_config.moment_dtype",
                               "zs_config.optim.lr",
                               "the param groups",
                               "the param groups",
                               "zs_config.grad_accum_fp32",
                               "the frozen units",
                               "the units (zs_engine_add_unit",
                               "the units (zs_engine_add_unit",
                               "the units (zs_engine_add_unit",
                               NULL,
                               NULL};
  for (int k = 0; k < NCASES; k++) {
    zs_config cfg;
    zs_config_default(&cfg);
    cfg.stage = 0; /* every rank updates its replica itself: the seed decides its bits */
    cfg.comm_timeout_s = TIMEOUT_S;
    cfg.param_dtype = ZS_BF16;
    cfg.master = ZS_MASTER_LEAN;
    if (rank == 1 && k == 1) cfg.rounding_seed = 7;
    if (rank == 1 && k == 2) cfg.moment_dtype = ZS_BF16;
    if (rank == 1 && k == 3) cfg.adamw.lr = 2e-3f;
    if (k == 6) cfg.master = ZS_MASTER_FP32; /* lean's AdamW refuses fp32 gradients */
    if (rank == 1 && k == 6) cfg.grad_accum_fp32 = 1;
    zs_engine *e = NULL;
    ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
    /* Cases 11 and 12, the same model: a dimension past ndim left with junk, and a nonzero
       no_weight_decay other than 1. */
    const int nwd = (k == 8 && rank == 1) || (k == 12 && rank == 0) ? 1 : k == 12 ? 2 : 0;
    const zs_tensor_desc t = {
        k == 9 && rank == 1 ? "v" : "w", 1, {NEL, k == 11 && rank == 1 ? 5 : 0, 0, 0}, nwd};
    zs_unit *u = NULL;
    ZS_OK_OR_DIE(zs_engine_add_unit(e, "u0", 1, &t, &u));
    if (k == 10 && rank == 1) ZS_OK_OR_DIE(zs_engine_add_unit(e, "u1", 1, &t, &u));
    if (k == 7 && rank == 1) ZS_OK_OR_DIE(zs_unit_freeze(u, 1));
    if ((k == 4 && rank == 1) || k == 5) {
      zs_param_group g;
      int id = 0;
      ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
      g.lr_scale = 0.5f;
      ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
      if (k == 4 || rank == 1) ZS_OK_OR_DIE(zs_unit_set_group(u, 0, id));
    }
    const zs_status rc = zs_engine_commit(e);
    const char *msg = rc == ZS_OK ? "" : zs_last_error();
    printf("config rank %d case %d: commit %s: %s\n", rank, k, zs_status_str(rc), msg);
    if (!field[k]) {
      ZS_EXPECT(rc == ZS_OK, "rank %d: the same configuration is refused: %s", rank, msg);
    } else {
      const char *want = field[k];
      ZS_EXPECT(rc == ZS_ERR_INVALID_ARG && strstr(msg, want) && strstr(msg, "disagree"),
                "rank %d: %s differs between ranks: commit gave %s: %s", rank, field[k],
                zs_status_str(rc), msg);
    }
    zs_engine_destroy(e);
  }
}

/* D6: optimizer state written differently per rank (zs_unit_set_state) is refused at the next
   step, naming the state, also when the same params are set after it (a record per array) or
   params are broadcast (which repairs params, not state); the same values on every rank pass.
   The same for a gradient written inside the step (zs_unit_set_grad; cases 4 and 5: the same
   values, then per-rank values), which is refused at that step's update and leaves the engine
   usable (the next step passes). */
/* An engine at `stage` with one committed unit "u0" of one tensor "w" of NEL elements. */
static zs_engine *one_unit(zs_comm *comm, int stage, zs_unit **u) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.comm_timeout_s = TIMEOUT_S;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  const zs_tensor_desc t = {"w", 1, {NEL, 0, 0, 0}, 0};
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "u0", 1, &t, u));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

static void state_case(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  for (int k = 0; k < 6; k++) {
    zs_unit *u = NULL; /* stage 0: every rank holds the whole state: its own writes stay its own */
    zs_engine *e = one_unit(comm, 0, &u);
    float v[NEL];
    for (int i = 0; i < NEL; i++)
      v[i] = 0.25f * (float)(i + (k > 0 && k < 4 ? rank : 0)); /* 0, 4, 5: the same */
    ZS_OK_OR_DIE(zs_unit_set_state(u, 0, "exp_avg", v));
    for (int i = 0; i < NEL; i++)
      v[i] = 0.5f;
    if (k == 2) ZS_OK_OR_DIE(zs_unit_set_param(u, 0, v)); /* the same params after it */
    if (k == 3) ZS_OK_OR_DIE(zs_engine_broadcast_params(e, 0));
    ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
    ZS_OK_OR_DIE(zs_unit_gather(u));
    ZS_OK_OR_DIE(zs_unit_grads_ready(u));
    ZS_OK_OR_DIE(zs_unit_release(u));
    if (k >= 4) {
      for (int i = 0; i < NEL; i++)
        v[i] = 0.125f * (float)(i + (k == 5 ? rank : 0));
      ZS_OK_OR_DIE(zs_unit_set_grad(u, 0, v));
    }
    const zs_status rc = zs_engine_step(e, NULL);
    const char *msg = rc == ZS_OK ? "" : zs_last_error();
    printf("state rank %d case %d: step %s: %s\n", rank, k, zs_status_str(rc), msg);
    if (k == 0 || k == 4)
      ZS_EXPECT(rc == ZS_OK, "rank %d: the same values on every rank are refused: %s", rank, msg);
    else if (k == 5) {
      ZS_EXPECT(rc == ZS_ERR_INVALID_ARG && strstr(msg, "gradient (zs_unit_set_grad)"),
                "rank %d: per-rank gradients passed the step: %s %s", rank, zs_status_str(rc), msg);
      ZS_OK_OR_DIE(zs_engine_begin_step(e, 1)); /* the engine stays usable */
      ZS_OK_OR_DIE(zs_unit_gather(u));
      ZS_OK_OR_DIE(zs_unit_grads_ready(u));
      ZS_OK_OR_DIE(zs_unit_release(u));
      ZS_OK_OR_DIE(zs_engine_step(e, NULL));
    } else
      ZS_EXPECT(rc == ZS_ERR_INVALID_ARG && strstr(msg, "optimizer state 'exp_avg'"),
                "rank %d case %d: per-rank state passed the step: %s %s", rank, k,
                zs_status_str(rc), msg);
    zs_engine_destroy(e);
  }
}

/* D7: zs_unit_get_state of different arrays on the ranks of a sharded unit (rank 0 "exp_avg", rank
   1 "exp_avg_sq"): their gathers move different arrays, so both fail with ZS_ERR_COMM naming both
   calls' arrays, never a buffer mixing the two. */
static void state_name_case(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u = NULL;
  zs_engine *e = one_unit(comm, 3, &u);
  float v[NEL];
  const zs_status rc = zs_unit_get_state(u, 0, rank ? "exp_avg_sq" : "exp_avg", v);
  const char *msg = rc == ZS_OK ? "" : zs_last_error();
  printf("state name rank %d: %s: %s\n", rank, zs_status_str(rc), msg);
  ZS_EXPECT(rc == ZS_ERR_COMM && strstr(msg, "zs_unit_get_state('u0', 'exp_avg')") &&
                strstr(msg, "zs_unit_get_state('u0', 'exp_avg_sq')"),
            "rank %d: gathers of different arrays: %s %s", rank, zs_status_str(rc), msg);
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const char *mode = argc > 1 ? argv[1] : "--units";
  if (!strcmp(mode, "--units")) {
    units_case(comm, 0);
    units_case(comm, 1);
  } else if (!strcmp(mode, "--order")) {
    order_case(comm);
    nograd_case(comm);
  } else if (!strcmp(mode, "--hybrid")) {
    hybrid_case(comm);
  } else if (!strcmp(mode, "--abort")) {
    abort_case(comm, 0);
    abort_case(comm, 1);
  } else if (!strcmp(mode, "--create")) {
    create_case(comm);
  } else if (!strcmp(mode, "--config")) {
    config_case(comm);
    state_case(comm);
    state_name_case(comm);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_diverge_cases");
}
