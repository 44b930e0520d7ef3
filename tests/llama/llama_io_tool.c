/* The Llama example's Hugging Face I/O as a program, for tests/llama/test_llama_hf.sh:
 *   llama_io_tool dump DIR OUT
 *       imports DIR (config.json checked, every tensor checked) and writes each tensor of the
 *       layout as OUT/<Hugging Face name>.f32 (fp32, read with lhf_read), and OUT/config.txt
 *       (the parsed fields, "key value" lines)
 *   llama_io_tool copy SRC DST F32|F16|BF16 SHARD_BYTES [f32|bf16]
 *       imports SRC and exports it to DST (created) in the given dtype and shard size, each tensor
 *       read in the last argument's engine dtype (default f32) and streamed to the writer
 * Exit 0, or 1 with the error on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/llama_layout.h"
#include "common/llama_util.h"
#include "llama/hf_io.h"

static int dump(const char *dir, const char *out) {
  llama_config c;
  lhf_dir d;
  LL_TRY(llama_hf_import(dir, 1, &c, &d));
  mkdir(out, 0755);
  char path[4400], name[160];
  int rc = 0;
  for (int u = 0; rc == 0 && u < llama_num_units(&c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(&c, u, ds);
    for (int t = 0; rc == 0 && t < nt; t++) {
      llama_hf_name(&c, u, t, name, sizeof name);
      const int i = lhf_find(&d, name);
      const size_t n = (size_t)lhf_numel(&d, i);
      float *v = malloc(n * 4);
      snprintf(path, sizeof path, "%s/%s.f32", out, name);
      FILE *f = NULL;
      rc = !v || lhf_read(&d, i, v, LST_F32) || !(f = fopen(path, "wb")) || fwrite(v, 4, n, f) != n;
      if (f && fclose(f)) rc = 1;
      if (rc && !llama_error()[0]) llama_fail("cannot write %s", path);
      free(v);
    }
  }
  lhf_close(&d);
  snprintf(path, sizeof path, "%s/config.txt", out);
  FILE *f = fopen(path, "w");
  if (!f) return llama_fail("cannot write %s", path);
  fprintf(f,
          "arch %s\nvocab %d\nhidden %d\nintermediate %d\nlayers %d\nheads %d\nkv_heads %d\n"
          "head_dim %d\nmax_pos %d\nrope_theta %.17g\nrms_eps %.17g\nrope_llama3 %d\n"
          "rope_factor %.17g\nrope_low_freq %.17g\nrope_high_freq %.17g\nrope_orig_max_pos %d\n"
          "qkv_bias %d\ntied %d\nsliding_window %d\n",
          llama_arch_name(c.arch), c.vocab, c.hidden, c.intermediate, c.layers, c.heads, c.kv_heads,
          c.head_dim, c.max_pos, c.rope_theta, c.rms_eps, c.rope_llama3, c.rope_factor,
          c.rope_low_freq, c.rope_high_freq, c.rope_orig_max_pos, c.qkv_bias, c.tied,
          c.sliding_window);
  fclose(f);
  return rc ? -1 : 0;
}

static int copy(const char *src, const char *dst, const char *dtype, uint64_t shard, int via_bf16) {
  lst_dtype dt;
  if (lst_dtype_parse(dtype, &dt)) return llama_fail("dtype %s: F32, F16 or BF16", dtype);
  llama_config c;
  lhf_dir d;
  LL_TRY(llama_hf_import(src, 1, &c, &d));
  mkdir(dst, 0755);
  lhw_writer w;
  if (llama_hf_export_open(dst, &c, dt, shard, &w)) {
    lhf_close(&d);
    return -1;
  }
  int rc = 0;
  char name[160];
  for (int u = 0; rc == 0 && u < llama_num_units(&c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(&c, u, ds);
    for (int t = 0; rc == 0 && t < nt; t++) {
      llama_hf_name(&c, u, t, name, sizeof name);
      const int i = lhf_find(&d, name);
      void *v = malloc((size_t)lhf_numel(&d, i) * 4);
      const lst_dtype eng = via_bf16 ? LST_BF16 : LST_F32;
      rc = !v ? llama_fail("out of memory") : lhf_read(&d, i, v, eng) || lhw_put(&w, name, v, eng);
      free(v);
    }
  }
  lhf_close(&d);
  if (rc) {
    lhw_abort(&w);
    return -1;
  }
  return lhw_close(&w);
}

int main(int argc, char **argv) {
  int rc = -1;
  if (argc == 4 && strcmp(argv[1], "dump") == 0)
    rc = dump(argv[2], argv[3]);
  else if ((argc == 6 || argc == 7) && strcmp(argv[1], "copy") == 0)
    rc = copy(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 10),
              argc == 7 && strcmp(argv[6], "bf16") == 0);
  else
    llama_fail(
        "usage: llama_io_tool dump DIR OUT | copy SRC DST F32|F16|BF16 SHARD_BYTES [f32|bf16]");
  if (rc) fprintf(stderr, "error: %s\n", llama_error());
  return rc ? 1 : 0;
}
