/* Checkpoints and the safetensors export across devices (CUDA builds; without a GPU it prints
 * "SKIP: no CUDA device" and passes, unless neither side is cuda). Two engine configurations,
 * FIRST and SECOND (device, stage, offload), on the same ranks, one after the other:
 *   1. FIRST trains K1 steps and saves; its export (fp32) must hold its master bit for bit
 *      (read back with cJSON and raw bytes).
 *   2. SECOND loads that checkpoint: its master (zs_unit_get_param) must be FIRST's bit for bit
 *      (a load copies state), its export must be byte-identical to FIRST's file, and a bf16
 *      export must be the master rounded to nearest even. It trains K2 more steps and saves.
 *   3. FIRST loads SECOND's checkpoint: bit for bit again; it trains one step more.
 *   4. SECOND trains K1 + K2 + 1 steps straight from the initial weights: the same weights as
 *      step 3's, bit for bit (--tol 0, the default). The gradients are computed on the host
 *      here (as in test_engine_train) and zshard's AdamW gives the same bits on both devices
 *      (src/optim/adamw/cuda/adamw.cu, round-to-nearest intrinsics without contraction; the
 *      engine_cuda_det_* tests hold the engine to it), so a resumed run may mix devices and
 *      still equal the straight one; Adam's m and v must survive both checkpoints for that.
 * Units have awkward sizes (padding at 2 and 3 ranks) and one tensor larger than the export's
 * 1 MiB chunk. Every rank's rank-r batch of step s is s * world + r, deterministic mode, so the
 * splits agree. Usage (under mpirun; with_hostid.sh for several ranks on one GPU):
 *   test_ckpt_cuda --first DEV:STAGE[:OFFLOAD] --second DEV:STAGE[:OFFLOAD] [--bf16 1]
 *                  [--k1 K] [--k2 K] [--tol X] [--lr2 X (SECOND's learning rate: a planted
 *                  difference, the step-4 comparison must then fail)] */
#include <cjson/cJSON.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ZS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "base/bf16.h"
#include "zs_test.h"

#define NU 4
#define MAXT 3

typedef struct {
  const char *name;
  int nt;
  zs_tensor_desc t[MAXT];
} unit_def;

/* 1.13M elements; head.w (700k, 2.8 MB of fp32) spans several 1 MiB export chunks. */
static const unit_def units_def[NU] = {
    {"emb", 2, {{"w", 2, {301, 129, 0, 0}, 0}, {"b", 1, {129, 0, 0, 0}, 1}}},
    {"blk0",
     3,
     {{"w", 2, {257, 513, 0, 0}, 0}, {"ln", 1, {513, 0, 0, 0}, 1}, {"c", 1, {77, 0, 0, 0}, 0}}},
    {"blk1", 1, {{"w", 2, {1031, 255, 0, 0}, 0}}},
    {"head", 1, {{"w", 2, {1000, 700, 0, 0}, 0}}},
};

typedef struct {
  int cuda, stage, offload;
} side;

typedef struct {
  side first, second;
  int bf16, k1, k2;
  double tol;
  float lr2;
} opts;

static int rank, world;

static int64_t numel(int u, int t) {
  int64_t n = 1;
  for (int d = 0; d < units_def[u].t[t].ndim; d++)
    n *= units_def[u].t[t].shape[d];
  return n;
}
static int64_t base_of(int u, int t) {
  int64_t b = 0;
  for (int i = 0; i < NU; i++)
    for (int k = 0; k < units_def[i].nt; k++) {
      if (i == u && k == t) return b;
      b += numel(i, k);
    }
  return b;
}
static int64_t total(void) {
  return base_of(NU - 1, 0) + numel(NU - 1, 0);
}

