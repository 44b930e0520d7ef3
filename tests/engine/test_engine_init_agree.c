/* Values set differently on each rank (a per-rank seed) are refused, and zs_engine_broadcast_params
 * is the remedy, at stages 0-3 on 2 ranks (mpirun):
 *  - (a) every rank sets rank-dependent values into one tensor (unit 'h1', tensor 'w'), the rest
 *    equal: zs_engine_step returns ZS_ERR_INVALID_ARG on every rank, naming the unit, the tensor
 *    and both ranks; nothing was updated (the step count stays, the values read back are this
 *    rank's own), the engine stays usable and refuses again until the values are fixed; a tensor
 *    set on one rank only is named too;
 *  - (b) zs_engine_broadcast_params(e, 0) then gives every rank rank 0's values (computed here
 *    from rank 0's seed, not read from rank 0), and the step succeeds with equal params after it;
 *  - (c) equal values on every rank are never refused: after a set, with no set at all, and after
 *    a checkpoint load (each rank's shard, rank-specific by nature) that overwrote rank-dependent
 *    values set before it. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_test.h"

#define R 6
#define C 5
#define NU 2

static const zs_tensor_desc tensors[2] = {{"w", 2, {R, C}, 0}, {"b", 1, {C}, 1}};

/* A value of (unit, tensor, element) for a seed: the same on every rank for the same seed. */
static float value(int unit, int t, int64_t j, int seed) {
  uint64_t x = (uint64_t)(unit * 2 + t + 1) * 0x9e3779b97f4a7c15ull +
               (uint64_t)j * 0xbf58476d1ce4e5b9ull + (uint64_t)seed * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd39ull;
  x ^= x >> 29;
  return (float)((double)(x >> 11) / 9007199254740992.0 - 0.5);
}

static zs_engine *make_engine(zs_comm *comm, int stage, zs_unit **u) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.deterministic = 1;
  cfg.comm_timeout_s = 60;
  cfg.adamw.lr = 0.01f;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int i = 0; i < NU; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "h%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, nm, 2, tensors, &u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

/* Sets every tensor from `seed`, except h1.w from `seed_h1w` (rank-dependent when asked). */
static void set_all(zs_unit **u, int seed, int seed_h1w) {
  float h[R * C];
  for (int i = 0; i < NU; i++)
    for (int t = 0; t < 2; t++) {
      const int s = i == 1 && t == 0 ? seed_h1w : seed;
      for (int64_t j = 0; j < zs_unit_numel(u[i], t); j++)
        h[j] = value(i, t, j, s);
      ZS_OK_OR_DIE(zs_unit_set_param(u[i], t, h));
    }
}

/* One step; grad = param / 2 + a rank-independent offset. Returns zs_engine_step's status. */
static zs_status step(zs_engine *e, zs_unit **u) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = NU - 1; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    for (int t = 0; t < 2; t++) {
      const float *p = zs_unit_param(u[i], t);
      float *g = zs_unit_grad(u[i], t);
      for (int64_t j = 0; j < zs_unit_numel(u[i], t); j++)
        g[j] += 0.5f * p[j] + value(i, t, j, 77);
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  return zs_engine_step(e, NULL);
}

/* 1 when every value of tensor (i, t) read back equals value(i, t, ., seed), bit for bit. */
static int holds(zs_unit **u, int i, int t, int seed) {
  float h[R * C];
  ZS_OK_OR_DIE(zs_unit_get_param(u[i], t, h));
  for (int64_t j = 0; j < zs_unit_numel(u[i], t); j++)
    if (memcmp(&h[j], &(float){value(i, t, j, seed)}, sizeof(float))) return 0;
  return 1;
}

/* Every tensor's values as read back (zs_unit_get_param). */
static void read_all(zs_unit **u, float out[NU][2][R * C]) {
  memset(out, 0, sizeof(float) * NU * 2 * R * C);
  for (int i = 0; i < NU; i++)
    for (int t = 0; t < 2; t++)
      ZS_OK_OR_DIE(zs_unit_get_param(u[i], t, out[i][t]));
}

/* 1 when tensor (i, t) reads back as zeros. */
static int holds_zero(zs_unit **u, int i, int t) {
  float h[R * C];
  ZS_OK_OR_DIE(zs_unit_get_param(u[i], t, h));
  for (int64_t j = 0; j < zs_unit_numel(u[i], t); j++)
    if (h[j] != 0.0f) return 0;
  return 1;
}

/* 1 when every rank reads the same params (min and max over the ranks agree everywhere). */
static int ranks_agree(zs_comm *comm, zs_unit **u) {
  int ok = 1;
  for (int i = 0; i < NU; i++)
    for (int t = 0; t < 2; t++) {
      float h[R * C], lo[R * C], hi[R * C];
      const size_t n = (size_t)zs_unit_numel(u[i], t);
      ZS_OK_OR_DIE(zs_unit_get_param(u[i], t, h));
      ZS_OK_OR_DIE(zs_comm_allreduce(comm, h, lo, n, ZS_HOST_F32, ZS_RED_MIN));
      ZS_OK_OR_DIE(zs_comm_allreduce(comm, h, hi, n, ZS_HOST_F32, ZS_RED_MAX));
      ok &= !memcmp(lo, hi, n * sizeof(float));
    }
  return ok;
}

