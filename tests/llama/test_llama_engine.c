/* The Llama example's units in a real engine (examples/llama/engine_io.c), on 1 or more ranks at
 * stage 3 (CPU): a random Llama (GQA, untied) and Qwen2 (biases, tied) written by rank 0 as a
 * Hugging Face directory, imported, added to the engine (the layout's descriptors must be
 * accepted), set from the files, then exported three ways and read back by the reader: sharded
 * F32 (llama_engine_export: zs_unit_get_param + the writer) must equal the source bit for bit,
 * sharded BF16 must equal the source rounded to nearest even (lst_convert, itself tested against
 * a double reference in llama_io), and the engine's own single-file export with
 * llama_export_name must equal the source too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/llama_layout.h"
#include "common/llama_util.h"
#include "llama/engine_io.h"
#include "llama/hf_io.h"
#include "tiny_config.h"
#include "zs_test.h"

static zs_comm *comm;

static void barrier(void) {
  double x = 0, y;
  ZS_OK_OR_DIE(zs_comm_allreduce(comm, &x, &y, 1, ZS_HOST_F64, ZS_RED_SUM));
}

/* The small model of arch, 40 tokens and 32 positions. */
static llama_config tiny(llama_arch arch) {
  return llama_tiny_config(arch, 40, 32);
}

/* Rank 0: writes c with values v(k, i) = a distinct float per tensor k and element i. */
static float value(int k, int64_t i) {
  return (float)((k * 7919 + i * 104729) % 20011) / 977.0f - 10.0f;
}

static void write_source(const char *dir, const llama_config *c) {
  mkdir(dir, 0755);
  lhw_writer w;
  ZS_EXPECT(llama_hf_export_open(dir, c, LST_F32, 1500, &w) == 0, "%s", llama_error());
  int k = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    for (int t = 0; t < nt; t++, k++) {
      const int64_t n = d[t].ndim == 2 ? d[t].shape[0] * d[t].shape[1] : d[t].shape[0];
      float *v = malloc((size_t)n * 4);
      for (int64_t i = 0; i < n; i++)
        v[i] = value(k, i);
      char name[160];
      llama_hf_name(c, u, t, name, sizeof name);
      ZS_EXPECT(lhw_put(&w, name, v, LST_F32) == 0, "%s", llama_error());
      free(v);
    }
  }
  ZS_EXPECT(lhw_close(&w) == 0, "%s", llama_error());
}

/* Rank 0: dir's tensors equal the source (in dtype dt: F32 exact, BF16 the rounded source). */
static void compare(const char *dir, const llama_config *c, lst_dtype dt, const char *what) {
  llama_config r;
  lhf_dir d;
  if (llama_hf_import(dir, 8, &r, &d) != 0) {
    ZS_EXPECT(0, "%s: %s", what, llama_error());
    return;
  }
  int k = 0, bad = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, ds);
    for (int t = 0; t < nt; t++, k++) {
      char name[160];
      llama_hf_name(c, u, t, name, sizeof name);
      const int i = lhf_find(&d, name);
      const int64_t n = lhf_numel(&d, i);
      float *got = malloc((size_t)n * 4), *src = malloc((size_t)n * 4);
      uint16_t *h = malloc((size_t)n * 2);
      for (int64_t j = 0; j < n; j++)
        src[j] = value(k, j);
      if (dt == LST_BF16) { /* the source as bf16, widened */
        lst_convert(src, LST_F32, h, LST_BF16, (size_t)n);
        lst_convert(h, LST_BF16, src, LST_F32, (size_t)n);
      }
      ZS_EXPECT(lhf_read(&d, i, got, LST_F32) == 0, "%s", llama_error());
      if (memcmp(got, src, (size_t)n * 4) != 0) {
        bad++;
        fprintf(stderr, "%s: %s differs\n", what, name);
      }
      free(got);
      free(src);
      free(h);
    }
  }
  lhf_close(&d);
  ZS_EXPECT(bad == 0, "%s: %d tensors differ", what, bad);
  if (!bad) printf("ok   %s: %d tensors equal the source\n", what, k);
}

static void run(const char *base, llama_arch arch, int rank) {
  const llama_config c = tiny(arch);
  char src[4200], out[4200];
  snprintf(src, sizeof src, "%s/src_%s", base, llama_arch_name(arch));
  if (rank == 0) write_source(src, &c);
  barrier();
  llama_config r;
  lhf_dir d;
  if (llama_hf_import(src, 8, &r, &d) != 0) {
    fprintf(stderr, "FATAL import: %s\n", llama_error());
    exit(1);
  }
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.device = ZS_DEVICE_CPU;
  zs_engine *e;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  zs_unit *units[8];
  ZS_EXPECT(llama_engine_add_units(e, &r, units) == 0, "add units: %s", llama_error());
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_EXPECT(llama_engine_load(&d, &r, units) == 0, "load: %s", llama_error());
  lhf_close(&d);
  const lst_dtype dts[] = {LST_F32, LST_BF16};
  for (int i = 0; i < 2; i++) {
    snprintf(out, sizeof out, "%s/out_%s_%s", base, llama_arch_name(arch), lst_dtype_name(dts[i]));
    if (rank == 0) mkdir(out, 0755);
    ZS_EXPECT(llama_engine_export(&r, units, out, dts[i], 1200, rank) == 0, "export: %s",
              llama_error());
    barrier();
    if (rank == 0) compare(out, &c, dts[i], out + strlen(base) + 1);
  }
  /* the engine's own single-file export with the name map */
  snprintf(out, sizeof out, "%s/engine_%s", base, llama_arch_name(arch));
  char path[4400];
  if (rank == 0) {
    mkdir(out, 0755);
    snprintf(path, sizeof path, "%s/config.json", out);
    ZS_EXPECT(llama_config_write(&c, path, "float32") == 0, "%s", llama_error());
  }
  snprintf(path, sizeof path, "%s/model.safetensors", out);
  zs_export_options o;
  zs_export_options_default(&o);
  o.tensor_fn = llama_export_name;
  o.ctx = &r;
  ZS_OK_OR_DIE(zs_engine_export_safetensors_ex(e, path, &o));
  barrier();
  if (rank == 0) compare(out, &c, LST_F32, out + strlen(base) + 1);
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm);
  char base[64] = "/tmp/zs_llama_engine_XXXXXX";
  if (rank == 0 && !mkdtemp(base)) return 1;
  /* every rank needs the same directory name: rank 0's, sent as bytes in doubles */
  double b[64] = {0}, r[64];
  for (int i = 0; i < 64 && rank == 0; i++)
    b[i] = (unsigned char)base[i];
  ZS_OK_OR_DIE(zs_comm_allreduce(comm, b, r, 64, ZS_HOST_F64, ZS_RED_SUM));
  for (int i = 0; i < 64; i++)
    base[i] = (char)r[i];
  run(base, LLAMA_ARCH_LLAMA, rank);
  run(base, LLAMA_ARCH_QWEN2, rank);
  barrier();
  if (rank == 0) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", base);
  }
  zs_comm_destroy(comm);
  ZS_TEST_END("llama_engine");
}
