/* Checkpoints of units on the NVMe tier (zs_config.nvme_path), against the host-offload engine of
 * the same configuration as the reference (the checkpoint format knows no tiers).
 *
 * Usage (under mpirun): test_ckpt_nvme ROOT PART [--stage S] [--group G] [--in DIR] [--out DIR]
 * [--tier 0|1] [--steps N] [--master fp32|params|remainder|lean] [--moments-bf16 0|1] [--bf16
 * 0|1] [--offload-params 0|1]. ROOT is a directory on a disk (not tmpfs: the test exits 77,
 * skipped, there). The precision options set zs_config.master, moment_dtype and bf16 params (and
 * gradients) for every engine: the tier then keeps the mode's own files (remainders, bf16 moments;
 * no master file in lean mode), and the checkpoint format (fp32 master, m, v) is the same as host
 * offload's.
 *
 * PART "equal": a host-offload engine H and a tier engine T (two large units on the tier, two
 * small ones in memory) train the same steps; their checkpoints are byte-identical, and so are
 * their safetensors exports. T steps on, loads H's checkpoint: its weights are H's, its next save
 * is byte-identical to H's checkpoint, and H and T step on to the same bits. A full disk under
 * the checkpoint fails the save only (the engine goes on). Then the tier's failures,
 * each a file of the last rank's tier removed or truncated under the engine: a save fails with
 * ZS_ERR_IO on every rank (the failing rank's message names the tier's file and the offset), the
 * previous checkpoint directory is byte for byte what it was, the engine has failed on every
 * rank, and a fresh engine loads that checkpoint; a load (truncated file) and an export (removed
 * file) fail the same way, the export publishing no file.
 *
 * PART "memory": one unit of 8 Mi elements on the tier (32 MiB per array) saves and loads while
 * this process's peak resident memory (VmHWM, reset first) grows by less than 8 MiB, and its
 * checkpoint is byte-identical to the host-offload engine's.
 *
 * PART "save" (world-size changes, with ckpt_nvme_cross.sh): trains --steps steps with the state
 * on the tier (--tier 1) or in host memory (--tier 0) and saves to --out. PART "reload": loads
 * --in into an engine (--tier as above) and saves it to --out; checkpoints of the same state
 * saved at the same world size must be identical whatever the tier. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bf16.h"
#include "engine/engine_model.h"
#include "offload/nvme_dir.h"
#include "zs_test.h"

static int rank, world;
static zs_comm *g_comm;
static int g_bf16; /* --bf16: params and gradients in bf16 (step reads and adds through them) */

/* The model: two units of 2 Mi elements (24 MiB of optimizer state each on one rank, 6 MiB per
   rank when four shard it) that the cap below puts on the tier, and two small ones it leaves in
   the host arena (which needs about 4 MiB of the cap for itself). */
#define NU 4
static const tm_unit_def units[NU] = {
    {"embed", 2, {{"w", 2, {4096, 489, 0, 0}, 0}, {"b", 1, {489, 0, 0, 0}, 1}}},
    {"tiny", 1, {{"s", 1, {1, 0, 0, 0}, 0}}},
    {"block",
     3,
     {{"w", 2, {13, 3, 0, 0}, 0}, {"ln", 1, {2, 0, 0, 0}, 1}, {"c", 1, {3001, 0, 0, 0}, 0}}},
    {"head", 1, {{"w", 1, {2000003, 0, 0, 0}, 0}}},
};
#define CHUNK ((size_t)64 << 10) /* offload_chunk: 2.25 MiB of staging */
/* offload_host_bytes of the tier runs: the staging (3 slots of CHUNK elements of each array of the
   mode, zshard.h) and 5 MiB for the arena's own. */
static size_t cap_bytes(int master, int m16) {
  const size_t mb = master == ZS_MASTER_LEAN ? 0 : master == ZS_MASTER_REMAINDER ? 2 : 4;
  return 3 * CHUNK * (mb + 2 * (m16 ? 2u : 4u)) + ((size_t)5 << 20);
}

static int64_t numel(int u, int t) {
  int64_t n = 1;
  for (int d = 0; d < units[u].t[t].ndim; d++)
    n *= units[u].t[t].shape[d];
  return n;
}

