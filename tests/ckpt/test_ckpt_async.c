/* Asynchronous saves (ckpt_async = 1), against the synchronous save of the same run:
 *  - zs_engine_save returns staged, not committed (no manifest yet, zs_engine_save_pending); two
 *    more steps change every weight; the commit comes at a later call; the rank files are byte
 *    for byte the synchronous save's at the same step, and a load gives the weights of the save
 *    moment, not of the later steps;
 *  - a staging budget far under each rank's share (the rest written before the call returns)
 *    gives the same bytes, and the ledger's host_pinned counts the staging while it lives;
 *  - a background write that fails (the file size limit, as a full disk, on the last rank only)
 *    is reported by zs_engine_save_wait on every rank, leaves nothing of it on disk, keeps the
 *    engine training, and the previous checkpoint is still the latest; the next save succeeds;
 *  - a save while one is staged commits the first; destroy commits a staged one;
 *  - zs_plan_model's staging bound is the most any rank books (and the budget under one);
 *  - ckpt_write_rate paces the background write (it lasts at least bytes / rate), same bytes;
 *  - ckpt_keep 1 with ckpt_keep_every 2 keeps the newest and the even-numbered checkpoints;
 *  - an array a tensor's group does not keep is saved as zeros (check_unkept_array).
 * Usage (under mpirun, any number of ranks): test_ckpt_async [--stage S] [--offload BITS] */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "engine/engine_model.h"
#include "zs_test.h"

static int rank, world, stage = 3;
static unsigned offload;
static char root[256];
static zs_comm *g_comm;

static zs_config config(int async, size_t staging) {
  zs_config c;
  zs_config_default(&c);
  c.stage = stage;
  c.offload = offload;
  c.deterministic = 1;
  c.comm_timeout_s = 120;
  c.ckpt_async = async;
  c.ckpt_staging_bytes = staging;
  c.ckpt_keep = 0; /* keep every checkpoint: the test compares them */
  return c;
}

/* zs_plan_model's bound on a rank's staging for the test model. */
static size_t planned_staging(size_t budget) {
  int64_t numel[TM_NUNITS];
  for (int i = 0; i < TM_NUNITS; i++) {
    numel[i] = 0;
    for (int k = 0; k < tm_units[i].ntensors; k++)
      numel[i] += tm_numel(i, k);
  }
  const zs_config c = config(1, budget);
  zs_plan_report r;
  ZS_OK_OR_DIE(zs_plan_model(&c, world, numel, TM_NUNITS, 0, SIZE_MAX, SIZE_MAX, &r));
  return r.ckpt_staging;
}

/* The test model's engine under c, committed, its initial values set; with bias_momentum >= 0
   embed.b in a group on SGD with that momentum (embed.w stays on AdamW: one unit, two arrays). */
static zs_engine *make_grouped(const zs_config *c, zs_unit **u, float bias_momentum) {
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(c, g_comm, &e));
  for (int i = 0; i < TM_NUNITS; i++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[i].name, tm_units[i].ntensors, tm_units[i].t, &u[i]));
  if (bias_momentum >= 0) {
    zs_param_group g;
    int id = -1;
    ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
    g.optimizer = "sgd";
    g.momentum = bias_momentum;
    ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
    ZS_OK_OR_DIE(zs_unit_set_group(u[0], 1, id));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(tm_set_init(u));
  return e;
}

static zs_engine *make_with(const zs_config *c, zs_unit **u) {
  return make_grouped(c, u, -1);
}

static zs_engine *make(int async, size_t staging, zs_unit **u) {
  const zs_config c = config(async, staging);
  return make_with(&c, u);
}

static void step(zs_engine *e, zs_unit **u, int s) {
  ZS_OK_OR_DIE(tm_step(e, u, s));
}

static void snapshot(zs_unit **u, float *out) {
  ZS_OK_OR_DIE(tm_snapshot(u, out));
}

