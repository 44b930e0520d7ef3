/* Damaged, mismatched and unwritable checkpoints: every refused load returns the right status and
 * message and leaves the engine exactly as it was (its weights and step count compared bit for
 * bit before and after), and the good checkpoint still loads the saved bits afterwards. A save
 * that hits the file size limit (RLIMIT_FSIZE: EFBIG, like a full disk) returns ZS_ERR_IO, leaves
 * no temporary file and no new checkpoint, and the previous one still loads.
 * Usage (under mpirun, any number of ranks): test_ckpt_damage [--stage S] [--offload BITS] */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt_format.h"
#include "engine/engine_model.h"
#include "zs_test.h"

static int rank, world;
static char root[256];

/* File surgery by a shell command on rank 0, then every rank waits. */
static void sh0(const char *cmd) {
  if (rank == 0) {
    if (system(cmd) != 0) {
      fprintf(stderr, "FATAL: %s\n", cmd);
      exit(1);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Flips the byte at `off` (negative: from the end) of a file (rank 0). */
static void flip(const char *path, long off) {
  if (rank == 0) {
    FILE *f = fopen(path, "r+b");
    if (!f || fseek(f, off, off < 0 ? SEEK_END : SEEK_SET) != 0) {
      fprintf(stderr, "FATAL: cannot open %s\n", path);
      exit(1);
    }
    long at = ftell(f);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Rewrites the manifest at path through edit (rank 0; its checksum recomputed), then a barrier. */
static void rewrite_manifest(const char *path, void (*edit)(zs_ckpt_manifest *m)) {
  if (rank == 0) {
    FILE *f = fopen(path, "rb");
    char *buf = malloc(1 << 20);
    size_t len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    zs_ckpt_manifest m;
    ZS_OK_OR_DIE(zs_ckpt_manifest_parse(buf, len, &m));
    edit(&m);
    char *text = NULL;
    ZS_OK_OR_DIE(zs_ckpt_manifest_write(&m, &text));
    f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
    free(text);
    free(buf);
    zs_ckpt_manifest_free(&m);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
static void set_version_99(zs_ckpt_manifest *m) {
  m->format_version = 99;
}
/* Tensor parallelism claimed at tp 2 with a tensor split along a dimension
   two ranks cannot share (an odd one). */
static void tp_odd_split(zs_ckpt_manifest *m) {
  m->tp_size = 2;
  for (int i = 0; i < m->nunits; i++)
    for (int k = 0; k < m->units[i].ntensors; k++)
      if (m->units[i].t[k].shape[0] % 2) {
        m->units[i].t[k].tp = ZS_TP_SPLIT_DIM0;
        return;
      }
  ZS_EXPECT(0, "no tensor with an odd first dimension");
}
/* At tp 2 with every tensor whole, one segment moved to tp rank 1: tp rank 0's copy (the one a
   load reads) lacks its range. */
static void tp_missing_slice(zs_ckpt_manifest *m) {
  m->tp_size = 2;
  m->files[0].segs[0].tp = 1;
}
/* A full segment claimed to hold the master alone: the file's data is more than its segments. */
static void fewer_arrays(zs_ckpt_manifest *m) {
  m->files[0].segs[m->files[0].nsegs - 1].narrays = 1;
}
/* The manifest as the format wrote it before it named the optimizer (AdamW's, implied). */
static void drop_optimizer(zs_ckpt_manifest *m) {
  ZS_EXPECT(!strcmp(m->optimizer, "adamw"), "the manifest names optimizer '%s'", m->optimizer);
  m->optimizer[0] = 0;
  char *text = NULL;
  ZS_OK_OR_DIE(zs_ckpt_manifest_write(m, &text));
  const char *k1 = strstr(text, "\"optimizer\""); /* "sharded": {"optimizer": ...} has one */
  ZS_EXPECT(k1 && !strstr(k1 + 1, "\"optimizer\""), "the older manifest names the optimizer");
  free(text);
}

static zs_comm *g_comm;

/* The test model (other 0), another model (1), under SGD (2), with block.w in a Muon group (3),
   with the block frozen (4). */
static zs_engine *make(int stage, unsigned offload, int other, zs_unit **u) {
  zs_config c;
  zs_config_default(&c);
  c.stage = stage;
  c.offload = offload;
  c.deterministic = 1;
  c.comm_timeout_s = 60;
  if (other == 2) { /* the same model under another optimizer */
    c.optimizer = ZS_OPT_SGD;
    c.sgd.momentum = 0.9f;
  }
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, g_comm, &e));
  for (int i = 0; i < TM_NUNITS; i++) {
    tm_unit_def d = tm_units[i];
    if (other == 1 && i == 2) d.t[0].shape[0] = 12; /* another model: one shape differs */
    ZS_OK_OR_DIE(zs_engine_add_unit(e, d.name, d.ntensors, d.t, &u[i]));
  }
  if (other == 4) ZS_OK_OR_DIE(zs_unit_freeze(u[2], 1)); /* the same model, block frozen */
  if (other == 3) { /* the same model with block.w in a group on Muon */
    zs_param_group g;
    int id = -1;
    ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
    g.optimizer = "muon";
    ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
    ZS_OK_OR_DIE(zs_unit_set_group(u[2], 0, id));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(tm_set_init(u));
  return e;
}

/* One step with gradient a * (p - t) of batch s (every rank the same batch). */
static void step(zs_engine *e, zs_unit **u, int s) {
  ZS_OK_OR_DIE(tm_step(e, u, s));
}

/* Every weight (collective) into out (tm_total floats). */
static void snapshot(zs_unit **u, float *out) {
  ZS_OK_OR_DIE(tm_snapshot(u, out));
}

static int same(zs_unit **u, const float *want) {
  const int64_t n = tm_total();
  float *now = malloc((size_t)n * 4);
  snapshot(u, now);
  int ok = memcmp(now, want, (size_t)n * 4) == 0;
  free(now);
  return ok;
}

/* A refused load: status, message (on the rank that found it, when `who` >= 0) and no change. */
static void refused(zs_engine *e, zs_unit **u, const char *dir, zs_status want, const char *needle,
                    int who, const float *before, int64_t steps, const char *what) {
  const zs_status rc = zs_engine_load(e, dir);
  ZS_EXPECT(rc == want, "%s: load returned %s (%s), wanted %s", what, zs_status_str(rc),
            zs_last_error(), zs_status_str(want));
  if (needle && (who < 0 || who == rank))
    ZS_EXPECT(strstr(zs_last_error(), needle) != NULL, "%s: message '%s' does not say '%s'", what,
              zs_last_error(), needle);
  ZS_EXPECT(zs_engine_step_count(e) == steps, "%s: the step count changed", what);
  ZS_EXPECT(same(u, before), "%s: a refused load changed the weights", what);
}

/* A fresh copy of the good checkpoint at root/name. */
static void fresh(const char *good, char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", root, name);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", out, good, out);
  sh0(cmd);
}

int main(int argc, char **argv) {
  int stage = 3;
  unsigned offload = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--stage")) stage = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--offload")) offload = (unsigned)atoi(argv[i + 1]);
  }
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &g_comm));
  rank = zs_comm_rank(g_comm);
  world = zs_comm_size(g_comm);
  if (rank == 0) {
    snprintf(root, sizeof root, "/tmp/zs_ckpt_damage_XXXXXX");
    if (!mkdtemp(root)) return 1;
  }
  MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
  zs_unit *u[TM_NUNITS], *ub[TM_NUNITS];
  zs_engine *e = make(stage, offload, 0, u);
  const int64_t n = tm_total();
  float *saved = malloc((size_t)n * 4), *later = malloc((size_t)n * 4);
  float *after2 = malloc((size_t)n * 4), *again = malloc((size_t)n * 4);
  step(e, u, 0);
  step(e, u, 1);
  char good[512], dir[512], p[700];
  snprintf(good, sizeof good, "%s/good", root);
  ZS_OK_OR_DIE(zs_test_save(e, good));
  snapshot(u, saved);
  step(e, u, 2); /* the engine now differs from the checkpoint */
  snapshot(u, later);
  memcpy(after2, later, (size_t)n * 4);
  ZS_EXPECT(memcmp(saved, later, (size_t)n * 4) != 0, "the extra step changed nothing");
  const char *ck = "ckpt-000000000002"; /* named by the step count saved */

  fresh(good, dir, sizeof dir, "data");
  snprintf(p, sizeof p, "%s/%s/rank-00000.zsd", dir, ck);
  flip(p, -5);
  refused(e, u, dir, ZS_ERR_CORRUPT, "fails its checksum", 0, later, 3, "flipped data byte");

  fresh(good, dir, sizeof dir, "header");
  snprintf(p, sizeof p, "%s/%s/rank-00000.zsd", dir, ck);
  flip(p, 20);
  refused(e, u, dir, ZS_ERR_CORRUPT, "header", 0, later, 3, "flipped header byte");

  fresh(good, dir, sizeof dir, "table");
  snprintf(p, sizeof p, "%s/%s/rank-00000.zsd", dir, ck);
  flip(p, ZS_CKPT_HEADER_BYTES + 3);
  refused(e, u, dir, ZS_ERR_CORRUPT, "checksum", 0, later, 3, "flipped block-table byte");

  fresh(good, dir, sizeof dir, "padding"); /* the zeros before the aligned data */
  snprintf(p, sizeof p, "%s/%s/rank-00000.zsd", dir, ck);
  flip(p, ZS_CKPT_DATA_ALIGN - 1);
  refused(e, u, dir, ZS_ERR_CORRUPT, "is not zero", 0, later, 3, "flipped padding byte");

  fresh(good, dir, sizeof dir, "manifest");
  snprintf(p, sizeof p, "%s/%s/manifest.json", dir, ck);
  flip(p, 300);
  refused(e, u, dir, ZS_ERR_CORRUPT, "manifest", -1, later, 3, "flipped manifest byte");

  fresh(good, dir, sizeof dir, "truncated");
  snprintf(p, sizeof p, "%s/%s/rank-00000.zsd", dir, ck);
  char cmd[1600];
  snprintf(cmd, sizeof cmd, "truncate -s -10 %s", p);
  sh0(cmd);
  refused(e, u, dir, ZS_ERR_CORRUPT, "truncated", 0, later, 3, "truncated file");

  fresh(good, dir, sizeof dir, "missing");
  snprintf(p, sizeof p, "%s/%s/rank-00000.zsd", dir, ck);
  snprintf(cmd, sizeof cmd, "rm %s", p);
  sh0(cmd);
  refused(e, u, dir, ZS_ERR_CORRUPT, "missing", 0, later, 3, "missing shard");

  /* A newer format: a manifest with a valid checksum and version 99. */
  fresh(good, dir, sizeof dir, "version");
  snprintf(p, sizeof p, "%s/%s/manifest.json", dir, ck);
  rewrite_manifest(p, set_version_99);
  refused(e, u, dir, ZS_ERR_CORRUPT, "unknown format version 99", -1, later, 3, "version 99");
  fresh(good, dir, sizeof dir, "tp_split");
  snprintf(p, sizeof p, "%s/%s/manifest.json", dir, ck);
  rewrite_manifest(p, tp_odd_split);
  refused(e, u, dir, ZS_ERR_CORRUPT, "that 2 tp ranks cannot share equally", -1, later, 3,
          "tp split of an odd dimension");
  fresh(good, dir, sizeof dir, "tp_missing");
  snprintf(p, sizeof p, "%s/%s/manifest.json", dir, ck);
  rewrite_manifest(p, tp_missing_slice);
  refused(e, u, dir, ZS_ERR_CORRUPT, "of tp rank 0's slices", 0, later, 3,
          "tp rank 0's slices incomplete");
  fresh(good, dir, sizeof dir, "narrays");
  snprintf(p, sizeof p, "%s/%s/manifest.json", dir, ck);
  rewrite_manifest(p, fewer_arrays);
  refused(e, u, dir, ZS_ERR_CORRUPT, "its segments", -1, later, 3,
          "a segment's arrays understated");

  /* Another model's checkpoint, and another model's manifest beside our files. */
  zs_engine *eb = make(stage, offload, 1, ub);
  char other[512];
  snprintf(other, sizeof other, "%s/other", root);
  ZS_OK_OR_DIE(zs_test_save(eb, other));
  zs_engine_destroy(eb);
  refused(e, u, other, ZS_ERR_INVALID_ARG, "tensor 'block.w' is [13, 3] in the engine and [12, 3]",
          -1, later, 3, "another model");
  fresh(good, dir, sizeof dir, "mixed");
  /* eb saved before any step: its checkpoint is numbered 0 */
  snprintf(cmd, sizeof cmd, "cp %s/ckpt-000000000000/manifest.json %s/%s/", other, dir, ck);
  sh0(cmd);
  refused(e, u, dir, ZS_ERR_INVALID_ARG, "block.w", -1, later, 3, "another model's manifest");
  /* The same model trained by another optimizer: its state is not this one's. */
  eb = make(stage, offload, 2, ub);
  snprintf(other, sizeof other, "%s/other_sgd", root);
  ZS_OK_OR_DIE(zs_test_save(eb, other));
  zs_engine_destroy(eb);
  refused(e, u, other, ZS_ERR_INVALID_ARG, "optimizer 'sgd', the engine runs 'adamw'", -1, later, 3,
          "another optimizer");
  /* ... or by a group on another optimizer: its tensor's state is that optimizer's. */
  eb = make(stage, offload, 3, ub);
  snprintf(other, sizeof other, "%s/other_muon", root);
  ZS_OK_OR_DIE(zs_test_save(eb, other));
  zs_engine_destroy(eb);
  refused(e, u, other, ZS_ERR_INVALID_ARG, "'block.w' holds the state of optimizer 'muon'", -1,
          later, 3, "a group's optimizer");
  /* ... which an engine that freezes the block loads: it reads no state there. */
  eb = make(stage, offload, 4, ub);
  ZS_OK_OR_DIE(zs_engine_load(eb, other));
  zs_engine_destroy(eb);

  /* Nothing there; wrong moments. */
  snprintf(dir, sizeof dir, "%s/empty", root);
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  sh0(cmd);
  refused(e, u, dir, ZS_ERR_IO, "no committed checkpoint", -1, later, 3, "empty directory");
  /* A bad argument on one rank only: every rank refuses (no rank left waiting in a collective). */
  if (world > 1) {
    refused(e, u, rank == world - 1 ? "" : good, ZS_ERR_INVALID_ARG, NULL, -1, later, 3,
            "an empty path on the last rank");
    ZS_EXPECT_STATUS(zs_test_save(e, rank == world - 1 ? NULL : good), ZS_ERR_INVALID_ARG);
  }
  if (rank == 0) {
    snprintf(cmd, sizeof cmd, "test \"$(ls %s)\" = %s", good, ck);
    ZS_EXPECT(system(cmd) == 0, "a refused save left a directory behind");
  }
  ZS_OK_OR_DIE(zs_unit_gather(u[1]));
  refused(e, u, good, ZS_ERR_STATE, "release it first", -1, later, 3, "unit held");
  ZS_OK_OR_DIE(zs_unit_release(u[1]));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_EXPECT_STATUS(zs_engine_load(e, good), ZS_ERR_STATE);
  ZS_EXPECT_STATUS(zs_test_save(e, good), ZS_ERR_STATE);
  for (int i = TM_NUNITS - 1; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL)); /* zero gradients: the weights move by decay only */
  snapshot(u, later);

  /* A full disk (the file size limit): ZS_ERR_IO, no temporary file, no new checkpoint. */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 1000;
  setrlimit(RLIMIT_FSIZE, &lim);
  const zs_status rc = zs_test_save(e, good);
  setrlimit(RLIMIT_FSIZE, &old);
  ZS_EXPECT(rc == ZS_ERR_IO, "a save over the file size limit returned %s (%s)", zs_status_str(rc),
            zs_last_error());
  if (rank == 0) {
    snprintf(cmd, sizeof cmd, "test -z \"$(find %s -name '*.tmp*')\" && test \"$(ls %s)\" = %s",
             good, good, ck);
    ZS_EXPECT(system(cmd) == 0, "the failed save left files behind: %s", cmd);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* After all that, the good checkpoint loads the saved bits and the step count; with its
     manifest as the format wrote it before it named the optimizer (no "optimizer" key: AdamW's). */
  snprintf(p, sizeof p, "%s/%s/manifest.json", good, ck);
  rewrite_manifest(p, drop_optimizer);
  ZS_OK_OR_DIE(zs_engine_load(e, good));
  ZS_EXPECT(same(u, saved), "the good checkpoint does not give back the saved weights");
  ZS_EXPECT(zs_engine_step_count(e) == 2 && zs_engine_steps_done(e) == 2, "step count %lld",
            (long long)zs_engine_step_count(e));
  /* And training goes on from there as it did the first time, bit for bit. */
  step(e, u, 2);
  snapshot(u, again);
  ZS_EXPECT(memcmp(again, after2, (size_t)n * 4) == 0, "the step after the load differs");
  free(again);
  free(after2);

  if (rank == 0) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", root);
  }
  free(saved);
  free(later);
  zs_engine_destroy(e);
  zs_comm_destroy(g_comm);
  ZS_TEST_END("test_ckpt_damage");
}
