/* The state table: for one unit, every state it can hold (params, gradients, fp32 master, the
 * optimizer's state arrays, and the gathered and reduction buffers) with where it lives and how
 * much of the unit it covers. It is the one place that says which buffers exist: allocation,
 * freeing, the ledger, the planner, checkpoint ranges and the step iterate it. The plan (plan.h)
 * holds the table every unit starts from; a unit keeps its own copy, so per-unit placement is an
 * entry, not a flag. Pure data and arithmetic. */
#ifndef ZS_SHARD_STATE_TABLE_H
#define ZS_SHARD_STATE_TABLE_H

#include <stddef.h>

#include "base/opt_shape.h"
#include "mem/ledger.h"
#include "shard/layout.h"
#include "zshard.h"

/* The states of a unit. A role with a full and a shard state (params, gradients) has exactly one
   of them persistent: its home, where the optimizer reads and writes (zs_state_home). */
typedef enum {
  /* Compute params over the whole padded unit (param_dtype): persistent when params are not
     sharded (params), else the gathered copy, only while gathered (buffers). */
  ZS_ST_PARAM_FULL = 0,
  /* Compute params of this rank's shard (param_dtype): persistent when params are sharded, on the
     device (params) or in the host arena with ZS_OFFLOAD_PARAMS (host_pinned). */
  ZS_ST_PARAM_SHARD,
  /* The gradient over the whole padded unit (the accumulator's dtype when persistent, else
     param_dtype): persistent when gradients are not sharded (grads; with ZS_REDUCE_OWN_SLOT this
     rank's reduced shard lands in its own slot), else the buffer the backward writes, from
     zs_unit_grad to the reduction (buffers). */
  ZS_ST_GRAD_FULL,
  /* The reduced gradient of this rank's shard (the accumulator's dtype, zs_grad_accum_dtype):
     persistent when gradients are sharded (grads). */
  ZS_ST_GRAD_SHARD,
  /* Full gradients accumulated per micro-step (deterministic mode, or grad_accum_fp32 with bf16
     params): the zeroed per-micro-step buffer zs_unit_grad hands out (param_dtype), from
     zs_unit_grad to its micro-step's reduction (buffers). */
  ZS_ST_GRAD_STAGE,
  /* The fp32 master copy over the optimizer range: the whole unit, or this rank's shard when the
     optimizer is sharded; on the device (optimizer) or in the host arena with
     ZS_OFFLOAD_OPTIMIZER (host_pinned). */
  ZS_ST_MASTER, /* life NONE when the params are the master (ZS_MASTER_PARAMS, ZS_MASTER_LEAN) */
  /* The optimizer's state arrays (base/opt_shape.h: slot i is its state i, in
     zs_config.moment_dtype), placed and sized as the master; life NONE past its count. */
  ZS_ST_OPT0,
  ZS_ST_OPT1,
  /* ZS_MASTER_REMAINDER: the 16-bit remainder that completes the bf16 params' home to the fp32
     master over the optimizer range (base/bf16_rem.h; 2 bytes per element, dtype ZS_BF16 for
     its size only: bits, not a bf16 value); placed and sized as the master. Life NONE in the
     other modes. */
  ZS_ST_MASTER_REM,
  ZS_ST_N
} zs_state;
/* The state table slot of the optimizer's state i (0 <= i < ZS_OPT_MAX_STATE). */
#define ZS_ST_OPT(i) ((zs_state)(ZS_ST_OPT0 + (i)))
_Static_assert(ZS_ST_OPT1 == ZS_ST_OPT0 + ZS_OPT_MAX_STATE - 1, "one slot per optimizer state");

/* Where a state lives: the device, the host arena, or the NVMe tier's files (zs_config.nvme_path;
   the optimizer state only, placement.h; its bytes are disk, no ledger category: the planner
   skips them in memory sums and counts them apart). */
typedef enum { ZS_TIER_DEVICE = 0, ZS_TIER_HOST, ZS_TIER_NVME } zs_tier;

/* When a state exists. */
typedef enum {
  ZS_LIFE_NONE = 0,   /* never, in this configuration */
  ZS_LIFE_PERSISTENT, /* allocated zeroed at commit, freed at destroy */
  ZS_LIFE_TRANSIENT   /* allocated by src/shard while in use (gather, backward), freed after */
} zs_life;

/* One state of one unit. */
typedef struct {
  zs_life life;
  zs_tier tier;
  zs_dtype dtype;
  int sharded;    /* covers this rank's shard [shard_off, shard_off + shard), else [0, padded) */
  zs_mem_cat cat; /* the ledger category its bytes are booked in */
  /* A packed optimizer array (shard/opt_pack.h): it holds packed_elems elements, the kept
     tensors' part of its range back to back, instead of the range; 0: the range's. */
  int packed;
  size_t packed_elems;
} zs_state_entry;

