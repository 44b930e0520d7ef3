/* The offload optimizer's CPU AdamW: the device layer's vectorised kernels
 * (src/optim/adamw/cpu/adamw.h) split into tiles over a worker pool. The bits never depend on the
 * pool, its size or the path: the update is elementwise. The pools belong to their callers (an
 * engine's optimizer, src/optim/optim.h); nothing here is process-wide. */
#ifndef ZS_OPTIM_ADAMW_ADAMW_MT_H
#define ZS_OPTIM_ADAMW_ADAMW_MT_H

#include <stddef.h>
#include <stdint.h>

#include "optim/adamw/cpu/adamw.h"
#include "offload/worker_pool.h"
#include "zshard.h"

/* Elements per work item of the threaded path: 16 Ki floats = 64 KiB per array, so one tile's
   master/m/v/grad (256 KiB) stay in L2 while it is processed. A multiple of every vector width. */
#define ZS_ADAMW_TILE ((size_t)16384)
/* Arrays shorter than this run on the calling thread: waking workers costs more than it saves. */
#define ZS_ADAMW_MT_MIN ((size_t)65536)

/* zs_cpu_adamw on `pool`'s workers (tiles of ZS_ADAMW_TILE elements; NULL pool, a pool of one,
   or n < ZS_ADAMW_MT_MIN: the calling thread). Host memory only. */
void zs_cpu_adamw_mt(zs_pool *pool, const zs_adamw_coef *c, float *master, float *m, float *v,
                     const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                     size_t n);
/* As zs_cpu_adamw_mt with an explicit path (tests, benchmarks). A path the CPU lacks runs the
   next narrower supported one, so the call never faults. */
void zs_cpu_adamw_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                     float *m, float *v, const void *grad, zs_dtype grad_dt, void *param_out,
                     zs_dtype param_dt, size_t n);
/* zs_cpu_adamw_ex with m and v in bf16 (zs_cpu_adamw_m16's kernels, the same tiles). */
void zs_cpu_adamw_m16_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                         uint16_t *m, uint16_t *v, const void *grad, zs_dtype grad_dt,
                         void *param_out, zs_dtype param_dt, size_t n);
/* ZS_ADAMW_THREADS as a worker count: N when 1 < N <= 4096, else 1 (no pool). Read at each
   call (an engine's optimizer reads it once, when it is created). */
int zs_cpu_adamw_env_threads(void);

#endif
