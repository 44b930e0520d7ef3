/* The remainder master (zs_config.master = ZS_MASTER_REMAINDER) in the engine, at this world size
 * and --stage:
 *  - bit-identical to ZS_MASTER_FP32 run with the test hook that rounds its bf16 compute copy ties
 *    away (src/base/round_hook.h): the losses of every micro-step (computed on the compute copy),
 *    the master read back, and the saved checkpoints' data files (master, m and v), byte for byte;
 *  - the hook matters: ZS_MASTER_FP32 without it (nearest even) differs, because half the initial
 *    values are ties of the compute rounding;
 *  - checkpoints across the modes are exact: the fp32-master checkpoint loaded into remainder mode
 *    and the remainder checkpoint loaded into the fp32 master read back the saved master bit for
 *    bit, and both train on to the same bits.
 *  - the master read back in bulk (zs_engine_get_params) and exported (safetensors) is the same;
 * Usage: test_engine_rem --stage S [--m16] [--group G (hybrid shard groups)]
 *                        [--dir D (scratch, removed after)]   (under mpirun) */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_model.h"
#include "base/bf16.h"
#include "base/round_hook.h"
#include "zs_test.h"

#define STEPS 4
#define MICRO 2

typedef struct {
  float *params;                  /* the master read back (tm_total values) */
  double loss[2 * STEPS * MICRO]; /* this rank's loss of each micro-step */
  int nloss;
} result;

static int stage, m16, group, rank, world;
static zs_comm *comm;

/* Initial value of global element i: even elements are exact ties of the bf16 rounding (low half
   0x8000), where nearest-even and ties-away compute copies differ. */
static float init_value(int64_t i) {
  float f = tm_init(i);
  uint32_t b;
  memcpy(&b, &f, 4);
  if (i % 2 == 0) b = (b & 0xffff0000u) | 0x8000u;
  memcpy(&f, &b, 4);
  return f;
}

/* One micro-step on global batch `batch`: the loss of the model's quadratic on the compute copy
   (engine_model.h; this rank's batch, in element order, in double) and its gradient. */
static double micro_step(zs_unit **units, int64_t batch) {
  double loss = 0;
  for (int u = TM_NUNITS - 1; u >= 0; u--) {
    ZS_OK_OR_DIE(zs_unit_gather(units[u]));
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      const uint16_t *p = zs_unit_param(units[u], k);
      uint16_t *g = zs_unit_grad(units[u], k);
      if (!p || !g) {
        fprintf(stderr, "FATAL: NULL param/grad: %s\n", zs_last_error());
        exit(1);
      }
      const int64_t base = tm_base(u, k);
      for (int64_t i = 0; i < tm_numel(u, k); i++) {
        const float pv = zs_bf16_to_f32(p[i]), a = tm_a(batch, base + i),
                    d = pv - tm_t(batch, base + i);
        loss += 0.5 * (double)a * (double)d * (double)d;
        g[i] = zs_f32_to_bf16(zs_bf16_to_f32(g[i]) + a * d);
      }
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(units[u]));
    ZS_OK_OR_DIE(zs_unit_release(units[u]));
  }
  return loss;
}

/* An engine of the model in mode `master` (the hook set as `hook` for its life), committed. */
static zs_engine *make_engine(int master, int hook, zs_unit **units) {
  zs_test_hook_fp32_ties_away(hook);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.shard_group_size = group;
  cfg.deterministic = 1;
  cfg.param_dtype = cfg.reduce_dtype = ZS_BF16;
  cfg.master = master;
  cfg.moment_dtype = m16 ? ZS_BF16 : ZS_F32;
  cfg.adamw.lr = 0.01f;
  cfg.adamw.weight_decay = 0.1f;
  cfg.comm_timeout_s = 60;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int u = 0; u < TM_NUNITS; u++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[u].name, tm_units[u].ntensors, tm_units[u].t, &units[u]));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

/* Trains from the engine's step on to step `to`, appending losses to r, then reads the master. */
static void train(zs_engine *e, zs_unit **units, int to, result *r) {
  for (int s = (int)zs_engine_steps_done(e); s < to; s++) {
    ZS_OK_OR_DIE(zs_engine_begin_step(e, MICRO));
    for (int m = 0; m < MICRO; m++)
      r->loss[r->nloss++] = micro_step(units, ((int64_t)s * MICRO + m) * world + rank);
    zs_step_stats st;
    ZS_OK_OR_DIE(zs_engine_step(e, &st));
  }
  if (!r->params) r->params = malloc((size_t)tm_total() * 4);
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++)
      ZS_OK_OR_DIE(zs_unit_get_param(units[u], k, r->params + tm_base(u, k)));
}

/* zs_engine_get_params' callback: every tensor into the model-wide array at user. */
static int locate(void *user, const zs_unit *u, int unit_index, int t, const char *name,
                  int64_t numel, float **host) {
  (void)u;
  (void)name;
  (void)numel;
  *host = (float *)user + tm_base(unit_index, t);
  return 0;
}

/* A fresh run: set the initial values, train STEPS steps; the master read back in bulk must be
   what the per-tensor reads gave. With dir: save a checkpoint into it and export to
   dir.safetensors. */
