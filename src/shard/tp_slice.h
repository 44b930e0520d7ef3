/* A tensor as a whole-tensor step sees it, and a tensor-parallel slice's place in its whole tensor
 * (docs/PARALLEL.md §2): the engine's whole-tensor calls (zs_unit_get_param_whole, ...), the
 * planner's and the engine's whole-step plans and the whole step's join over the tp group
 * (tier/whole.c) share them. layout is a zs_tp_layout: ZS_TP_SPLIT_DIM0 slices are blocks of rows,
 * ZS_TP_SPLIT_DIM1 slices the same columns of every row; any other layout, or T = 1, is no split.
 */
#ifndef ZS_SHARD_TP_SLICE_H
#define ZS_SHARD_TP_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

/* Whether a tensor of this layout is split over a tp group of T ranks. */
static inline int zs_tp_is_split(int layout, int T) {
  return T > 1 && (layout == ZS_TP_SPLIT_DIM0 || layout == ZS_TP_SPLIT_DIM1);
}

/* The dimensions a tensor needs for this layout (ZS_TP_SPLIT_DIM0: 1, ZS_TP_SPLIT_DIM1: 2, else
   0), or -1 for a value that is not a zs_tp_layout. */
static inline int zs_tp_layout_dims(int layout) {
  if (layout < ZS_TP_REPLICATED || layout > ZS_TP_PARTIAL_GRAD) return -1;
  return layout == ZS_TP_SPLIT_DIM0 ? 1 : layout == ZS_TP_SPLIT_DIM1 ? 2 : 0;
}

/* rows x cols of the whole tensor whose slice (or, unsplit, itself) t is: the first dimension by
   the rest, the split dimension T times the slice's. 0 x 0 for a tensor without dimensions or
   elements. */
void zs_tp_whole_dims(const zs_tensor_desc *t, int layout, int T, int64_t *rows, int64_t *cols);

/* The floats the whole step lends to join a split tensor of n slice elements: chans channels of
   the whole tensor, and with ZS_TP_SPLIT_DIM1 a receive buffer the slices land in rank by rank
   before they are put in place; 0 unsplit. */
static inline size_t zs_tp_join_floats(int layout, int T, size_t n, int chans) {
  if (!zs_tp_is_split(layout, T)) return 0;
  return (size_t)T * n * (size_t)(chans + (layout == ZS_TP_SPLIT_DIM1));
}

/* The elements of slice q of T (n elements, `rows` rows) among the whole tensor's first `prefix`
   elements, which are the slice's first ones: a whole tensor's first elements are whole rows and
   the start of one more, and a slice's part of each row is contiguous and in row order. Where a
   whole-tensor optimizer keeps state over a prefix (Adafactor's factors), a slice keeps this
   share of it, so the slices' state put together is the whole tensor's. layout split. */
size_t zs_tp_prefix_share(int layout, int64_t rows, size_t n, int q, int T, size_t prefix);

/* Slice q of T (n elements, `rows` rows) of the whole tensor w to the slice sl (to_slice) or from
   it; layout split. */
void zs_tp_slice_copy(int layout, int64_t rows, size_t n, int q, int T, float *w, float *sl,
                      int to_slice);

#endif
