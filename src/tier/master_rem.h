/* The remainder master (zs_config.master = ZS_MASTER_REMAINDER) for the readers and writers of a
 * unit's master outside the update: set/get params, the master gather, checkpoints, export. The
 * master over the optimizer range is the params' home (bf16 compute copy) joined with
 * ZS_ST_MASTER_REM (base/bf16_rem.h); there is no fp32 array (u->master is NULL). The joins and
 * splits run on the host, through copies of the arrays (memcpy on the CPU device); either may
 * live on the device or in the host arena (offload: the copies take either kind of address), and
 * the remainders also in the NVMe tier's file (read and written through their tier's operations,
 * tier.h: a device array by a device copy that waits for the streams, an arena array directly,
 * as the fp32 master's). */
#ifndef ZS_TIER_MASTER_REM_H
#define ZS_TIER_MASTER_REM_H

#include <stddef.h>

#include "base/bf16_rem.h"
#include "tier/tier.h"

/* Whether u holds its master as params + remainder. */
static inline int zs_unit_has_rem(const zs_unit *u) {
  return !u->frozen && zs_state_is(&u->st, ZS_ST_MASTER_REM, ZS_LIFE_PERSISTENT);
}

/* The master of flat elements [a, a + n) (inside u's optimizer range) joined into host memory
   dst. Not collective; waits for the copies. ZS_ERR_OUT_OF_MEMORY (host staging), a device
   copy's error, or the NVMe tier's ZS_ERR_IO. Host memory: at most 4 MiB of staging for the
   call, whatever n is (pieces of 2^20 elements). */
zs_status zs_rem_master_get(zs_tiers *t, zs_unit *u, float *dst, size_t a, size_t n);

/* Writes the remainders of the fp32 values src (host) for flat elements [a, a + n) of u's
   optimizer range. The params' home there must hold (or be given by the caller)
   zs_f32_to_bf16_ta of the same values, so the pair joins to src exactly. Not collective; at most
   2 MiB of host staging. */
zs_status zs_rem_master_put_rem(zs_tiers *t, zs_unit *u, const float *src, size_t a, size_t n);

#endif
