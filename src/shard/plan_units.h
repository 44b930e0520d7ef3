/* The units a plan is computed for (the engine's registered units or the planner's bare element
 * counts) and the plan's bound on the transient buffers over them. Above shard.h (it reads a
 * registered unit's layout and frozen flag), below the placement and zs_plan_memory. Pure
 * arithmetic. */
#ifndef ZS_SHARD_PLAN_UNITS_H
#define ZS_SHARD_PLAN_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "shard/opt_pack.h"
#include "shard/plan.h"
#include "shard/state_table.h"
#include "zshard.h"

struct zs_unit;

/* The units a plan is computed for: the engine's registered units (units), or bare element
   counts (numel: the planner's model descriptions, zs_plan_model). Exactly one is non-NULL. */
typedef struct {
  struct zs_unit *const *units;
  const int64_t *numel;
  int n;
  const int *frozen; /* with numel: non-zero for a frozen unit (frozen.h); NULL: none frozen */
  /* With numel: the floats of the whole-tensor step buffers (tier/whole.h) of unit i of numel
     elements, padded to padded (a bound where the planner knows no shapes); NULL: none. */
  size_t (*whole)(const void *arg, int i, size_t numel, size_t padded);
  const void *whole_arg;
  /* With numel: the state arrays unit i keeps (the most its tensors' optimizers keep); NULL: the
     configuration's optimizer's for every unit. */
  const int *nstate;
  /* With numel: unit i's tensors and the state arrays each keeps (packing: opt_pack.h); NULL:
     none packed. */
  const zs_pack_unit *tensors;
} zs_plan_units;

/* Whether unit i is frozen (its own table for units, the frozen array for numel). */
int zs_plan_unit_frozen(const zs_plan_units *u, int i);

/* The optimizer state arrays unit i keeps (zs_unit.nstate, or the nstate array's), or
   ZS_OPT_MAX_STATE where the configuration's optimizer decides (numel without an nstate array). */
int zs_plan_unit_nstate(const zs_plan_units *u, int i);

/* Packs t's optimizer arrays for unit i where its tensors keep different counts (opt_pack.h):
   each persistent array that a tensor of it does not keep, sized by zs_pack_elems for plan p (the
   NVMe placement unpacks them again). The units' own tensors and zs_unit.keeps, or the tensors
   array's. */
void zs_plan_unit_pack(const zs_plan *p, const zs_plan_units *u, int i, zs_state_table *t);

/* Floats of unit i's whole-tensor step buffers under plan p (tier/whole.h; 0 without whole
   steps): the unit's own (zs_unit.whole_floats) or the whole callback's. */
size_t zs_plan_unit_whole(const zs_plan *p, const zs_plan_units *u, int i);

/* Elements of unit i (before padding). */
size_t zs_plan_unit_numel(const zs_plan_units *u, int i);

/* The out[ZS_MEM_BUFFERS] bound of zs_plan_memory (plan_memory.h) alone (it does not depend on
   which units a budget places on the host: those move optimizer state and param shard together). */
size_t zs_plan_buffers(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u);

#endif
