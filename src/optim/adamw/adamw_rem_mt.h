/* The remainder-master CPU AdamW (src/optim/adamw/cpu/adamw_rem.h) over a worker pool: tiles of
 * ZS_ADAMW_TILE elements, as cpu_adamw.h does for the other modes. The bits never depend on the
 * pool, its size or the path: the update is elementwise. */
#ifndef ZS_OPTIM_ADAMW_ADAMW_REM_MT_H
#define ZS_OPTIM_ADAMW_ADAMW_REM_MT_H

#include <stddef.h>
#include <stdint.h>

#include "optim/adamw/cpu/adamw_rem.h"
#include "optim/adamw/adamw_mt.h" /* ZS_ADAMW_TILE, ZS_ADAMW_MT_MIN */
#include "offload/worker_pool.h"

/* zs_cpu_adamw_rem on pool's workers through path isa (ZS_ADAMW_ISA_AUTO: the active one; a path
   the CPU lacks runs the next narrower one). NULL pool, a pool of one, or n < ZS_ADAMW_MT_MIN:
   the calling thread. Host memory only. */
void zs_cpu_adamw_rem_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, uint16_t *param,
                         uint16_t *rem, void *m, void *v, zs_dtype moment_dt, const uint16_t *grad,
                         size_t n);

#endif
