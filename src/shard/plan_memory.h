/* What a plan allocates on each rank for a set of units, counted where the placement puts each
 * unit: zs_plan_memory, which commit's fit check, zs_engine_plan_memory and the planner share.
 * Above the placement (placement.h). Pure arithmetic. */
#ifndef ZS_SHARD_PLAN_MEMORY_H
#define ZS_SHARD_PLAN_MEMORY_H

#include <stddef.h>

#include "mem/ledger.h"
#include "shard/plan.h"
#include "shard/plan_units.h"
#include "zshard.h"

/* What this rank holds for the given units on `world` ranks: persistent state by category,
   exactly as the engine allocates it, and in out[ZS_MEM_BUFFERS] a bound on the transient
   buffers, the sum of what can be live at once: gathered params ((held_units + prefetch_units)
   of the largest unit, or max_live_bytes), one unit's full gradient when gradients are sharded
   plus the largest unit's reduction scratch (gradients and scratch: of trainable units only, a
   frozen unit has neither) (zs_plan_reduce_scratch), or with full gradients
   the scratch or (deterministic) the staging buffer, whichever is larger (never both at once), the
   gradient-norm bins, and the device temporary of a host-resident param update (offloaded params
   alone on CUDA). zs_unit_get_param's fp32 copy (outside steps) is not included. With an
   offload budget, each unit's persistent state is counted where the budget places it
   (placement.h), as commit allocates it; with nvme_path, optimizer state the placement puts on
   the NVMe tier is disk, not counted here (zs_placement.disk_bytes), and the tier's staging is
   host_pinned. Saturates at SIZE_MAX. */
void zs_plan_memory(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u,
                    size_t out[ZS_MEM_NCAT]);

#endif
