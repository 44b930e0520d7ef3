/* Weights between a Hugging Face directory and the engine (see engine_io.h). */
#include "engine_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/llama_layout.h"
#include "../common/llama_util.h"
#include "hf_io.h"

/* Records a failed engine call with zs_last_error() and returns -1. */
static int fail_zs(const char *what, zs_status s) {
  return llama_fail("%s: %s: %s", what, zs_status_str(s), zs_last_error());
}

int llama_engine_add_units(zs_engine *e, const llama_config *c, zs_unit **units) {
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    char name[32];
    const int nt = llama_unit_descs(c, u, d);
    llama_unit_name(c, u, name, sizeof name);
    const zs_status s = zs_engine_add_unit(e, name, nt, d, &units[u]);
    if (s != ZS_OK) return fail_zs("zs_engine_add_unit", s);
  }
  return 0;
}

/* Elements of the largest tensor of c. */
static int64_t largest_tensor(const llama_config *c) {
  int64_t m = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    for (int t = 0; t < nt; t++) {
      const int64_t n = d[t].ndim == 2 ? d[t].shape[0] * d[t].shape[1] : d[t].shape[0];
      m = n > m ? n : m;
    }
  }
  return m;
}

int llama_engine_load(const lhf_dir *d, const llama_config *c, zs_unit **units) {
  float *buf = malloc((size_t)largest_tensor(c) * 4);
  if (!buf) return llama_fail("out of host memory loading the weights");
  int rc = 0;
  char name[160];
  for (int u = 0; rc == 0 && u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, ds);
    for (int t = 0; rc == 0 && t < nt; t++) {
      llama_hf_name(c, u, t, name, sizeof name);
      const int i = lhf_find(d, name);
      if (i < 0) {
        rc = llama_fail("the weights lack %s", name);
      } else if ((rc = lhf_read(d, i, buf, LST_F32)) == 0) {
        const zs_status s = zs_unit_set_param_n(units[u], t, buf, lhf_numel(d, i));
        if (s != ZS_OK) rc = fail_zs(name, s);
      }
    }
  }
  free(buf);
  return rc;
}

int llama_engine_export(const llama_config *c, zs_unit **units, const char *dir, lst_dtype dtype,
                        uint64_t max_shard_bytes, int rank) {
  lhw_writer w;
  int wrc = rank == 0 ? llama_hf_export_open(dir, c, dtype, max_shard_bytes, &w) : 0;
  const int opened = rank == 0 && wrc == 0;
  float *buf = malloc((size_t)largest_tensor(c) * 4);
  if (!buf) { /* before any gather (see engine_io.h: the caller keeps one tensor's room) */
    if (opened) lhw_abort(&w);
    return llama_fail("out of host memory exporting the weights");
  }
  char name[160];
  int grc = 0;
  for (int u = 0; grc == 0 && u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, ds);
    for (int t = 0; grc == 0 && t < nt; t++) {
      const zs_status s = zs_unit_get_param(units[u], t, buf);
      if (s != ZS_OK) {
        grc = fail_zs("zs_unit_get_param", s); /* the engine failed: on every rank */
      } else if (opened && wrc == 0) {
        llama_hf_name(c, u, t, name, sizeof name);
        wrc = lhw_put(&w, name, buf, LST_F32);
      }
    }
  }
  free(buf);
  if (opened) {
    if (wrc == 0 && grc == 0)
      wrc = lhw_close(&w);
    else
      lhw_abort(&w);
  }
  return grc || wrc ? -1 : 0;
}

int llama_export_name(void *ctx, const char *unit, const char *tensor, int ndim,
                      const int64_t *shape, zs_export_tensor *out) {
  const llama_config *c = ctx;
  (void)ndim;
  (void)shape;
  for (int u = 0; u < llama_num_units(c); u++) {
    char name[32];
    llama_unit_name(c, u, name, sizeof name);
    if (strcmp(name, unit) != 0) continue;
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    for (int t = 0; t < nt; t++)
      if (strcmp(d[t].name, tensor) == 0)
        return llama_hf_name(c, u, t, out->name, sizeof out->name);
    return -1;
  }
  return -1;
}
