/* The tiers a unit's state lives on (device memory, the pinned host arena, the NVMe tier), as one
 * table of operations each, in the manner of a transport table: allocate a state, read and write
 * a range of an optimizer array, and run the step's update over a unit. The engine allocates,
 * steps and (through master_io.h) reads and writes every unit through these, never asking where
 * the state is. Which tier holds what is the state table's answer (shard/state_table.h: each
 * state's zs_tier); this layer only acts on it. Not thread-safe: one engine call at a time. */
#ifndef ZS_TIER_TIER_H
#define ZS_TIER_TIER_H

#include <stddef.h>

#include "optim/optim.h"
#include "shard/shard.h"

/* A unit's optimizer arrays, in the order checkpoints and the NVMe tier's files number them: the
   master (the fp32 master, or ZS_MASTER_REMAINDER's 16-bit remainders; no array where the params
   are the master), then the optimizer's state i at ZS_ARR_OPT0 + i (base/opt_shape.h). */
typedef enum { ZS_ARR_MASTER = 0, ZS_ARR_OPT0 = 1, ZS_ARR_N = 1 + ZS_OPT_MAX_STATE } zs_arr;

/* What the tiers act on: the engine's shard context (units, config, device, memory), its
   optimizer, and the NVMe tier when one is open. Owned by the engine. */
typedef struct zs_tiers {
  zs_shard_ctx *sh;
  zs_optim *optim;
  struct zs_nvme_tier *nvme; /* tier/nvme_tier.h, or NULL: no unit on disk */
} zs_tiers;

typedef struct zs_tier_ops {
  const char *name; /* "device", "host", "nvme" */
  /* Allocates state s of u on this tier, zeroed, into its slot (ledger-booked). The NVMe tier's
     files are made when it opens (zs_nvme_tier_open): its slot stays NULL. */
  zs_status (*alloc)(zs_tiers *t, zs_unit *u, zs_state s);
  /* Frees state s of u (a persistent state allocated by alloc) and clears its slot. */
  void (*free)(zs_tiers *t, zs_unit *u, zs_state s);
  /* n elements of array a of u from element `first` of its optimizer range (flat element
     u->opt_off + first), in their stored type (zs_tier_elem), into or from host memory. Not
     collective; waits for its copies. The NVMe tier's errors are ZS_ERR_IO naming the file and
     the offset; outside a step only there. */
  zs_status (*read)(zs_tiers *t, const zs_unit *u, zs_arr a, size_t first, size_t n, void *dst);
  zs_status (*write)(zs_tiers *t, const zs_unit *u, zs_arr a, size_t first, size_t n,
                     const void *src);
  /* The step's update of a trained unit's optimizer range: zs_optim_update (prepared) on each
     tensor's segment, the state streamed through host memory where the tier needs it. Local. */
  zs_status (*update)(zs_tiers *t, zs_unit *u);
} zs_tier_ops;

/* The tiers' operations. Memory (tier_memory.c): device memory and the host arena, addressed in
   place; their update hands each tensor's segment to the optimizer where it lies. NVMe
   (nvme_tier.c, nvme_range.c; open and close in nvme_tier.h): alloc does nothing (the files are
   made when the tier opens); read and write take any range of one array through the tier's
   staging (ZS_ERR_IO naming the file and the offset; ZS_ERR_INVALID_ARG for a range past opt_n or
   an array the unit has no file for; a failed write may leave the range partly written); update
   runs one pass of the stream (look-ahead 1) over the unit's files, the optimizer on each chunk's
   spans in place with state_host = 1 (the bits of host offload; a whole tensor's results stored
   first: whole.h), and adds the bytes and seconds to the tier's totals. */
extern const zs_tier_ops zs_tier_device_ops, zs_tier_host_ops, zs_tier_nvme_ops;

/* The optimizer's segment of tensor k of u over flat elements [a, b) (inside its optimizer range)
   on the memory tiers: its state (NULL for a packed array it does not keep over all of [a, b)),
   gradient and params where they live, and its whole step's result while u has one
   (zs_unit.whole_dir). */
zs_optim_seg zs_tier_mem_seg(zs_unit *u, int k, size_t a, size_t b);

/* The operations of tier k. */
const zs_tier_ops *zs_tier_ops_at(zs_tier k);

/* The state that holds array a of u: for the master ZS_ST_MASTER_REM, ZS_ST_MASTER, or the params'
   home that u->master aliases (ZS_MASTER_PARAMS without a copy); else the optimizer's state. */
zs_state zs_arr_state(const zs_unit *u, zs_arr a);

/* The tier of array a of u, and the bytes per element it stores (4 for the fp32 master, 2 for
   the remainders, the state's dtype). */
const zs_tier_ops *zs_tier_of(const zs_unit *u, zs_arr a);
size_t zs_tier_elem(const zs_unit *u, zs_arr a);

/* Whether u's optimizer state is on the NVMe tier (it has a file there): its reads can fail with
   the tier's ZS_ERR_IO, and a failed write leaves a half-written file. */
static inline int zs_unit_on_nvme(const zs_unit *u) {
  for (int j = 0; j < ZS_ARR_N; j++)
    if (u->nv[j]) return 1;
  return 0;
}

/* The tier that runs u's step: the NVMe tier when u has files there, else memory (device or
   host arena, mixed per state as the table says). */
const zs_tier_ops *zs_tier_of_unit(const zs_unit *u);

#endif
