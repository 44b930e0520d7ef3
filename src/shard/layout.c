/* Unit layout: offsets, padding and shard ranges. */
#include "layout.h"

#include <stdlib.h>

#include "base/error.h"

zs_status zs_layout_build(zs_layout *l, int ntensors, const zs_tensor_desc *t) {
  l->ntensors = ntensors;
  l->off = calloc((size_t)ntensors, sizeof *l->off);
  l->numel = calloc((size_t)ntensors, sizeof *l->numel);
  if (!l->off || !l->numel) {
    zs_layout_free(l);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for a unit layout");
  }
  size_t total = 0;
  for (int i = 0; i < ntensors; i++) {
    size_t n = 1;
    for (int d = 0; d < t[i].ndim; d++) {
      if (n && (uint64_t)t[i].shape[d] > SIZE_MAX / n) { /* n is 0 after a zero dimension */
        zs_layout_free(l);
        return zs_err(ZS_ERR_INVALID_ARG, "tensor %d ('%s') has too many elements", i,
                      t[i].name ? t[i].name : "?");
      }
      n *= (size_t)t[i].shape[d];
    }
    l->off[i] = total;
    l->numel[i] = n;
    total += n;
  }
  l->numel_total = total;
  zs_layout_shard(l, 1, 0);
  return ZS_OK;
}

void zs_layout_shard(zs_layout *l, int nshards, int shard_rank) {
  size_t s = (size_t)nshards;
  l->padded = (l->numel_total + s - 1) / s * s;
  if (l->padded < s) l->padded = s;
  l->shard = l->padded / s;
  l->shard_off = (size_t)shard_rank * l->shard;
}

void zs_layout_free(zs_layout *l) {
  free(l->off);
  free(l->numel);
  l->off = l->numel = NULL;
}

int zs_layout_overlap(const zs_layout *l, int i, size_t lo, size_t hi, size_t *a, size_t *b) {
  size_t s = l->off[i], e = l->off[i] + l->numel[i];
  size_t x = s > lo ? s : lo, y = e < hi ? e : hi;
  if (x >= y) return 0;
  *a = x;
  *b = y;
  return 1;
}