/* Rank 0 runs cmd; its exit status on every rank. */
static int sh0(const char *cmd) {
  int rc = 0;
  if (rank == 0) rc = system(cmd);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

static int has_manifest(const char *dir, int seq) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "test -f %s/ckpt-%012d/manifest.json", dir, seq);
  return sh0(cmd) == 0;
}

/* Whether the rank files of checkpoint seq are the same bytes under dirs a and b. */
static int same_files(const char *a, const char *b, int seq) {
  char cmd[1400];
  snprintf(cmd, sizeof cmd,
           "for f in %s/ckpt-%012d/rank-*.zsd; do cmp -s \"$f\" %s/ckpt-%012d/$(basename "
           "\"$f\") || exit 1; done",
           a, seq, b, seq);
  return sh0(cmd) == 0;
}

/* How many of embed.b's momentum buffer values are not zero (zs_unit_get_state). */
static int bias_buffer_nonzero(zs_unit **u) {
  float v[16];
  ZS_OK_OR_DIE(zs_unit_get_state(u[0], 1, "exp_avg", v));
  int nz = 0;
  for (int64_t i = 0; i < tm_numel(0, 1); i++)
    nz += v[i] != 0;
  return nz;
}

/* An array a tensor's optimizer does not keep, in a unit that keeps it for another tensor: embed.b
   on SGD beside embed.w on AdamW. A run at momentum 0.9 saves; one at momentum 0 (the bias keeps
   no buffer) loads it, reads zeros, trains and saves, synchronously and asynchronously (the same
   bytes); one at 0.9 loads that: the bias's buffer must be zeros, not what the first run saved. */