/* Global index of element 0 of (u, t) across the model. */
static int64_t base(int u, int t) {
  int64_t b = 0;
  for (int i = 0; i < u; i++)
    for (int k = 0; k < units[i].ntensors; k++)
      b += numel(i, k);
  for (int k = 0; k < t; k++)
    b += numel(u, k);
  return b;
}

static int64_t total(void) {
  return base(NU - 1, 0) + numel(NU - 1, 0);
}

typedef struct {
  int stage, group, tier, steps;
  int master, m16, bf16; /* zs_config.master, bf16 moments, bf16 params */
  int offload_params; /* --offload-params: ZS_OFFLOAD_PARAMS too (stage 3: shards in the arena) */
  const char *in, *out;
  char root[512]; /* this run's own directory under ROOT */
  char tier_dir[600];
} opts;

/* A shell command on rank 0 (its exit status, 0 on the others), then every rank waits. */
static int sh0(const char *cmd) {
  int rc = 0;
  if (rank == 0) rc = system(cmd);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

/* The units whose optimizer state is on the NVMe tier (zs_engine_facts_get; -1 without the
   tier's placement). */
static int units_on_tier(zs_engine *e) {
  const zs_engine_facts f = zs_test_facts(e);
  return f.nvme ? f.nvme_units : -1;
}

/* The model's engine: host offload of the optimizer state, and with `tier` the NVMe tier under
   tier_dir with the cap cap_bytes (embed and head on the tier). */
static zs_engine *make_in(const opts *o, int tier, const char *tier_dir, zs_unit **u) {
  zs_config c;
  zs_config_default(&c);
  c.stage = o->stage;
  c.shard_group_size = o->group; /* 0: the world */
  c.offload = ZS_OFFLOAD_OPTIMIZER | (o->offload_params ? ZS_OFFLOAD_PARAMS : 0u);
  c.deterministic = 1;
  c.comm_timeout_s = 60;
  c.offload_chunk = CHUNK;
  c.master = o->master;
  c.moment_dtype = o->m16 ? ZS_BF16 : ZS_F32;
  c.param_dtype = c.reduce_dtype = o->bf16 ? ZS_BF16 : ZS_F32;
  if (tier) {
    c.nvme_path = tier_dir;
    c.offload_host_bytes = cap_bytes(o->master, o->m16);
    /* Param shards in the arena stay there: the cap holds them too (fp32, this rank's share). */
    if (o->offload_params) c.offload_host_bytes += (size_t)(total() / world + 1) * 4 + (1u << 20);
  }
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, g_comm, &e));
  for (int i = 0; i < NU; i++)
    ZS_OK_OR_DIE(zs_engine_add_unit(e, units[i].name, units[i].ntensors, units[i].t, &u[i]));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  if (tier) {
    const int d = units_on_tier(e);
    ZS_EXPECT(d == 2, "%d units on the tier, not embed and head: %s", d, zs_engine_info(e));
    for (int i = 0; i < NU; i++) {
      int on = -1;
      ZS_OK_OR_DIE(zs_unit_placed(u[i], NULL, &on));
      const int want = !strcmp(units[i].name, "embed") || !strcmp(units[i].name, "head");
      ZS_EXPECT(on == want, "unit %s: on the tier %d, want %d", units[i].name, on, want);
    }
  }
  for (int i = 0; i < NU; i++)
    for (int k = 0; k < units[i].ntensors; k++) {
      const int64_t n = zs_unit_numel(u[i], k);
      float *h = malloc((size_t)n * 4);
      for (int64_t j = 0; j < n; j++)
        h[j] = tm_init(base(i, k) + j);
      ZS_OK_OR_DIE(zs_unit_set_param(u[i], k, h));
      free(h);
    }
  return e;
}

static zs_engine *make(const opts *o, int tier, zs_unit **u) {
  return make_in(o, tier, o->tier_dir, u);
}

/* One step with gradient a * (p - t) of batch s (every rank the same batch). */
static void step(zs_engine *e, zs_unit **u, int s) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = NU - 1; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    for (int k = 0; k < units[i].ntensors; k++) {
      const void *p = zs_unit_param(u[i], k);
      void *g = zs_unit_grad(u[i], k);
      for (int64_t j = 0; j < zs_unit_numel(u[i], k); j++) {
        const int64_t x = base(i, k) + j;
        if (g_bf16) { /* widened exactly, the sum rounded to nearest even as a bf16 backward */
          uint16_t *gb = g;
          const float pv = zs_bf16_to_f32(((const uint16_t *)p)[j]);
          gb[j] = zs_f32_to_bf16(zs_bf16_to_f32(gb[j]) + tm_a(s, x) * (pv - tm_t(s, x)));
        } else {
          ((float *)g)[j] += tm_a(s, x) * (((const float *)p)[j] - tm_t(s, x));
        }
      }
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
}

