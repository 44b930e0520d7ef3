/* Packed optimizer state: a unit whose tensors' groups keep different numbers of state arrays
 * (Muon matrices beside AdamW norms and biases), or keep them over part of a tensor (Adafactor's
 * factors: a matrix's first rows + cols elements), holds its array i only for the elements kept,
 * back to back in tensor order, instead of over its whole range. Each rank's array holds the
 * most elements any rank of its shard group keeps in its shard, so every rank allocates the same
 * bytes and the planner's figure stays exact. A unit whose tensors all keep array i over all
 * their elements holds it unpacked, over its whole range as before (padding included). Pure
 * arithmetic. */
#ifndef ZS_SHARD_OPT_PACK_H
#define ZS_SHARD_OPT_PACK_H

#include <stddef.h>

/* A unit's tensors as packing sees them: tensor k has numel[k] elements, back to back from flat
   element 0 (layout.h), and keeps its group optimizer's first keeps[k] state arrays over its
   first part[k] elements (part NULL, or part[k] >= numel[k]: all of them). */
typedef struct {
  int n;
  const size_t *numel;
  const int *keeps;
  const size_t *part;
} zs_pack_unit;

/* The elements of each array it keeps that tensor k holds: its first ones. */
static inline size_t zs_pack_part(const zs_pack_unit *t, int k) {
  return t->part && t->part[k] < t->numel[k] ? t->part[k] : t->numel[k];
}

/* Whether array i of a unit that keeps nstate arrays is packed: i < nstate, and a tensor with
   elements keeps i or fewer arrays, or keeps it over part of its elements. */
int zs_pack_on(const zs_pack_unit *t, int i, int nstate);

/* The kept elements of array i in [lo, hi) (flat): a kept element's index in the
   packed array of a rank whose optimizer range starts at lo is zs_pack_kept(t, i, lo, x). */
size_t zs_pack_kept(const zs_pack_unit *t, int i, size_t lo, size_t hi);

/* The elements packed array i holds on every rank: with sharded state, the most that any of the
   nshards ranks keeps in its shard of the unit padded to P elements; else the kept elements of
   the whole unit. */
size_t zs_pack_elems(const zs_pack_unit *t, int i, size_t P, int nshards, int sharded);

#endif
