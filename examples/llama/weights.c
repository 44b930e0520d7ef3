/* Units, initial weights and the Hugging Face export of the Llama example (see weights.h). */
#include "weights.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/llama_layout.h"
#include "../common/llama_util.h"
#include "../common/rng.h"
#include "../common/util.h"
#include "hf_io.h"

/* A failure of the llama/ parts (llama_error()) as this program's error. */
#define LTRY(call)                                                                                 \
  do {                                                                                             \
    if ((call) != 0) return gpt2_fail("%s", llama_error());                                        \
  } while (0)

int llama_units_register(const llama_config *c, zs_engine *e, zs_unit **units) {
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    char name[32];
    LTRY(llama_unit_name(c, u, name, sizeof name));
    ZS_TRY(zs_engine_add_unit(e, name, nt, d, &units[u]));
  }
  return 0;
}

/* Element count of a descriptor. */
static size_t numel(const zs_tensor_desc *d) {
  size_t n = 1;
  for (int i = 0; i < d->ndim; i++)
    n *= (size_t)d->shape[i];
  return n;
}

/* Elements of c's largest tensor (whole, for the whole model's c). */
static size_t largest(const llama_config *c) {
  size_t most = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    for (int t = 0; t < nt; t++)
      if (numel(&d[t]) > most) most = numel(&d[t]);
  }
  return most;
}

int llama_init_random(const llama_config *c, zs_unit **units, uint64_t seed) {
  float *h = malloc(largest(c) * sizeof(float));
  if (!h) return gpt2_fail("out of host memory for the initial weights");
  int rc = 0;
  for (int u = 0; rc == 0 && u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    for (int t = 0; rc == 0 && t < nt; t++) {
      const size_t n = numel(&d[t]);
      const uint64_t stream = (uint64_t)u * 64 + (uint64_t)t;
      const int is_norm = strstr(d[t].name, "norm") != NULL;
      for (size_t i = 0; i < n; i++)
        h[i] = d[t].ndim == 2 ? 0.02f * rng_normal(seed, stream, i) : is_norm ? 1.0f : 0.0f;
      zs_status st = zs_unit_set_param_whole(units[u], t, h); /* a tp rank keeps its slice */
      if (st != ZS_OK) rc = gpt2_fail_zs("zs_unit_set_param_whole", st);
    }
  }
  free(h);
  return rc;
}

int llama_init_hf(const llama_config *c, zs_unit **units, const lhf_dir *d) {
  int64_t most = 0;
  for (int i = 0; i < d->ntensors; i++)
    if (lhf_numel(d, i) > most) most = lhf_numel(d, i);
  float *h = malloc((size_t)most * sizeof(float));
  if (!h) return gpt2_fail("out of host memory for the largest tensor");
  int rc = 0;
  for (int u = 0; rc == 0 && u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, ds);
    for (int t = 0; rc == 0 && t < nt; t++) {
      char name[160];
      int i = -1;
      if (llama_hf_name(c, u, t, name, sizeof name) == 0) i = lhf_find(d, name);
      if (i < 0) {
        rc = gpt2_fail("the Hugging Face directory has no %s", name);
      } else if (lhf_read(d, i, h, LST_F32) != 0) {
        rc = gpt2_fail("%s", llama_error());
      } else {
        zs_status st = zs_unit_set_param_whole(units[u], t, h);
        if (st != ZS_OK) rc = gpt2_fail_zs("zs_unit_set_param_whole", st);
      }
    }
  }
  free(h);
  return rc;
}

int llama_export_hf(const llama_config *c, zs_unit **units, const char *dir, zs_dtype dtype,
                    uint64_t max_shard_bytes, int rank) {
  lhw_writer w;
  int open = 0, rc = 0;
  if (rank == 0) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return gpt2_fail("cannot create %s", dir);
    if (llama_hf_export_open(dir, c, dtype == ZS_BF16 ? LST_BF16 : LST_F32, max_shard_bytes, &w) !=
        0)
      rc = gpt2_fail("%s", llama_error());
    else
      open = 1;
  }
  /* Every rank takes part in every gather (collective), even after rank 0 failed. */
  float *h = malloc(largest(c) * sizeof(float));
  if (!h) rc = gpt2_fail("out of host memory for the export");
  for (int u = 0; h && u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, ds);
    for (int t = 0; t < nt; t++) {
      zs_status st = zs_unit_get_param_whole(units[u], t, h);
      if (st != ZS_OK && rc == 0) rc = gpt2_fail_zs("zs_unit_get_param_whole", st);
      char name[160];
      if (open && rc == 0 && llama_hf_name(c, u, t, name, sizeof name) == 0 &&
          lhw_put(&w, name, h, LST_F32) != 0) {
        rc = gpt2_fail("%s", llama_error());
        lhw_abort(&w);
        open = 0;
      }
    }
  }
  free(h);
  if (open && lhw_close(&w) != 0 && rc == 0) rc = gpt2_fail("%s", llama_error());
  return rc;
}
