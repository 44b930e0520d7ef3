/* Budgeted partial offload: which units keep their optimizer state (and, with sharded params,
 * their param shard) on the device and which go to the host tier, under
 * zs_config.offload_budget_bytes. While the device bytes of the plan (persistent state plus the
 * buffers bound of zs_plan_buffers) exceed the budget, the unit that frees the most device bytes
 * (zs_placement_moved) goes to the host, ties to the lower unit index, as PyTorch FSDP2's
 * cpu_offload_by_budget. So the units on the host are a prefix of one fixed order: the same on
 * every rank (it depends only on the configuration and the unit sizes), monotone in the budget, and
 * never over it (or it does not fit: every unit is placed on the host and fits is 0). The engine's
 * commit gives each unit the table of its tier (zs_placement_table, frozen after for a frozen unit:
 * zs_placement_unit_table); the planner counts the same. Pure arithmetic: no allocation (the prefix
 * is found by bisection over the moved bytes, then ties in unit order). */
#ifndef ZS_SHARD_PLACEMENT_H
#define ZS_SHARD_PLACEMENT_H

#include <stddef.h>

#include "shard/plan.h"
#include "shard/plan_units.h"

typedef struct {
  int active;          /* a budget is set: the rest says where units go */
  size_t budget;       /* zs_config.offload_budget_bytes */
  size_t device_bytes; /* device bytes under this placement (persistent + buffers bound) */
  size_t floor_bytes;  /* device bytes with every unit on the host: the least budget that fits */
  size_t ceil_bytes;   /* device bytes with every unit on the device: no offload from here on */
  int fits;            /* device_bytes <= budget */
  int nhost;           /* units placed on the host */
  size_t host_moved;   /* bytes the host units hold in the host tier (host_pinned): their moved
                          bytes, plus the fp32 master a ZS_MASTER_PARAMS unit gains there when
                          its params stay on the device (zs_placement_host_bytes) */
  int with_params;     /* a unit on the host has its param shard there too (sharded params) */
  /* The rule: unit i is on the host when its moved bytes exceed cut, or equal cut and
     i <= tie_last. */
  size_t cut;
  int tie_last;
  /* The NVMe tier (zs_config.nvme_path set; all 0 without): after the budget's placement, while
     the host bytes (host_pinned of every unit's table, plus the tier's staging once a unit is
     there) exceed host_cap, the host-tier unit with the most optimizer-state bytes
     (zs_placement_nvme_bytes; ties: the lower index) moves its optimizer state (master or
     remainders where it has them, the state arrays) to the tier. The
     same prefix rule as the budget's: unit i is on the tier when its NVMe bytes are > 0 and
     exceed nvme_cut, or equal it and i <= nvme_tie_last. */
  int nvme;             /* nvme_path is set */
  size_t host_cap;      /* zs_config.offload_host_bytes */
  size_t host_bytes;    /* host_pinned bytes under this placement, staging included */
  size_t staging_bytes; /* the tier's staging (zs_placement_nvme_staging) when nnvme > 0, else 0 */
  size_t disk_bytes;    /* bytes of optimizer state in the tier's files */
  int host_fits;        /* host_bytes <= host_cap (1 without the tier) */
  int nnvme;            /* units on the tier */
  size_t nvme_cut;
  int nvme_tie_last;
} zs_placement;

/* Device bytes unit i frees when placed on the host (its optimizer state and, with sharded
   params, its param shard), saturating: the budget's measure (order and sums). A frozen unit has
   no optimizer state: it moves its param shard alone (sharded params), or nothing (0: it never
   goes to the host for the budget's sake, and where it does, when nothing fits, its table is the
   same). */
size_t zs_placement_moved(const zs_plan *p, const zs_plan_units *u, int i);
/* Host bytes (host_pinned) unit i holds when placed on the host: its moved bytes, except with
   ZS_MASTER_PARAMS and params left on the device (full params), where the host side adds the
   fp32 master the device side did without (zs_state_table_place_master). Saturating. */
size_t zs_placement_host_bytes(const zs_plan *p, const zs_plan_units *u, int i);
/* The placement of the units u under c (world ranks, p = zs_plan_make of c). Without a budget
   (offload_budget_bytes 0 or unset): active 0 and every unit follows the plan's table. Then,
   with nvme_path, the NVMe tier's placement (the fields after tie_last). */
void zs_placement_make(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u,
                       zs_placement *out);
/* Whether c offloads the optimizer (ZS_OFFLOAD_OPTIMIZER, or an offload budget that may place any
   unit's optimizer state on the host): the engine's optimizer then has workers and, on CUDA, the
   copy pipeline. */
int zs_placement_offload_optimizer(const zs_config *c);
/* The host arena bytes of the optimizer's copy pipeline under c (zs_offload_pipe_bytes: CUDA
   with ZS_OFFLOAD_OPTIMIZER or an offload budget; 0 otherwise), in host_pinned from create on. */
size_t zs_placement_pipe_bytes(const zs_config *c);
/* Host bytes of unit i's optimizer state (master or remainders, the state arrays; each array's
   whole pages, zs_host_charge) when its table (budget host flag `host`) keeps it on the host tier:
   what moving it to the NVMe tier frees there; 0 when it is on the device or the unit is frozen (no
   optimizer state). Saturating. */
size_t zs_placement_nvme_bytes(const zs_plan *p, const zs_plan_units *u, int i, int host);
/* Bytes per element of the NVMe tier's arrays under c's precision mode (eb[0], the master's file:
   4 for an fp32 master, 2 for ZS_MASTER_REMAINDER's remainders, 0 in lean mode, which has none;
   eb[1 + i], the optimizer's state i: moment_dtype's size, 0 past its count). The staging is
   sized by these whether or not a unit's table keeps a master file (ZS_MASTER_PARAMS with host
   params has none). */
void zs_placement_nvme_elems(const zs_config *c, size_t eb[1 + ZS_OPT_MAX_STATE]);
/* Host bytes of the NVMe tier's staging under c: the stream's 3 slots (look-ahead 1, see
   nvme_stream.h) of offload_chunk elements of each array (zs_placement_nvme_elems): 3 x
   offload_chunk x (the arrays' bytes), 36 x offload_chunk with two fp32 state arrays. */
size_t zs_placement_nvme_staging(const zs_config *c);
/* 1 when unit i's optimizer state is on the NVMe tier under pl. */
int zs_placement_nvme(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i);
/* The table commit gives unit i under pl: zs_placement_unit_table's for its budget placement,
   with its persistent master, remainders, state arrays on ZS_TIER_NVME when zs_placement_nvme. */
void zs_placement_unit_of(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i,
                          zs_state_table *t);
/* 1 when unit i is on the host under pl. */
int zs_placement_host(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i);
/* The table of a unit: the plan's, with the optimizer state and (sharded params) the param shard
   on the host tier (booked host_pinned) when host is set; with ZS_MASTER_PARAMS the master then
   follows zs_state_table_place_master (none where the param shard moved with the optimizer
   state, an fp32 master on the host where full params stay on the device). */
void zs_placement_table(const zs_plan *p, int host, zs_state_table *t);
/* The table commit gives unit i of u: zs_placement_table's, then frozen (frozen.h) when unit i
   is frozen. The planner and the placement count every unit's bytes through it. */
void zs_placement_unit_table(const zs_plan *p, const zs_plan_units *u, int i, int host,
                             zs_state_table *t);

#endif
