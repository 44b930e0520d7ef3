/* Flat-buffer layout of a unit: tensors back to back, the total padded to divide by the shard
   count; rank k of the shard group owns elements [k*shard, (k+1)*shard). Pure arithmetic. */
#ifndef ZS_SHARD_LAYOUT_H
#define ZS_SHARD_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

typedef struct {
  int ntensors;
  size_t *off;        /* element offset of tensor i in the flat buffer */
  size_t *numel;      /* element count of tensor i */
  size_t numel_total; /* sum of numel (unpadded) */
  size_t padded;      /* numel_total rounded up to a multiple of nshards (>= nshards) */
  size_t shard;       /* padded / nshards */
  size_t shard_off;   /* this rank's first element: shard_rank * shard */
} zs_layout;

/* Validates the tensor descriptors and fills the layout; allocates off/numel. */
zs_status zs_layout_build(zs_layout *l, int ntensors, const zs_tensor_desc *t);
/* Sets padding and this rank's range for nshards shards (after build). */
void zs_layout_shard(zs_layout *l, int nshards, int shard_rank);
void zs_layout_free(zs_layout *l);
/* Intersection of tensor i with [lo, hi): returns 0 if empty, else sets *a,*b (flat offsets). */
int zs_layout_overlap(const zs_layout *l, int i, size_t lo, size_t hi, size_t *a, size_t *b);

#endif