/* splitmix64-based uniform numbers of (a, b), the same on every rank and device. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static double unif(uint64_t a, uint64_t b) {
  return (double)(mix(a * 0x100000001b3ull ^ mix(b)) >> 11) * (1.0 / 9007199254740992.0);
}

static void parse_side(const char *v, side *s) {
  char dev[16] = {0};
  int st = -1, off = 0;
  if (sscanf(v, "%15[a-z]:%d:%d", dev, &st, &off) < 2 ||
      (strcmp(dev, "cpu") && strcmp(dev, "cuda"))) {
    fprintf(stderr, "bad side '%s': want cpu|cuda:STAGE[:OFFLOAD]\n", v);
    exit(2);
  }
  s->cuda = !strcmp(dev, "cuda");
  s->stage = st;
  s->offload = off;
}

static void parse(int argc, char **argv, opts *o) {
  *o = (opts){.first = {1, 0, 0}, .second = {0, 3, 0}, .k1 = 3, .k2 = 3, .lr2 = -1.0f};
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--first"))
      parse_side(v, &o->first);
    else if (!strcmp(k, "--second"))
      parse_side(v, &o->second);
    else if (!strcmp(k, "--bf16"))
      o->bf16 = atoi(v);
    else if (!strcmp(k, "--k1"))
      o->k1 = atoi(v);
    else if (!strcmp(k, "--k2"))
      o->k2 = atoi(v);
    else if (!strcmp(k, "--tol"))
      o->tol = atof(v);
    else if (!strcmp(k, "--lr2"))
      o->lr2 = (float)atof(v);
    else {
      fprintf(stderr, "unknown option %s\n", k);
      exit(2);
    }
  }
}

typedef struct {
  zs_engine *e;
  zs_unit *u[NU];
  side s;
  int bf16;
} eng;

/* A committed engine of configuration s with the test's units. */
static void open_engine(eng *g, const side *s, zs_comm *comm, const opts *o, float lr) {
  zs_config c;
  zs_config_default(&c);
  c.stage = s->stage;
  c.device = s->cuda ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  c.offload = (unsigned)s->offload;
  c.deterministic = 1;
  c.param_dtype = c.reduce_dtype = o->bf16 ? ZS_BF16 : ZS_F32;
  c.adamw.lr = lr;
  c.adamw.weight_decay = 0.1f;
  c.adamw.max_grad_norm = 1.0f;
  c.comm_timeout_s = 60;
  memset(g, 0, sizeof *g);
  g->s = *s;
  g->bf16 = o->bf16;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &g->e));
  for (int u = 0; u < NU; u++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(g->e, units_def[u].name, units_def[u].nt, units_def[u].t, &g->u[u]));
  ZS_OK_OR_DIE(zs_engine_commit(g->e));
  if (rank == 0) printf("engine: %s\n", zs_engine_info(g->e));
}

/* The initial weights. */
static void init_params(eng *g) {
  for (int u = 0; u < NU; u++)
    for (int t = 0; t < units_def[u].nt; t++) {
      const int64_t n = numel(u, t), b = base_of(u, t);
      float *h = malloc((size_t)n * sizeof *h);
      for (int64_t i = 0; i < n; i++)
        h[i] = (float)(unif(7, (uint64_t)(b + i)) * 2.0 - 1.0);
      ZS_OK_OR_DIE(zs_unit_set_param(g->u[u], t, h));
      free(h);
    }
}

/* One step, batch s * world + rank on this rank: the quadratic loss
   0.5 * a_i * (p_i - t_i)^2 of tests/engine/engine_model.h, its gradient computed on the host
   from the gathered params and written into the engine's gradient. */
