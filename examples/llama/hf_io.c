/* Import and export of a Llama-family Hugging Face directory (see hf_io.h). */
#include "hf_io.h"

#include <stdlib.h>

#include "layout.h"
#include "util.h"

int llama_hf_import(const char *dir, int seq, llama_config *c, lhf_dir *d) {
  char path[4096];
  LL_TRY(llama_join(dir, "config.json", path, sizeof path));
  LL_TRY(llama_config_load(c, path));
  LL_TRY(llama_config_check(c, seq));
  if (lhf_open(d, dir) || lhf_check(d, c)) {
    lhf_close(d);
    return -1;
  }
  return 0;
}

int llama_hf_export_open(const char *dir, const llama_config *c, lst_dtype dtype,
                         uint64_t max_shard_bytes, lhw_writer *w) {
  char path[4096];
  LL_TRY(llama_join(dir, "config.json", path, sizeof path));
  const char *tdt = dtype == LST_F32 ? "float32" : dtype == LST_BF16 ? "bfloat16" : "float16";
  LL_TRY(llama_config_write(c, path, tdt));
  int n = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    n += llama_unit_descs(c, u, ds);
  }
  lhw_entry *e = calloc((size_t)n, sizeof *e);
  if (!e) return llama_fail("out of host memory");
  int k = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, ds);
    for (int t = 0; t < nt; t++, k++) {
      llama_hf_name(c, u, t, e[k].name, sizeof e[k].name);
      e[k].ndim = ds[t].ndim;
      for (int i = 0; i < ds[t].ndim; i++)
        e[k].shape[i] = ds[t].shape[i];
    }
  }
  const int rc = lhw_open(w, dir, e, n, dtype, max_shard_bytes);
  free(e);
  return rc;
}
