/* What a plan allocates on each rank, unit by unit where the placement puts it (plan_memory.h). */
#include "shard/plan_memory.h"

#include <string.h>

#include "shard/placement.h"

static void add_staging(size_t out[ZS_MEM_NCAT], size_t b) {
  out[ZS_MEM_HOST_PINNED] = zs_plan_add_mul(out[ZS_MEM_HOST_PINNED], b, 1);
}

void zs_plan_memory(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u,
                    size_t out[ZS_MEM_NCAT]) {
  memset(out, 0, sizeof(size_t) * ZS_MEM_NCAT);
  out[ZS_MEM_BUFFERS] = zs_plan_buffers(p, c, world, u);
  zs_placement pl;
  zs_placement_make(p, c, world, u, &pl);
  for (int i = 0; i < u->n; i++) {
    zs_state_table t; /* the table commit gives unit i: its tier, frozen or not */
    zs_placement_unit_of(&pl, p, u, i, &t);
    zs_plan_unit_bytes_of(p, &t, zs_plan_unit_numel(u, i), out);
  }
  add_staging(out, pl.staging_bytes);           /* the NVMe tier's, pinned host memory */
  add_staging(out, zs_placement_pipe_bytes(c)); /* the copy pipeline's, in the host arena */
}