typedef struct {
  zs_state_entry s[ZS_ST_N];
  /* zs_config.master == ZS_MASTER_PARAMS (or ZS_MASTER_LEAN): the params are the master wherever
     they live on the optimizer state's tier (zs_state_table_place_master decides ZS_ST_MASTER's
     life). */
  int master_params;
  /* ZS_MASTER_LEAN: the bf16 params are the master on whichever tier they live, beside the state
     arrays on theirs (the update stages them: optim.h): ZS_ST_MASTER's life is NONE on every tier.
   */
  int master_lean;
} zs_state_table;

/* Fills t for the resolved switches: shard_* and offload_* as in zs_plan, deterministic from
   the configuration, pdt the param (and gradient) dtype.

   Precision: master is zs_config.master. ZS_MASTER_PARAMS (fp32 params) sets t->master_params,
   and zs_state_table_place_master gives ZS_ST_MASTER its life. Lean mode (ZS_MASTER_LEAN: bf16
   params) sets t->master_params and t->master_lean: its bf16 params are the master on any tier,
   read and written through them (zs_unit_master_in_params), with no alias and no fp32 master
   (the optimizer's state on its tier). ZS_MASTER_REMAINDER (bf16 params) makes ZS_ST_MASTER's
   life NONE and ZS_ST_MASTER_REM persistent: the params' home and the remainder are the master
   (every reader and writer joins or splits them: src/tier/master_rem.h); the remainder lives on
   the optimizer state's tier (with its state arrays), the params where the params' entries say.
   nstate is the optimizer's state count (base/opt_shape.h): slots ZS_ST_OPT(0 .. nstate - 1)
   are persistent, in moment_dt (zs_config.moment_dtype) on whichever tier they live. gdt is the
   accumulated gradient's dtype (zs_grad_accum_dtype): the persistent gradient's; full gradients
   in another dtype than pdt are staged per micro-step (ZS_ST_GRAD_STAGE), as deterministic ones. */
void zs_state_table_make(zs_state_table *t, int shard_params, int shard_grads, int shard_optimizer,
                         int offload_params, int offload_optimizer, int deterministic, zs_dtype pdt,
                         zs_dtype gdt, int master, zs_dtype moment_dt, int nstate);

/* A unit that keeps n < nstate arrays (its tensors' parameter groups run optimizers with less
   state than the configuration's): slots ZS_ST_OPT(n ..) stop existing (a no-op for n >= the
   table's count). */
void zs_state_table_keep_state(zs_state_table *t, int n);

/* Packs state s (an optimizer array) to elems elements (opt_pack.h). */
void zs_state_table_pack(zs_state_table *t, zs_state s, size_t elems);
/* Unpacks every state (the NVMe tier's files hold whole ranges). */
void zs_state_table_unpack(zs_state_table *t);

/* ZS_MASTER_PARAMS (t->master_params; else a no-op): ZS_ST_MASTER's life from the tiers. Where
   the params' home (fp32, over the whole optimizer range) lives on the optimizer state's tier,
   it is the master: life NONE, nothing allocated or booked, the unit's master pointer aliases it
   (zs_unit_alias_master). This holds with no offload, with ZS_OFFLOAD_OPTIMIZER |
   ZS_OFFLOAD_PARAMS (the arena's param shard is the master) and for a unit a budget leaves on
   the device or places on the host with its param shard (sharded params). Where the two live
   apart (the optimizer state on the host with the params on the device: ZS_OFFLOAD_OPTIMIZER
   alone, or a budget's host unit with full params; or ZS_OFFLOAD_PARAMS alone, the reverse) the
   update cannot write one tier's params as the other's master: a real fp32 master, PERSISTENT
   on the optimizer's tier, as with ZS_MASTER_FP32. The bits are the same either way (the fp32
   params equal the fp32 master after every update). Lean mode (t->master_lean): always NONE, the
   bf16 params are the master wherever they live. Call after any change of tier, before
   zs_state_table_freeze (a frozen unit has no master at all). */
void zs_state_table_place_master(zs_state_table *t);

/* The state of a role that is persistent: ZS_ST_PARAM_FULL or ZS_ST_PARAM_SHARD for params,
   ZS_ST_GRAD_FULL or ZS_ST_GRAD_SHARD for gradients (full: either state of the role). */
zs_state zs_state_home(const zs_state_table *t, zs_state full);

/* Whether state s exists with life l. */
static inline int zs_state_is(const zs_state_table *t, zs_state s, zs_life l) {
  return t->s[s].life == l;
}

/* The element range of state s of a unit laid out as l: [*off, *off + *n) of the flat unit. */
void zs_state_range(const zs_state_table *t, zs_state s, const zs_layout *l, size_t *off,
                    size_t *n);

/* Elements of state s for a unit of P padded elements split in shards of sh elements (a packed
   array's packed_elems). */
size_t zs_state_elems(const zs_state_table *t, zs_state s, size_t P, size_t sh);
/* Its bytes (an allocated unit's: no overflow check). */
size_t zs_state_bytes(const zs_state_table *t, zs_state s, size_t P, size_t sh);

#endif