static void run(int master, int hook, const char *dir, result *r) {
  zs_unit *units[TM_NUNITS];
  zs_engine *e = make_engine(master, hook, units);
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      const int64_t nk = tm_numel(u, k), b = tm_base(u, k);
      float *h = malloc((size_t)nk * 4);
      for (int64_t i = 0; i < nk; i++)
        h[i] = init_value(b + i);
      ZS_OK_OR_DIE(zs_unit_set_param(units[u], k, h));
      free(h);
    }
  memset(r, 0, sizeof *r);
  train(e, units, STEPS, r);
  float *bulk = malloc((size_t)tm_total() * 4);
  ZS_OK_OR_DIE(zs_engine_get_params(e, locate, bulk));
  ZS_EXPECT(memcmp(bulk, r->params, (size_t)tm_total() * 4) == 0,
            "rank %d master %d: zs_engine_get_params differs from zs_unit_get_param", rank, master);
  free(bulk);
  if (dir) {
    char path[4300];
    snprintf(path, sizeof path, "%s.safetensors", dir);
    ZS_OK_OR_DIE(zs_test_save(e, dir));
    ZS_OK_OR_DIE(zs_engine_export_safetensors(e, path));
  }
  zs_engine_destroy(e);
}

/* Loads dir into a fresh engine of mode `master`: its master read back, then STEPS more steps. */
static void resume(int master, int hook, const char *dir, result *loaded, result *r) {
  zs_unit *units[TM_NUNITS];
  zs_engine *e = make_engine(master, hook, units);
  ZS_OK_OR_DIE(zs_engine_load(e, dir));
  memset(loaded, 0, sizeof *loaded);
  train(e, units, STEPS, loaded); /* at step STEPS already: reads the master only */
  memset(r, 0, sizeof *r);
  train(e, units, 2 * STEPS, r);
  zs_engine_destroy(e);
}

static int same_params(const result *a, const result *b) {
  return memcmp(a->params, b->params, (size_t)tm_total() * 4) == 0;
}
static int same_losses(const result *a, const result *b) {
  return a->nloss == b->nloss && memcmp(a->loss, b->loss, sizeof(double) * (size_t)a->nloss) == 0;
}

/* This rank's data file of the one checkpoint in dir, read whole (NULL if absent). */
static unsigned char *read_rank_file(const char *dir, size_t *len) {
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char path[4096] = "";
  for (struct dirent *de; (de = readdir(d));)
    if (!strncmp(de->d_name, "ckpt-", 5))
      snprintf(path, sizeof path, "%s/%s/rank-%05d.zsd", dir, de->d_name, rank);
  closedir(d);
  FILE *f = path[0] ? fopen(path, "rb") : NULL;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(*len + 1);
  if (fread(buf, 1, *len, f) != *len) *len = 0;
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  rank = zs_comm_rank(comm);
  world = zs_comm_size(comm);
  const char *dir = "test_engine_rem.d";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--stage") && i + 1 < argc) stage = atoi(argv[++i]);
    if (!strcmp(argv[i], "--m16")) m16 = 1;
    if (!strcmp(argv[i], "--group") && i + 1 < argc) group = atoi(argv[++i]);
    if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
  }
  if (rank == 0) { /* a stale directory of an earlier run; the others wait in zs_engine_create */
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  char da[4200], db[4200];
  snprintf(da, sizeof da, "%s/fp32", dir);
  snprintf(db, sizeof db, "%s/rem", dir);
  result a, b, c, la, lb, ra, rb;
  run(ZS_MASTER_FP32, 1, da, &a);
  run(ZS_MASTER_REMAINDER, 0, db, &b);
  run(ZS_MASTER_FP32, 0, NULL, &c);
  ZS_EXPECT(same_losses(&a, &b), "rank %d: losses differ from the ties-away fp32 master", rank);
  ZS_EXPECT(same_params(&a, &b), "rank %d: master differs from the ties-away fp32 master", rank);
  ZS_EXPECT(!same_params(&a, &c) && !same_losses(&a, &c),
            "rank %d: the nearest-even fp32 master gives the same bits: the test has no ties",
            rank);
  size_t na = 0, nb = 0;
  unsigned char *fa = read_rank_file(da, &na), *fb = read_rank_file(db, &nb);
  ZS_EXPECT(fa && fb && na > 64 && na == nb && memcmp(fa, fb, na) == 0,
            "rank %d: checkpoint data files differ (%zu vs %zu bytes)", rank, na, nb);
  free(fa);
  free(fb);
  if (rank == 0) { /* the exported master, byte for byte */
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s.safetensors", da);
    snprintf(pb, sizeof pb, "%s.safetensors", db);
    FILE *xa = fopen(pa, "rb"), *xb = fopen(pb, "rb");
    int same = xa && xb, ca = 0, cb = 0;
    long bytes = 0;
    while (same && (ca = fgetc(xa)) != EOF) {
      cb = fgetc(xb);
      same = ca == cb;
      bytes++;
    }
    same = same && fgetc(xb) == EOF && bytes > 0;
    if (xa) fclose(xa);
    if (xb) fclose(xb);
    ZS_EXPECT(same, "exported safetensors differ (%s, %s)", pa, pb);
  }
  /* Across the modes: fp32 checkpoint into remainder, remainder checkpoint into fp32. */
  resume(ZS_MASTER_REMAINDER, 0, da, &la, &rb);
  resume(ZS_MASTER_FP32, 1, db, &lb, &ra);
  ZS_EXPECT(same_params(&la, &a), "rank %d: fp32 checkpoint loaded into remainder mode", rank);
  ZS_EXPECT(same_params(&lb, &b), "rank %d: remainder checkpoint loaded into the fp32 master",
            rank);
  ZS_EXPECT(same_params(&ra, &rb) && same_losses(&ra, &rb),
            "rank %d: resumed runs differ across the modes", rank);
  if (rank == 0) {
    if (!zs_test_failures)
      printf(
          "test_engine_rem: world %d stage %d moments %s: %d losses, %lld params, bit-identical\n",
          world, stage, m16 ? "bf16" : "fp32", a.nloss, (long long)tm_total());
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  result *all[] = {&a, &b, &c, &la, &lb, &ra, &rb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]->params);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_rem");
}