static void train_step(eng *g, int s) {
  const uint64_t batch = (uint64_t)s * (uint64_t)world + (uint64_t)rank;
  const size_t es = g->bf16 ? 2 : 4;
  ZS_OK_OR_DIE(zs_engine_begin_step(g->e, 1));
  for (int u = 0; u < NU; u++) {
    ZS_OK_OR_DIE(zs_unit_gather(g->u[u]));
    ZS_OK_OR_DIE(zs_unit_release(g->u[u]));
  }
  for (int u = NU - 1; u >= 0; u--) {
    ZS_OK_OR_DIE(zs_unit_gather(g->u[u]));
#ifdef ZS_HAVE_CUDA
    if (g->s.cuda && cudaStreamSynchronize((cudaStream_t)zs_engine_stream(g->e)) != cudaSuccess) {
      fprintf(stderr, "FATAL: cudaStreamSynchronize failed\n");
      exit(1);
    }
#endif
    for (int t = 0; t < units_def[u].nt; t++) {
      const int64_t n = numel(u, t), b = base_of(u, t);
      const void *dp = zs_unit_param(g->u[u], t);
      void *dg = zs_unit_grad(g->u[u], t);
      if (!dp || !dg) {
        fprintf(stderr, "FATAL: NULL param/grad: %s\n", zs_last_error());
        exit(1);
      }
      void *p = malloc((size_t)n * es), *gr = malloc((size_t)n * es);
      zs_test_copy(p, dp, (size_t)n * es, g->s.cuda);
      for (int64_t i = 0; i < n; i++) {
        const uint64_t gi = (uint64_t)(b + i);
        const float a = (float)(0.5 + unif(batch * 2 + 100, gi));
        const float tv = (float)(unif(batch * 2 + 101, gi) * 2.0 - 1.0);
        if (g->bf16) {
          const float pv = zs_bf16_to_f32(((const uint16_t *)p)[i]);
          ((uint16_t *)gr)[i] = zs_f32_to_bf16(a * (pv - tv));
        } else {
          ((float *)gr)[i] = a * (((const float *)p)[i] - tv);
        }
      }
      zs_test_copy(dg, gr, (size_t)n * es, g->s.cuda);
      free(p);
      free(gr);
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(g->u[u]));
    ZS_OK_OR_DIE(zs_unit_release(g->u[u]));
  }
  zs_step_stats st;
  ZS_OK_OR_DIE(zs_engine_step(g->e, &st));
  ZS_EXPECT(!st.skipped_nonfinite, "step %d skipped", s);
}

/* The whole fp32 master (collective). */
static float *get_all(eng *g) {
  float *all = malloc((size_t)total() * sizeof *all);
  for (int u = 0; u < NU; u++)
    for (int t = 0; t < units_def[u].nt; t++)
      ZS_OK_OR_DIE(zs_unit_get_param(g->u[u], t, all + base_of(u, t)));
  return all;
}

/* Elements of got that differ from want: bitwise for tol 0, else relative to max(|want|, 1). */
static int64_t ndiff(const float *got, const float *want, double tol, const char *what) {
  int64_t nd = 0, first = -1;
  for (int64_t i = 0; i < total(); i++) {
    const int bad =
        tol == 0.0 ? memcmp(&got[i], &want[i], 4) != 0
                   : !(fabs((double)got[i] - want[i]) <= tol * fmax(fabs((double)want[i]), 1.0));
    if (bad && nd++ == 0) first = i;
  }
  ZS_EXPECT(nd == 0, "rank %d: %s: %lld of %lld elements differ (first [%lld]: %.9g vs %.9g)", rank,
            what, (long long)nd, (long long)total(), (long long)first,
            first >= 0 ? (double)got[first] : 0.0, first >= 0 ? (double)want[first] : 0.0);
  if (rank == 0 && nd == 0)
    printf("ok   %s: %lld elements %s\n", what, (long long)total(),
           tol == 0.0 ? "bit-identical" : "within tol");
  return nd;
}