static void check_unkept_array(void) {
  char d1[400], d2[400], d2a[400];
  snprintf(d1, sizeof d1, "%s/unkept1", root);
  snprintf(d2, sizeof d2, "%s/unkept2", root);
  snprintf(d2a, sizeof d2a, "%s/unkept2a", root);
  zs_unit *u[TM_NUNITS];
  zs_config c = config(0, 0);
  zs_engine *e = make_grouped(&c, u, 0.9f);
  for (int s = 0; s < 3; s++)
    step(e, u, s);
  ZS_EXPECT(bias_buffer_nonzero(u) > 0, "momentum 0.9: embed.b's buffer is all zeros");
  ZS_OK_OR_DIE(zs_engine_save(e, d1));
  zs_engine_destroy(e);
  for (int async = 0; async < 2; async++) {
    c = config(async, 0);
    e = make_grouped(&c, u, 0.0f);
    ZS_OK_OR_DIE(zs_engine_load(e, d1));
    ZS_EXPECT(bias_buffer_nonzero(u) == 0, "momentum 0: embed.b's buffer reads values");
    step(e, u, 3);
    ZS_OK_OR_DIE(zs_engine_save(e, async ? d2a : d2));
    zs_engine_destroy(e); /* commits the staged one */
  }
  ZS_EXPECT(same_files(d2, d2a, 4), "the unkept array's asynchronous rank files differ");
  c = config(0, 0);
  e = make_grouped(&c, u, 0.9f);
  ZS_OK_OR_DIE(zs_engine_load(e, d2));
  ZS_EXPECT(
      bias_buffer_nonzero(u) == 0,
      "momentum 0.9 after a momentum-0 run: embed.b's buffer holds %d values of the first run",
      bias_buffer_nonzero(u));
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--stage")) stage = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--offload")) offload = (unsigned)atoi(argv[i + 1]);
  }
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &g_comm));
  rank = zs_comm_rank(g_comm);
  world = zs_comm_size(g_comm);
  if (rank == 0) {
    snprintf(root, sizeof root, "/tmp/zs_ckpt_async_XXXXXX");
    if (!mkdtemp(root)) return 1;
  }
  MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
  const int64_t n = tm_total();
  float *at2 = malloc((size_t)n * 4), *later = malloc((size_t)n * 4), *now = malloc((size_t)n * 4);
  char sync_dir[400], async_dir[400], small_dir[400], fail_dir[400];
  snprintf(sync_dir, sizeof sync_dir, "%s/sync", root);
  snprintf(async_dir, sizeof async_dir, "%s/async", root);
  snprintf(small_dir, sizeof small_dir, "%s/small", root);
  snprintf(fail_dir, sizeof fail_dir, "%s/fail", root);
  zs_unit *u[TM_NUNITS], *v[TM_NUNITS];

  /* The reference: a synchronous save at step 2. */
  zs_engine *r = make(0, 0, v);
  step(r, v, 0);
  step(r, v, 1);
  ZS_OK_OR_DIE(zs_engine_save(r, sync_dir));
  ZS_EXPECT(has_manifest(sync_dir, 2) && !zs_engine_save_pending(r), "the synchronous save");
  zs_engine_destroy(r);

  /* Staged, not committed; later steps do not reach the checkpoint. */
  zs_engine *e = make(1, 0, u);
  step(e, u, 0);
  step(e, u, 1);
  snapshot(u, at2);
  zs_memory m0, m1;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m0));
  ZS_OK_OR_DIE(zs_engine_save(e, async_dir));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m1));
  ZS_EXPECT(zs_engine_save_pending(e) == 1, "no save staged after zs_engine_save");
  ZS_EXPECT(!has_manifest(async_dir, 2), "committed before a later call");
  ZS_EXPECT(m1.host_pinned.cur > m0.host_pinned.cur, "the staging is not in host_pinned (%zu, %zu)",
            m1.host_pinned.cur, m0.host_pinned.cur);
  /* The planner's bound holds every rank's staging and is rank 0's (it holds the first shard of
     every unit: the largest piece). */
  unsigned long long booked = m1.host_pinned.cur - m0.host_pinned.cur, most = 0;
  MPI_Allreduce(&booked, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  ZS_EXPECT(most == planned_staging(0), "staging: the most a rank booked %llu, planned %zu", most,
            planned_staging(0));
  step(e, u, 2);
  step(e, u, 3);
  ZS_OK_OR_DIE(zs_engine_save_wait(e));
  ZS_EXPECT(!zs_engine_save_pending(e) && has_manifest(async_dir, 2), "not committed after wait");
  zs_memory m2;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m2));
  ZS_EXPECT(m2.host_pinned.cur == m1.host_pinned.cur, "the kept staging is not booked alike");
  ZS_EXPECT(same_files(sync_dir, async_dir, 2), "the asynchronous rank files differ");
  snapshot(u, later);
  ZS_EXPECT(memcmp(later, at2, (size_t)n * 4) != 0, "the later steps changed nothing");
  ZS_OK_OR_DIE(zs_engine_load(e, async_dir));
  snapshot(u, now);
  ZS_EXPECT(memcmp(now, at2, (size_t)n * 4) == 0, "the load is not the save moment's weights");

  /* A failed background write on the last rank: reported, nothing left, training goes on. */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 100;
  if (rank == world - 1) setrlimit(RLIMIT_FSIZE, &lim);
  ZS_OK_OR_DIE(zs_engine_save(e, fail_dir)); /* staged: the write fails in the thread */
  step(e, u, 2);                             /* commits or finds the writers still busy */
  zs_status rc = zs_engine_save_wait(e);
  setrlimit(RLIMIT_FSIZE, &old);
  ZS_EXPECT(rc == ZS_ERR_IO, "rank %d: the failed write: %s (%s)", rank, zs_status_str(rc),
            zs_last_error());
  if (rank != world - 1 && world > 1) {
    char want[64];
    snprintf(want, sizeof want, "rank %d", world - 1);
    ZS_EXPECT(strstr(zs_last_error(), want) != NULL, "rank %d: '%s' does not name %s", rank,
              zs_last_error(), want);
  }
  ZS_EXPECT(zs_engine_save_wait(e) == ZS_OK, "the failure is returned twice");
  char cmd[900];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", fail_dir);
  ZS_EXPECT(sh0(cmd) == 0, "the failed save left files in %s", fail_dir);
  step(e, u, 3); /* the engine is usable */
  ZS_OK_OR_DIE(zs_engine_save(e, fail_dir));
  ZS_OK_OR_DIE(zs_engine_save_wait(e));
  ZS_EXPECT(has_manifest(fail_dir, 4), "the save after the failure");

  /* A second save commits the first; destroy commits the second. */
  ZS_OK_OR_DIE(zs_engine_save(e, fail_dir));
  ZS_OK_OR_DIE(zs_engine_save(e, fail_dir));
  ZS_EXPECT(has_manifest(fail_dir, 5), "the first of two saves was not committed by the second");
  zs_engine_destroy(e);
  ZS_EXPECT(has_manifest(fail_dir, 6), "destroy did not commit the staged save");

  /* A staging budget of 64 bytes: the same bytes. */
  e = make(1, 64, u);
  step(e, u, 0);
  step(e, u, 1);
  ZS_OK_OR_DIE(zs_engine_memory(e, &m0));
  ZS_OK_OR_DIE(zs_engine_save(e, small_dir));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m1));
  ZS_EXPECT(m1.host_pinned.cur - m0.host_pinned.cur <= 64, "staging of %zu bytes over the budget",
            m1.host_pinned.cur - m0.host_pinned.cur);
  ZS_EXPECT(planned_staging(64) == 64, "planned staging under a 64-byte budget: %zu",
            planned_staging(64));
  ZS_OK_OR_DIE(zs_engine_save_wait(e));
  ZS_EXPECT(same_files(sync_dir, small_dir, 2), "the budgeted save's rank files differ");
  zs_engine_destroy(e);

  /* A write rate: each rank's 12 bytes an element (master, m, v) of about n / world elements at
     a rate that makes it last at least 0.4 s (the slowest rank has at least the mean), then the
     same bytes. Unpaced, this write takes milliseconds. A lower bound: load only lengthens it. */
  char rate_dir[400];
  snprintf(rate_dir, sizeof rate_dir, "%s/rate", root);
  zs_config rc_cfg = config(1, 0);
  rc_cfg.ckpt_write_rate = (size_t)(12.0 * (double)n / world / 0.4);
  e = make_with(&rc_cfg, u);
  step(e, u, 0);
  step(e, u, 1);
  ZS_OK_OR_DIE(zs_engine_save(e, rate_dir));
  const double t_saved = MPI_Wtime();
  ZS_OK_OR_DIE(zs_engine_save_wait(e));
  const double took = MPI_Wtime() - t_saved;
  ZS_EXPECT(took >= 0.3, "a write at %zu bytes/s took %.3f s, under 0.4 s", rc_cfg.ckpt_write_rate,
            took);
  ZS_EXPECT(same_files(sync_dir, rate_dir, 2), "the paced save's rank files differ");
  zs_engine_destroy(e);

  /* Retention: the newest one and every second, across five saves (synchronous). */
  zs_config c = config(0, 0);
  c.ckpt_keep = 1;
  c.ckpt_keep_every = 2;
  e = make_with(&c, u);
  char keep_dir[400];
  snprintf(keep_dir, sizeof keep_dir, "%s/keep", root);
  for (int s = 0; s < 5; s++) {
    step(e, u, s);
    ZS_OK_OR_DIE(zs_engine_save(e, keep_dir));
  }
  snprintf(cmd, sizeof cmd,
           "test \"$(ls %s | tr '\\n' ' ')\" = 'ckpt-000000000002 ckpt-000000000004 "
           "ckpt-000000000005 '",
           keep_dir);
  ZS_EXPECT(sh0(cmd) == 0, "ckpt_keep 1, ckpt_keep_every 2: not 2, 4 and 5 kept: %s", cmd);
  zs_engine_destroy(e);
  check_unkept_array();

  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  sh0(cmd);
  free(at2);
  free(later);
  free(now);
  if (rank == 0) printf("test_ckpt_async: world %d stage %d offload %u\n", world, stage, offload);
  zs_comm_destroy(g_comm);
  ZS_TEST_END("test_ckpt_async");
}