/* Every weight (collective) into out (total() floats). */
static void snapshot(zs_unit **u, float *out) {
  for (int i = 0; i < NU; i++)
    for (int k = 0; k < units[i].ntensors; k++)
      ZS_OK_OR_DIE(zs_unit_get_param(u[i], k, out + base(i, k)));
}

/* 1 when both engines' weights are the same bits. */
static int same_weights(zs_unit **a, zs_unit **b) {
  const size_t n = (size_t)total();
  float *x = malloc(n * 4), *y = malloc(n * 4);
  snapshot(a, x);
  snapshot(b, y);
  const int same = memcmp(x, y, n * 4) == 0;
  free(x);
  free(y);
  return same;
}

/* Byte-identical trees (diff -r: the same names, the same bytes). */
static int same_tree(const char *a, const char *b) {
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "diff -r %s %s", a, b);
  return sh0(cmd) == 0;
}

/* Checkpoint seq's directory under dir (seq: the step count saved, or the next free number when
   dir already holds that one or a higher: after 3 steps 3, a reload of step 3 saved again 4). */
static void ck(char *out, size_t n, const char *dir, int seq) {
  snprintf(out, n, "%s/ckpt-%012d", dir, seq);
}

/* Byte-identical rank files of two checkpoints (their manifests differ only where the seq does,
   so they are compared by the caller when the seqs are the same). */
static int same_rank_files(const char *a, const char *b) {
  char cmd[1400];
  snprintf(cmd, sizeof cmd,
           "for f in %s/rank-*.zsd; do cmp \"$f\" %s/\"$(basename \"$f\")\" || exit 1; done && "
           "test \"$(ls %s | grep -c zsd)\" = \"$(ls %s | grep -c zsd)\"",
           a, b, a, b);
  return sh0(cmd) == 0;
}

/* Runs `cmd` with %s = this rank's tier directory (<tier_dir>/rank<R>-<pid>-<n>, as a shell
   pattern: the engine under test holds the only one) on the last rank only, then every rank
   waits. */
