/* Import and export of a Llama-family Hugging Face directory (see hf_io.h). */
#include "hf_io.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../common/llama_layout.h"
#include "../common/llama_util.h"

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

int llama_hf_export_check(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return 0; /* absent (or unreadable: creating or writing it reports that) */
  int rc = 0;
  for (struct dirent *de; rc == 0 && (de = readdir(dp));) {
    const char *n = de->d_name;
    const size_t len = strlen(n);
    if (!strcmp(n, "model.safetensors.index.json") ||
        (!strncmp(n, "model", 5) && len > 12 && !strcmp(n + len - 12, ".safetensors")))
      rc = llama_fail("%s already holds %s (an earlier export?): files a new export does not "
                      "overwrite would stay and be read instead; remove them or export to another "
                      "directory",
                      dir, n);
  }
  closedir(dp);
  return rc;
}

int llama_hf_export_open(const char *dir, const llama_config *c, lst_dtype dtype,
                         uint64_t max_shard_bytes, lhw_writer *w) {
  char path[4096];
  LL_TRY(llama_hf_export_check(dir));
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
