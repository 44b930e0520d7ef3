/* Tensor-parallel slices in their whole tensors (tp_slice.h). */
#include "shard/tp_slice.h"

#include <string.h>

void zs_tp_whole_dims(const zs_tensor_desc *t, int layout, int T, int64_t *rows, int64_t *cols) {
  int64_t n = t->ndim > 0 ? 1 : 0;
  for (int d = 0; d < t->ndim; d++)
    n *= t->shape[d];
  *rows = *cols = 0;
  if (!n) return;
  *rows = t->shape[0];
  *cols = n / *rows;
  if (zs_tp_is_split(layout, T)) *(layout == ZS_TP_SPLIT_DIM0 ? rows : cols) *= T;
}

void zs_tp_slice_copy(int layout, int64_t rows, size_t n, int q, int T, float *w, float *sl,
                      int to_slice) {
  if (layout == ZS_TP_SPLIT_DIM0) {
    if (to_slice)
      memcpy(sl, w + (size_t)q * n, n * sizeof *sl);
    else
      memcpy(w + (size_t)q * n, sl, n * sizeof *sl);
    return;
  }
  const size_t r = (size_t)rows, c = r ? n / r : 0;
  for (size_t i = 0; i < r; i++) {
    float *wr = w + i * c * (size_t)T + (size_t)q * c, *sr = sl + i * c;
    if (to_slice)
      memcpy(sr, wr, c * sizeof *sr);
    else
      memcpy(wr, sr, c * sizeof *sr);
  }
}

size_t zs_tp_prefix_share(int layout, int64_t rows, size_t n, int q, int T, size_t prefix) {
  if (layout == ZS_TP_SPLIT_DIM0) { /* slice q is the whole's elements [q n, (q + 1) n) */
    const size_t at = (size_t)q * n;
    return prefix <= at ? 0 : prefix - at < n ? prefix - at : n;
  }
  if (rows < 1 || !n) return 0;
  const size_t c = n / (size_t)rows, C = c * (size_t)T; /* a slice's columns, the whole's */
  const size_t full = prefix / C, part = prefix % C, at = (size_t)q * c;
  if (full >= (size_t)rows) return n;
  return full * c + (part <= at ? 0 : part - at < c ? part - at : c);
}