static void on_last_tier(const char *tier_dir, const char *cmd) {
  if (rank == world - 1) {
    char full[2000], dir[800];
    snprintf(dir, sizeof dir, "%s/rank%d-%ld-*", tier_dir, rank, (long)getpid());
    snprintf(full, sizeof full, cmd, dir);
    if (system(full) != 0) ZS_EXPECT(0, "%s", full);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The failing rank's message names a file of its tier directory; every rank's engine failed. */
static void failed_everywhere(zs_engine *e, zs_status rc, const opts *o, const char *tier_dir,
                              const char *what) {
  ZS_EXPECT(rc == ZS_ERR_IO, "%s: %s (%s), wanted ZS_ERR_IO on every rank", what, zs_status_str(rc),
            zs_last_error());
  if (rank == world - 1) {
    char want[700];
    snprintf(want, sizeof want, "%s/rank%d-", tier_dir, rank); /* the tier's rank directory */
    ZS_EXPECT(strstr(zs_last_error(), want) != NULL, "%s: the message '%s' does not name '%s'",
              what, zs_last_error(), want);
    ZS_EXPECT(strstr(zs_last_error(), "offset") != NULL,
              "%s: the message '%s' does not name the offset", what, zs_last_error());
  }
  char never[700];
  snprintf(never, sizeof never, "%s/never", o->root);
  ZS_EXPECT(zs_test_save(e, never) == ZS_ERR_STATE, "%s: the engine did not fail", what);
}

static void part_equal(const opts *o) {
  zs_unit *uh[NU], *ut[NU], *uf[NU];
  char hdir[700], tdir[700], a[800], b[800];
  snprintf(hdir, sizeof hdir, "%s/host", o->root);
  snprintf(tdir, sizeof tdir, "%s/tier", o->root);
  zs_engine *h = make(o, 0, uh), *t = make(o, 1, ut);
  for (int s = 0; s < 3; s++) {
    step(h, uh, s);
    step(t, ut, s);
  }
  ZS_EXPECT(same_weights(uh, ut), "the tier's weights differ from host offload's after 3 steps");
  ZS_OK_OR_DIE(zs_test_save(h, hdir));
  ZS_OK_OR_DIE(zs_test_save(t, tdir));
  ZS_EXPECT(same_tree(hdir, tdir), "the tier's checkpoint differs from host offload's");
  snprintf(a, sizeof a, "%s/host.safetensors", o->root);
  snprintf(b, sizeof b, "%s/tier.safetensors", o->root);
  ZS_OK_OR_DIE(zs_engine_export_safetensors(h, a));
  ZS_OK_OR_DIE(zs_engine_export_safetensors(t, b));
  char cmd[2000];
  snprintf(cmd, sizeof cmd, "cmp %s %s", a, b);
  ZS_EXPECT(sh0(cmd) == 0, "the tier's export differs from host offload's");

  /* T moves on, then loads H's checkpoint: H's state, which it saves again as H did. */
  step(t, ut, 3);
  ZS_EXPECT(!same_weights(uh, ut), "the extra step changed nothing");
  ck(a, sizeof a, hdir, 3);
  ZS_OK_OR_DIE(zs_engine_load(t, a));
  ZS_EXPECT(same_weights(uh, ut), "after the load the tier engine's weights are not H's");
  ZS_OK_OR_DIE(zs_test_save(t, tdir));
  ck(b, sizeof b, tdir, 4);
  ZS_EXPECT(same_rank_files(a, b), "the loaded tier state saves other bytes than its source");
  step(h, uh, 3);
  step(t, ut, 3);
  ZS_EXPECT(same_weights(uh, ut), "the step after the load differs from host offload's");
  ZS_OK_OR_DIE(zs_test_save(h, hdir));
  ZS_OK_OR_DIE(zs_test_save(t, tdir));
  ck(a, sizeof a, hdir, 4);
  ck(b, sizeof b, tdir, 5);
  ZS_EXPECT(same_rank_files(a, b), "the checkpoints after the load's step differ");

  /* A full disk under the checkpoint (the file size limit on the last rank) is the checkpoint's
     failure, not the tier's: ZS_ERR_IO everywhere, nothing of it stays, and the engine goes on (its
     next save is H's bytes again). */
  snprintf(cmd, sizeof cmd, "cp -a %s %s/tier_before", tdir, o->root);
  ZS_EXPECT(sh0(cmd) == 0, "%s", cmd);
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 1000;
  if (rank == world - 1) setrlimit(RLIMIT_FSIZE, &lim);
  zs_status rc = zs_test_save(t, tdir);
  setrlimit(RLIMIT_FSIZE, &old);
  ZS_EXPECT(rc == ZS_ERR_IO, "a save over the file size limit: %s (%s)", zs_status_str(rc),
            zs_last_error());
  snprintf(a, sizeof a, "%s/tier_before", o->root);
  ZS_EXPECT(same_tree(a, tdir), "the save over the file size limit changed the directory");
  ZS_OK_OR_DIE(zs_test_save(h, hdir));
  ZS_OK_OR_DIE(zs_test_save(t, tdir));
  ck(a, sizeof a, hdir, 5);
  ck(b, sizeof b, tdir, 6);
  ZS_EXPECT(same_rank_files(a, b), "the save after a full disk differs from host offload's");

  /* A save whose tier read fails on the last rank (a removed file): ZS_ERR_IO everywhere, the
     engine failed, the last checkpoint untouched (compared with a copy taken before). */
  snprintf(cmd, sizeof cmd, "rm -rf %s/tier_before && cp -a %s %s/tier_before", o->root, tdir,
           o->root);
  ZS_EXPECT(sh0(cmd) == 0, "%s", cmd);
  on_last_tier(o->tier_dir, "rm %s/u3.m"); /* head's m: read after its master */
  rc = zs_test_save(t, tdir);
  failed_everywhere(t, rc, o, o->tier_dir, "save");
  snprintf(a, sizeof a, "%s/tier_before", o->root);
  ZS_EXPECT(same_tree(a, tdir), "the failed save changed the checkpoint directory");
  zs_engine_destroy(t);
  /* The last checkpoint still loads: the state H had when it was saved. */
  t = make(o, 1, ut);
  ZS_OK_OR_DIE(zs_engine_load(t, tdir));
  ZS_EXPECT(same_weights(uh, ut), "the last checkpoint does not load H's weights");
  ZS_EXPECT(zs_engine_step_count(t) == 4, "step count %lld", (long long)zs_engine_step_count(t));

  /* A load whose tier write fails on the last rank (a truncated file): the same status
     everywhere, and the engine (half loaded) has failed on every rank. */
  snprintf(cmd, sizeof cmd, "mkdir %s/nvme2", o->root);
  ZS_EXPECT(sh0(cmd) == 0, "%s", cmd);
  snprintf(b, sizeof b, "%s/nvme2", o->root); /* a second engine beside t: a tier of its own */
  zs_engine *f = make_in(o, 1, b, uf);
  on_last_tier(b, "truncate -s 0 %s/u0.v");
  rc = zs_engine_load(f, tdir);
  failed_everywhere(f, rc, o, b, "load");
  zs_engine_destroy(f);

  /* An export whose tier read fails on the last rank (a removed file: the fp32 master's, or the
     remainders'): no file, the engine failed everywhere. Lean mode's export reads no file of the
     tier (its params are its master), nor does ZS_MASTER_PARAMS's with the params in the arena. */
  if (o->master != ZS_MASTER_LEAN && !(o->master == ZS_MASTER_PARAMS && o->offload_params)) {
    snprintf(a, sizeof a, "%s/failed.safetensors", o->root);
    on_last_tier(o->tier_dir,
                 o->master == ZS_MASTER_REMAINDER ? "rm %s/u3.rem" : "rm %s/u3.master");
    rc = zs_engine_export_safetensors(t, a);
    failed_everywhere(t, rc, o, o->tier_dir, "export");
    snprintf(cmd, sizeof cmd, "test ! -e %s && test ! -e %s.tmp", a, a);
    ZS_EXPECT(sh0(cmd) == 0, "the failed export left a file");
  }
  zs_engine_destroy(t);
  zs_engine_destroy(h);
}

/* VmHWM or VmRSS of this process in bytes. */
static size_t vm(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, strlen(key))) kb = (size_t)strtoull(line + strlen(key) + 1, NULL, 10);
  if (f) fclose(f);
  return kb * 1024;
}