static void run_stage(zs_comm *comm, int stage, const char *dir) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u[NU];
  zs_engine *e = make_engine(comm, stage, u);

  /* (c) Equal values: steps succeed, with a set before them and without. */
  set_all(u, 1, 1);
  ZS_OK_OR_DIE(step(e, u));
  ZS_OK_OR_DIE(step(e, u));

  /* (a) h1.w from a per-rank seed: refused on every rank, naming it; nothing updated. */
  set_all(u, 2, 100 + rank);
  const int64_t steps = zs_engine_step_count(e);
  float before[NU][2][R * C], after[NU][2][R * C];
  read_all(u, before);
  ZS_EXPECT_STATUS(step(e, u), ZS_ERR_INVALID_ARG);
  const char *msg = zs_last_error();
  ZS_EXPECT(strstr(msg, "values set differ across ranks") && strstr(msg, "unit 'h1'") &&
                strstr(msg, "tensor 'w'") && strstr(msg, "rank 0") && strstr(msg, "rank 1") &&
                strstr(msg, "a per-rank seed"),
            "stage %d: the message names the unit, the tensor, the ranks and the fix: %s", stage,
            msg);
  ZS_EXPECT(!strstr(msg, "call zs_engine_broadcast_params") == (stage == 3),
            "stage %d: the remedy offered: %s", stage, msg);
  ZS_EXPECT(zs_engine_step_count(e) == steps, "stage %d: the refused step counted", stage);
  read_all(u, after);
  ZS_EXPECT(!memcmp(before, after, sizeof before), "stage %d: a refused step changed the values",
            stage);
  /* Still refused until the values are fixed (the engine is usable, not failed). */
  ZS_EXPECT_STATUS(step(e, u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "tensor 'w'"), "stage %d: again: %s", stage, zs_last_error());

  /* (b) The remedy: rank 0's values everywhere (master and compute copy), then the step runs.
     With sharded params no rank holds another's values: the program sets equal values. */
  ZS_EXPECT_STATUS(zs_engine_broadcast_params(e, 2), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_broadcast_params(NULL, 0), ZS_ERR_INVALID_ARG);
  if (stage == 3) {
    ZS_EXPECT_STATUS(zs_engine_broadcast_params(e, 0), ZS_ERR_UNSUPPORTED);
    ZS_EXPECT_STATUS(step(e, u), ZS_ERR_INVALID_ARG); /* changed nothing */
    set_all(u, 2, 100);
  } else {
    ZS_OK_OR_DIE(zs_engine_broadcast_params(e, 0));
  }
  ZS_EXPECT(holds(u, 1, 0, 100) && holds(u, 1, 1, 2) && holds(u, 0, 0, 2) && holds(u, 0, 1, 2),
            "stage %d: rank %d does not hold rank 0's values after zs_engine_broadcast_params",
            stage, rank);
  ZS_OK_OR_DIE(zs_unit_gather(u[1]));
  const float *p = zs_unit_param(u[1], 0);
  ZS_EXPECT(p && p[3] == value(1, 0, 3, 100), "stage %d: the compute copy is not rank 0's", stage);
  ZS_OK_OR_DIE(zs_unit_release(u[1]));
  ZS_OK_OR_DIE(step(e, u));
  ZS_EXPECT(zs_engine_step_count(e) == steps + 1, "stage %d: the step did not count", stage);
  ZS_EXPECT(ranks_agree(comm, u), "stage %d: the ranks' params differ after the step", stage);

  /* A tensor set on rank 1 only is named too. */
  float zero[C] = {0};
  if (rank == 1) ZS_OK_OR_DIE(zs_unit_set_param(u[0], 1, zero));
  ZS_EXPECT_STATUS(step(e, u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "unit 'h0' tensor 'b' was set by rank 1 but not by rank 0"),
            "stage %d: names the one-sided set: %s", stage, zs_last_error());
  if (stage == 3)
    ZS_OK_OR_DIE(zs_unit_set_param(u[0], 1, zero));
  else
    ZS_OK_OR_DIE(zs_engine_broadcast_params(e, 1));
  ZS_EXPECT(holds_zero(u, 0, 1), "stage %d: h0.b is not rank 1's zeros", stage);

  /* (c) A checkpoint load (rank-specific shards, not compared) clears values set before it. */
  ZS_OK_OR_DIE(zs_engine_save(e, dir));
  set_all(u, 3, 200 + rank);
  ZS_OK_OR_DIE(zs_engine_load(e, dir));
  ZS_OK_OR_DIE(step(e, u));
  ZS_EXPECT(ranks_agree(comm, u), "stage %d: the ranks' params differ after load", stage);
  zs_engine_destroy(e);

  /* A fresh engine loaded from the checkpoint steps without a set. */
  e = make_engine(comm, stage, u);
  ZS_OK_OR_DIE(zs_engine_load(e, dir));
  ZS_OK_OR_DIE(step(e, u));
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm);
  if (zs_comm_size(comm) != 2) {
    fprintf(stderr, "test_engine_init_agree: run on 2 ranks\n");
    return 1;
  }
  char dir[] = "/tmp/zs_init_agree_XXXXXX";
  if (rank == 0 && !mkdtemp(dir)) return 1;
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  /* --stage N: that stage only (default: 0 to 3). */
  const int only = argc > 2 && !strcmp(argv[1], "--stage") ? atoi(argv[2]) : -1;
  for (int stage = 0; stage <= 3; stage++)
    if (only < 0 || stage == only) run_stage(comm, stage, dir);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  }
  zs_comm_destroy(comm);
  if (rank == 0 && !zs_test_failures) printf("test_engine_init_agree: OK\n");
  ZS_TEST_END("test_engine_init_agree");
}
