/* zs_engine_export_safetensors: the file is read back here with an independent reader (cJSON on
 * the header, raw bytes for the data) and every tensor compared with zs_unit_get_param: fp32 bit
 * for bit, bf16 as the fp32 value rounded to nearest even (computed here), transposed and
 * row-trimmed tensors element by element. The export's extra memory is measured: the process's
 * peak RSS (reset through /proc/self/clear_refs) may grow by one unit's fp32 values and a bounded
 * buffer, far less than the model. A failed export (refused name, file size limit) keeps the old
 * file and leaves no temporary file.
 * Usage (under mpirun): test_ckpt_export [--stage S] */
#include <cjson/cJSON.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "zs_test.h"

#define NU 8
#define PER_UNIT (1 << 20) /* elements: 4 MiB of fp32 per unit, 32 MiB for the model */

static int rank;

static float value(int u, int t, int64_t i) {
  return (float)((((uint64_t)(u * 7 + t) * 2654435761u + (uint64_t)i * 40503u) % 20011) - 10005) /
         3333.0f;
}

/* Peak RSS of this process since the last reset, in bytes (0 when /proc does not say). */
static size_t peak_rss(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %zu kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb * 1024;
}
static int reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return 0;
  int ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}

/* The test's own safetensors reader: header JSON and the data section. */
typedef struct {
  cJSON *h;
  unsigned char *data;
  size_t data_len;
} st;
static int st_read(const char *path, st *s) {
  memset(s, 0, sizeof *s);
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  unsigned char n8[8];
  uint64_t n = 0;
  if (fread(n8, 1, 8, f) != 8) return fclose(f), 0;
  for (int i = 7; i >= 0; i--)
    n = n << 8 | n8[i];
  char *js = malloc(n + 1);
  if (fread(js, 1, n, f) != n) return free(js), fclose(f), 0;
  js[n] = 0;
  s->h = cJSON_Parse(js);
  free(js);
  long at = ftell(f);
  fseek(f, 0, SEEK_END);
  s->data_len = (size_t)(ftell(f) - at);
  fseek(f, at, SEEK_SET);
  s->data = malloc(s->data_len + 1);
  int ok = fread(s->data, 1, s->data_len, f) == s->data_len && s->h;
  fclose(f);
  return ok;
}
static void st_free(st *s) {
  cJSON_Delete(s->h);
  free(s->data);
}
/* The entry `name`: dtype, shape (up to 4) and its data. */
static const unsigned char *st_get(const st *s, const char *name, char *dtype, int64_t *shape,
                                   int *ndim) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(s->h, name), *x;
  if (!e) return NULL;
  snprintf(dtype, 8, "%s", cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring);
  *ndim = 0;
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "shape")) shape[(*ndim)++] =
      (int64_t)x->valuedouble;
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  size_t b = (size_t)cJSON_GetArrayItem(o, 0)->valuedouble;
  return s->data + b;
}