/* Resets VmHWM to the current resident size (Linux: clear_refs 5); 0 when it cannot. */
static int reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return 0;
  const int ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}

#define BIG ((int64_t)8 << 20)

static zs_engine *make_big(const opts *o, int tier, zs_unit **u) {
  zs_config c;
  zs_config_default(&c);
  c.stage = 1;
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_chunk = CHUNK;
  if (tier) {
    c.nvme_path = o->tier_dir;
    c.offload_host_bytes = cap_bytes(ZS_MASTER_FP32, 0); /* the big unit goes to the tier */
  }
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, g_comm, &e));
  const zs_tensor_desc d = {"w", 1, {BIG, 0, 0, 0}, 0};
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "big", 1, &d, u));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  if (tier) ZS_EXPECT(units_on_tier(e) == 1, "not on the tier: %s", zs_engine_info(e));
  float *h = malloc((size_t)BIG * 4);
  for (int64_t j = 0; j < BIG; j++)
    h[j] = tm_init(j);
  ZS_OK_OR_DIE(zs_unit_set_param(*u, 0, h));
  free(h);
  return e;
}

static void part_memory(const opts *o) {
  zs_unit *uh, *ut;
  char hdir[700], tdir[700];
  snprintf(hdir, sizeof hdir, "%s/host", o->root);
  snprintf(tdir, sizeof tdir, "%s/tier", o->root);
  zs_engine *t = make_big(o, 1, &ut);
  const size_t limit = 8u << 20; /* a quarter of one array of the unit */
  ZS_EXPECT(reset_peak(), "cannot reset VmHWM (/proc/self/clear_refs)");
  size_t before = vm("VmRSS:");
  ZS_OK_OR_DIE(zs_test_save(t, tdir));
  size_t grew = vm("VmHWM:") - before;
  printf("rank %d: the save of %lld elements' state raised the peak by %zu KiB\n", rank,
         (long long)BIG, grew >> 10);
  ZS_EXPECT(grew < limit, "the save raised the peak by %zu bytes (bound %zu)", grew, limit);
  ZS_EXPECT(reset_peak(), "cannot reset VmHWM");
  before = vm("VmRSS:");
  ZS_OK_OR_DIE(zs_engine_load(t, tdir));
  grew = vm("VmHWM:") - before;
  printf("rank %d: the load raised the peak by %zu KiB\n", rank, grew >> 10);
  ZS_EXPECT(grew < limit, "the load raised the peak by %zu bytes (bound %zu)", grew, limit);
  zs_engine_destroy(t);
  zs_engine *h = make_big(o, 0, &uh);
  ZS_OK_OR_DIE(zs_test_save(h, hdir));
  zs_engine_destroy(h);
  ZS_EXPECT(same_tree(hdir, tdir), "the tier's checkpoint differs from host offload's");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ROOT PART [options]\n", argv[0]);
    return 2;
  }
  opts o = {.stage = 3, .steps = 3, .tier = 1};
  const char *base = argv[1], *part = argv[2];
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--stage")) o.stage = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--group")) o.group = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--tier")) o.tier = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--steps")) o.steps = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--in")) o.in = argv[i + 1];
    if (!strcmp(argv[i], "--out")) o.out = argv[i + 1];
    if (!strcmp(argv[i], "--moments-bf16")) o.m16 = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--bf16")) o.bf16 = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--offload-params")) o.offload_params = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--master"))
      o.master = !strcmp(argv[i + 1], "params")      ? ZS_MASTER_PARAMS
                 : !strcmp(argv[i + 1], "remainder") ? ZS_MASTER_REMAINDER
                 : !strcmp(argv[i + 1], "lean")      ? ZS_MASTER_LEAN
                                                     : ZS_MASTER_FP32;
  }
  g_bf16 = o.bf16;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &g_comm));
  rank = zs_comm_rank(g_comm);
  world = zs_comm_size(g_comm);
  int skip = 0;
  if (rank == 0) {
    zs_nvme_dir *d = NULL;
    const zs_status rc = zs_nvme_dir_open(base, 9999, &d);
    if (rc == ZS_ERR_UNSUPPORTED) {
      printf("SKIP: %s cannot hold an NVMe tier: %s\n", base, zs_last_error());
      skip = 1;
    } else {
      ZS_OK_OR_DIE(rc);
      zs_nvme_dir_close(d);
    }
    snprintf(o.root, sizeof o.root, "%s/zs_ckpt_nvme_XXXXXX", base);
    if (!skip && !mkdtemp(o.root)) skip = 2;
  }
  MPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (skip) {
    zs_comm_destroy(g_comm);
    return skip == 1 ? 77 : 1;
  }
  MPI_Bcast(o.root, sizeof o.root, MPI_CHAR, 0, MPI_COMM_WORLD);
  snprintf(o.tier_dir, sizeof o.tier_dir, "%s/nvme", o.root);
  if (rank == 0 && mkdir(o.tier_dir, 0755) != 0) ZS_EXPECT(0, "mkdir %s", o.tier_dir);
  MPI_Barrier(MPI_COMM_WORLD);
  zs_unit *u[NU];
  if (!strcmp(part, "equal")) {
    part_equal(&o);
  } else if (!strcmp(part, "memory")) {
    part_memory(&o);
  } else if (!strcmp(part, "save") && o.out) {
    zs_engine *e = make(&o, o.tier, u);
    for (int s = 0; s < o.steps; s++)
      step(e, u, s);
    ZS_OK_OR_DIE(zs_test_save(e, o.out));
    zs_engine_destroy(e);
  } else if (!strcmp(part, "reload") && o.in && o.out) {
    zs_engine *e = make(&o, o.tier, u);
    ZS_OK_OR_DIE(zs_engine_load(e, o.in));
    ZS_OK_OR_DIE(zs_test_save(e, o.out));
    zs_engine_destroy(e);
  } else {
    ZS_EXPECT(0, "unknown part '%s' or missing --in/--out", part);
  }
  if (rank == 0)
    printf("test_ckpt_nvme %s: world %d stage %d: %d failure(s)\n", part, world, o.stage,
           zs_test_failures);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", o.root);
  if (zs_test_failures == 0) sh0(cmd); /* kept for a look when something failed */
  zs_comm_destroy(g_comm);
  ZS_TEST_END("test_ckpt_nvme");
}