/* Whole file into memory; *len its size (NULL when unreadable). */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  if (n < 0 || !b || fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

static uint16_t bf16_rne(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Rank 0 reads a safetensors file back (its own reader: the 8-byte header length, the JSON with
   cJSON, the data as raw bytes) and checks every "<unit>.<tensor>" entry against the master:
   fp32 bit for bit, or bf16 as the master rounded to nearest even. */
static void check_export(const char *path, const float *master, int bf16) {
  if (rank != 0) return;
  size_t len = 0;
  unsigned char *f = slurp(path, &len);
  ZS_EXPECT(f && len > 8, "cannot read %s", path);
  if (!f || len <= 8) {
    free(f);
    return;
  }
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--)
    hl = hl << 8 | f[i];
  ZS_EXPECT(8 + hl <= len, "%s: header length %llu beyond the file", path, (unsigned long long)hl);
  char *js = malloc(hl + 1);
  memcpy(js, f + 8, 8 + hl <= len ? hl : 0);
  js[8 + hl <= len ? hl : 0] = 0;
  cJSON *h = cJSON_Parse(js);
  free(js);
  ZS_EXPECT(h != NULL, "%s: the header is not JSON", path);
  const unsigned char *data = f + 8 + hl;
  const size_t dlen = len - 8 - hl;
  int nbad = 0, nt = 0;
  for (int u = 0; h && u < NU; u++)
    for (int t = 0; t < units_def[u].nt; t++) {
      char name[64];
      snprintf(name, sizeof name, "%s.%s", units_def[u].name, units_def[u].t[t].name);
      const cJSON *e = cJSON_GetObjectItemCaseSensitive(h, name);
      const cJSON *dt = e ? cJSON_GetObjectItemCaseSensitive(e, "dtype") : NULL;
      const cJSON *off = e ? cJSON_GetObjectItemCaseSensitive(e, "data_offsets") : NULL;
      const cJSON *shp = e ? cJSON_GetObjectItemCaseSensitive(e, "shape") : NULL;
      const int64_t n = numel(u, t);
      const size_t es = bf16 ? 2 : 4;
      int ok = e && cJSON_IsString(dt) && !strcmp(dt->valuestring, bf16 ? "BF16" : "F32") &&
               cJSON_GetArraySize(off) == 2 && cJSON_GetArraySize(shp) == units_def[u].t[t].ndim;
      for (int d = 0; ok && d < units_def[u].t[t].ndim; d++)
        ok = (int64_t)cJSON_GetArrayItem(shp, d)->valuedouble == units_def[u].t[t].shape[d];
      const size_t b0 = ok ? (size_t)cJSON_GetArrayItem(off, 0)->valuedouble : 0;
      const size_t b1 = ok ? (size_t)cJSON_GetArrayItem(off, 1)->valuedouble : 0;
      ok = ok && b1 - b0 == (size_t)n * es && b1 <= dlen;
      const float *m = master + base_of(u, t);
      for (int64_t i = 0; ok && i < n; i++) {
        if (bf16) {
          uint16_t v;
          memcpy(&v, data + b0 + 2 * (size_t)i, 2);
          ok = v == bf16_rne(m[i]);
        } else {
          ok = memcmp(data + b0 + 4 * (size_t)i, &m[i], 4) == 0;
        }
      }
      ZS_EXPECT(ok, "%s: entry %s is missing, misshapen or not the master's %s", path, name,
                bf16 ? "bf16 rounding" : "bits");
      nbad += !ok;
      nt++;
    }
  if (nbad == 0 && h)
    printf("ok   %s: %d tensors hold the master (%s)\n", path, nt, bf16 ? "bf16" : "fp32");
  cJSON_Delete(h);
  free(f);
}

int main(int argc, char **argv) {
  opts o;
  parse(argc, argv, &o);
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  rank = zs_comm_rank(comm);
  world = zs_comm_size(comm);
  if (o.first.cuda || o.second.cuda) {
    /* Skips only where no device is visible; any other CUDA failure fails (zs_test_cuda.h). */
    int absent = 1;
#ifdef ZS_HAVE_CUDA
    absent = zs_test_cuda_absent(rank == 0);
#else
    if (rank == 0) printf("SKIP: no CUDA device (a CPU-only build)\n");
#endif
    if (absent) {
      zs_comm_destroy(comm);
      return 0;
    }
  }
  const float lr = 0.05f, lr2 = o.lr2 > 0 ? o.lr2 : lr;
  char dir[] = "/tmp/zs_ckpt_cuda_XXXXXX";
  if (rank == 0 && !mkdtemp(dir)) return 1;
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  char ck1[96], ck2[96], xa[96], xb[96], xc[96];
  snprintf(ck1, sizeof ck1, "%s/ck1", dir);
  snprintf(ck2, sizeof ck2, "%s/ck2", dir);
  snprintf(xa, sizeof xa, "%s/first.safetensors", dir);
  snprintf(xb, sizeof xb, "%s/second.safetensors", dir);
  snprintf(xc, sizeof xc, "%s/second_bf16.safetensors", dir);

  /* 1. FIRST: K1 steps, save, export. */
  eng g;
  open_engine(&g, &o.first, comm, &o, lr);
  init_params(&g);
  for (int s = 0; s < o.k1; s++)
    train_step(&g, s);
  ZS_OK_OR_DIE(zs_test_save(g.e, ck1));
  ZS_OK_OR_DIE(zs_engine_export_safetensors(g.e, xa));
  float *p1 = get_all(&g);
  zs_engine_destroy(g.e);
  MPI_Barrier(MPI_COMM_WORLD);
  check_export(xa, p1, 0);

  /* 2. SECOND loads it: the same master, the same export file; K2 steps, save. */
  open_engine(&g, &o.second, comm, &o, lr2);
  ZS_OK_OR_DIE(zs_engine_load(g.e, ck1));
  ZS_EXPECT(zs_engine_steps_done(g.e) == o.k1, "steps done after load: %lld",
            (long long)zs_engine_steps_done(g.e));
  float *l1 = get_all(&g);
  ndiff(l1, p1, 0.0, "SECOND's master after loading FIRST's checkpoint");
  ZS_OK_OR_DIE(zs_engine_export_safetensors(g.e, xb));
  zs_export_options eo;
  zs_export_options_default(&eo);
  eo.dtype = ZS_BF16;
  ZS_OK_OR_DIE(zs_engine_export_safetensors_ex(g.e, xc, &eo));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    size_t na = 0, nb = 0;
    unsigned char *a = slurp(xa, &na), *b = slurp(xb, &nb);
    ZS_EXPECT(a && b && na == nb && memcmp(a, b, na) == 0,
              "SECOND's export after the load differs from FIRST's (%zu vs %zu bytes)", na, nb);
    if (a && b && na == nb && !memcmp(a, b, na))
      printf("ok   SECOND's export after the load is byte-identical to FIRST's (%zu bytes)\n", na);
    free(a);
    free(b);
  }
  check_export(xc, p1, 1);
  for (int s = o.k1; s < o.k1 + o.k2; s++)
    train_step(&g, s);
  ZS_OK_OR_DIE(zs_test_save(g.e, ck2));
  float *p2 = get_all(&g);
  zs_engine_destroy(g.e);

  /* 3. FIRST loads SECOND's checkpoint, one step more. */
  open_engine(&g, &o.first, comm, &o, lr);
  ZS_OK_OR_DIE(zs_engine_load(g.e, ck2));
  float *l2 = get_all(&g);
  ndiff(l2, p2, 0.0, "FIRST's master after loading SECOND's checkpoint");
  train_step(&g, o.k1 + o.k2);
  float *p3 = get_all(&g);
  zs_engine_destroy(g.e);

  /* 4. SECOND straight from the initial weights. */
  open_engine(&g, &o.second, comm, &o, lr2);
  init_params(&g);
  for (int s = 0; s < o.k1 + o.k2 + 1; s++)
    train_step(&g, s);
  float *straight = get_all(&g);
  zs_engine_destroy(g.e);
  ndiff(p3, straight, o.tol, "FIRST -> SECOND -> FIRST through two checkpoints vs SECOND straight");

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  }
  free(p1), free(l1), free(p2), free(l2), free(p3), free(straight);
  zs_comm_destroy(comm);
  if (rank == 0 && !zs_test_failures) printf("test_ckpt_cuda: OK\n");
  ZS_TEST_END("test_ckpt_cuda");
}
