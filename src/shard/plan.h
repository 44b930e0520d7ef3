/* The plan: computed once at engine creation from the configuration (stage or the independent
 * sharding switches, offload bits, shard group, dtypes). Its state table (state_table.h) is the
 * one place that says which buffers each unit has, where, and in which ledger category; its other
 * fields are decisions that are not about buffers: which reduction runs and when, whether the norm
 * is partial, whether updated params are published. Nothing else in the engine branches on the
 * stage. Pure arithmetic. */
#ifndef ZS_SHARD_PLAN_H
#define ZS_SHARD_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "mem/ledger.h"
#include "shard/state_table.h"
#include "zshard.h"

/* How a unit's gradient is reduced. */
typedef enum {
  ZS_REDUCE_ALL = 0,  /* optimizer state not sharded: all-reduce the full gradient in place */
  ZS_REDUCE_OWN_SLOT, /* full gradient kept, optimizer sharded: reduce-scatter, this rank's sum
                         lands in its own slot of the full gradient buffer */
  ZS_REDUCE_TO_SHARD  /* gradient sharded: reduce-scatter into the persistent gradient shard */
} zs_reduce_kind;

typedef struct {
  /* The switches resolved to 0/1 (stage is their shorthand: 1 shards the optimizer, 2 also the
     gradients, 3 also the params). The optimizer is sharded whenever gradients or params are. */
  int shard_params, shard_grads, shard_optimizer;
  int offload_params, offload_optimizer;
  int nshards; /* shards per unit: the shard group size when anything is sharded, else 1 */
  /* Which states every unit holds, where, sharded or full, in which ledger category: each unit
     starts from a copy of this table at commit (zs_unit.st). */
  zs_state_table table;
  /* Decisions, not buffers: they follow from the switches and run the same on every unit. */
  zs_reduce_kind reduce;
  int reduce_every_micro; /* a sharded gradient is reduced at every micro-step (accumulating in
                             the shard); a full one only at the last micro-step, except when
                             staged (every micro-step, from ZS_ST_GRAD_STAGE) */
  int norm_partial;       /* each rank's gradient-norm bins cover its shard only: all-reduce */
  int publish;            /* full params with sharded optimizer: all-gather after the update */
} zs_plan;

/* Resolves the switches (ZS_SHARD_AS_STAGE follows the stage) and derives the plan for shard groups
   of shard_size ranks. ZS_ERR_INVALID_ARG for an impossible combination (a sharded gradient or
   sharded params with full optimizer state, offloaded params that are not sharded, an offloaded
   optimizer that is not sharded), with the fix in the message. */
zs_status zs_plan_make(const zs_config *c, int shard_size, zs_plan *p);

/* Bytes of one unit of n elements on this rank, by ledger category: the persistent states of the
   plan's table (add[] is added to, so a caller can sum units; saturates at SIZE_MAX). */
void zs_plan_unit_bytes(const zs_plan *p, size_t n, size_t add[ZS_MEM_NCAT]);
/* The same for a unit whose table is t (a unit's own copy: a frozen one's, frozen.h, or one a
   budget places on the host, placement.h). */
void zs_plan_unit_bytes_of(const zs_plan *p, const zs_state_table *t, size_t n,
                           size_t add[ZS_MEM_NCAT]);

/* a + b*c, saturating at SIZE_MAX (a model too large for size_t must read as too large, never
   wrap): the planner's sums. */
size_t zs_plan_add_mul(size_t a, size_t b, size_t c);

/* Elements per rank-block of one reduction piece (reduce.c): the whole shard s, or fewer so that
   a piece's packed buffer of nblocks blocks stays within bucket_bytes, and never more than one
   unit packed (nblocks > shard_size: deterministic hybrid). */
size_t zs_plan_piece_len(const zs_config *c, int shard_size, size_t s, size_t nblocks);
/* Bytes of reduction scratch the reduction of one unit of P padded elements allocates (reduce.c):
   the conversion to reduce_dtype, the packed send and receive buffers of a reduce-scatter, the
   two buffers of the ordered (deterministic) all-reduce. */
size_t zs_plan_reduce_scratch(const zs_plan *p, const zs_config *c, int world, size_t P);

/* Elements of a unit of n elements after padding to the plan's shard count. */
size_t zs_plan_padded(const zs_plan *p, size_t n);

#endif