static uint16_t bf16_rne(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Renames "u3.w" to "layer3.weight", transposes and trims "u1.w" and "u5.w", skips "u2.b". */
static int rename_cb(void *ctx, const char *unit, const char *tensor, int ndim,
                     const int64_t *shape, zs_export_tensor *out) {
  (void)ctx;
  (void)ndim;
  (void)shape;
  if (!strcmp(unit, "u3") && !strcmp(tensor, "w"))
    snprintf(out->name, sizeof out->name, "layer3.weight");
  if ((!strcmp(unit, "u1") || !strcmp(unit, "u5")) && !strcmp(tensor, "w")) {
    out->transpose = 1;
    out->rows = 1000;
  }
  if (!strcmp(unit, "u2") && !strcmp(tensor, "b")) out->skip = 1;
  return 0;
}
static int dup_cb(void *ctx, const char *unit, const char *tensor, int ndim, const int64_t *shape,
                  zs_export_tensor *out) {
  (void)ctx, (void)unit, (void)ndim, (void)shape;
  snprintf(out->name, sizeof out->name, "same.%s", tensor);
  return 0;
}

/* Skips "u2.b" on the last rank only: the ranks would export different tensors. */
static int uneven_cb(void *ctx, const char *unit, const char *tensor, int ndim,
                     const int64_t *shape, zs_export_tensor *out) {
  (void)ndim, (void)shape;
  if (*(const int *)ctx && !strcmp(unit, "u2") && !strcmp(tensor, "b")) out->skip = 1;
  return 0;
}

int main(int argc, char **argv) {
  int stage = 3;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--stage")) stage = atoi(argv[i + 1]);
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  rank = zs_comm_rank(comm);
  zs_config c;
  zs_config_default(&c);
  c.stage = stage;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  /* Each unit: w [1024, 1023] (transposable, rows trimmable) and b [1 << 20 - 1024 * 1023]. */
  zs_unit *u[NU];
  const int64_t R = 1024, C = 1023, B = PER_UNIT - R * C;
  for (int i = 0; i < NU; i++) {
    zs_tensor_desc t[2] = {{"w", 2, {R, C, 0, 0}, 0}, {"b", 1, {B, 0, 0, 0}, 1}};
    char name[8];
    snprintf(name, sizeof name, "u%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 2, t, &u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  float *h = malloc((size_t)R * C * 4), *got = malloc((size_t)R * C * 4);
  for (int i = 0; i < NU; i++)
    for (int t = 0; t < 2; t++) {
      const int64_t n = t ? B : R * C;
      for (int64_t j = 0; j < n; j++)
        h[j] = value(i, t, j);
      ZS_OK_OR_DIE(zs_unit_set_param(u[i], t, h));
    }
  char dir[] = "/tmp/zs_export_XXXXXX";
  if (rank == 0 && !mkdtemp(dir)) return 1;
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  char path[128], path2[128], tmp[160];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  snprintf(path2, sizeof path2, "%s/renamed.safetensors", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);

  /* 1. Default export: fp32 bits, "unit.tensor" names; and its extra memory. */
  const int measured = reset_peak();
  const size_t before = peak_rss();
  ZS_OK_OR_DIE(zs_engine_export_safetensors(e, path));
  const size_t grew = peak_rss() - before;
  const size_t unit_bytes = (size_t)PER_UNIT * 4, model_bytes = unit_bytes * NU;
  if (measured)
    ZS_EXPECT(grew <= unit_bytes + ((size_t)3 << 20),
              "rank %d: the export's peak RSS grew by %zu bytes; one unit is %zu, the model %zu",
              rank, grew, unit_bytes, model_bytes);
  if (rank == 0)
    printf("export peak RSS growth: rank 0 %.2f MiB (one unit %.2f MiB, model %.2f MiB)%s\n",
           grew / 1048576.0, unit_bytes / 1048576.0, model_bytes / 1048576.0,
           measured ? "" : " (not measurable here)");
  /* Every rank reads what rank 0 wrote once all are done. */
  MPI_Barrier(MPI_COMM_WORLD);
  st s;
  ZS_EXPECT(st_read(path, &s), "cannot read %s back", path);
  char dt[8];
  int64_t sh[4];
  int nd;
  for (int i = 0; i < NU && s.h; i++)
    for (int t = 0; t < 2; t++) {
      char name[16];
      snprintf(name, sizeof name, "u%d.%s", i, t ? "b" : "w");
      const unsigned char *d = st_get(&s, name, dt, sh, &nd);
      ZS_EXPECT(d && !strcmp(dt, "F32") && nd == (t ? 1 : 2) && sh[0] == (t ? B : R),
                "entry %s missing or wrong", name);
      if (!d) continue;
      ZS_OK_OR_DIE(zs_unit_get_param(u[i], t, got));
      ZS_EXPECT(memcmp(d, got, (size_t)(t ? B : R * C) * 4) == 0, "%s: values differ", name);
    }
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(s.h, "__metadata__");
  ZS_EXPECT(meta && !strcmp(cJSON_GetObjectItemCaseSensitive(meta, "format")->valuestring, "pt"),
            "no format metadata");
  st_free(&s);

  /* 2. bf16 with renaming, transposing, trimming and skipping. */
  zs_export_options o;
  zs_export_options_default(&o);
  o.struct_size = 0; /* options not filled by zs_export_options_default: refused */
  ZS_EXPECT_STATUS(zs_engine_export_safetensors_ex(e, path2, &o), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "struct_size is 0"), "%s", zs_last_error());
  zs_export_options_default(&o);
  o.dtype = ZS_BF16;
  o.tensor_fn = rename_cb;
  ZS_OK_OR_DIE(zs_engine_export_safetensors_ex(e, path2, &o));
  MPI_Barrier(MPI_COMM_WORLD);
  ZS_EXPECT(st_read(path2, &s), "cannot read %s", path2);
  ZS_EXPECT(!cJSON_GetObjectItemCaseSensitive(s.h, "u2.b") &&
                !cJSON_GetObjectItemCaseSensitive(s.h, "u3.w"),
            "skipped or renamed tensors still there");
  const unsigned char *d = st_get(&s, "layer3.weight", dt, sh, &nd);
  ZS_OK_OR_DIE(zs_unit_get_param(u[3], 0, got));
  int bad = !d || strcmp(dt, "BF16") || nd != 2 || sh[0] != R || sh[1] != C;
  for (int64_t j = 0; !bad && j < R * C; j++)
    bad = ((const uint16_t *)d)[j] != bf16_rne(got[j]);
  ZS_EXPECT(!bad, "layer3.weight is not the bf16 of u3.w");
  d = st_get(&s, "u5.w", dt, sh, &nd);
  ZS_OK_OR_DIE(zs_unit_get_param(u[5], 0, got));
  bad = !d || nd != 2 || sh[0] != C || sh[1] != 1000;
  for (int64_t a = 0; !bad && a < C; a++)
    for (int64_t b = 0; !bad && b < 1000; b++) /* file [C, 1000] = first 1000 rows, transposed */
      bad = ((const uint16_t *)d)[a * 1000 + b] != bf16_rne(got[b * C + a]);
  ZS_EXPECT(!bad, "u5.w is not the transpose of its first 1000 rows");
  st_free(&s);

  /* 3. Failures keep the old file and leave no temporary file. */
  o.tensor_fn = dup_cb;
  ZS_EXPECT_STATUS(zs_engine_export_safetensors_ex(e, path, &o), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "two tensors are named"), "message: %s", zs_last_error());
  int world = 1, last = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  last = rank == world - 1;
  o.tensor_fn = uneven_cb;
  o.ctx = &last;
  if (world > 1) { /* refused on every rank before the first gather, the old file kept */
    ZS_EXPECT_STATUS(zs_engine_export_safetensors_ex(e, path, &o), ZS_ERR_INVALID_ARG);
    ZS_EXPECT(strstr(zs_last_error(), "exports other tensors than rank"), "message: %s",
              zs_last_error());
  }
  o.ctx = NULL;
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 10 << 20;
  setrlimit(RLIMIT_FSIZE, &lim);
  const zs_status rc = zs_engine_export_safetensors(e, path);
  setrlimit(RLIMIT_FSIZE, &old);
  ZS_EXPECT(rc == ZS_ERR_IO, "export over the file size limit: %s (%s)", zs_status_str(rc),
            zs_last_error());
  MPI_Barrier(MPI_COMM_WORLD);
  ZS_EXPECT(access(tmp, F_OK) != 0, "%s was left behind", tmp);
  ZS_EXPECT(st_read(path, &s), "the old file is gone or damaged");
  d = s.h ? st_get(&s, "u7.b", dt, sh, &nd) : NULL;
  ZS_OK_OR_DIE(zs_unit_get_param(u[7], 1, got));
  ZS_EXPECT(d && memcmp(d, got, (size_t)B * 4) == 0, "the old file changed");
  st_free(&s);
  ZS_EXPECT_STATUS(zs_engine_export_safetensors(NULL, path), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_export_safetensors(e, ""), ZS_ERR_INVALID_ARG);

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  }
  free(h);
  free(got);
  zs_engine_destroy(e);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_ckpt_export");
}
