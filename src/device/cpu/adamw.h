/* AdamW on fp32 master weights: the one definition of the update's operation order.
 *
 * Every implementation (scalar, AVX2, AVX-512, CUDA) performs exactly these float operations in
 * this order, with explicit fused multiply-adds where written fmaf and no other contraction, so
 * all of them give the same bits:
 *
 *   g   = grad * gscale                       (gscale = clip_coef / (world * micro_steps))
 *   m'  = fmaf(beta1, m, omb1 * g)            (omb1 = 1 - beta1, as float)
 *   v'  = fmaf(beta2, v, (omb2 * g) * g)      (omb2 = 1 - beta2, as float)
 *   den = sqrtf(v' * bc2) + eps               (bc2 = 1 / (1 - beta2^t), rounded once to float)
 *   upd = (m' * bc1) / den                    (bc1 = 1 / (1 - beta1^t), rounded once to float)
 *   p'  = fmaf(neg_lr, fmaf(wd, p, upd), p)   (decoupled weight decay; wd = 0 for no-decay)
 *   out = p' in the compute dtype (bf16: round to nearest even)
 */
#ifndef ZS_KERNELS_CPU_ADAMW_H
#define ZS_KERNELS_CPU_ADAMW_H

#include <math.h>
#include <stddef.h>

#include "device/ops.h" /* zs_adamw_coef, zs_adamw_coef_make */
#include "zshard.h"

/* One element, the reference order. */
static inline void zs_adamw_elem(const zs_adamw_coef *c, float *p, float *m, float *v, float grad) {
  float g = grad * c->gscale;
  float mn = fmaf(c->beta1, *m, c->omb1 * g);
  float vn = fmaf(c->beta2, *v, (c->omb2 * g) * g);
  float den = sqrtf(vn * c->bc2) + c->eps;
  float upd = (mn * c->bc1) / den;
  *p = fmaf(c->neg_lr, fmaf(c->wd, *p, upd), *p);
  *m = mn;
  *v = vn;
}

/* n elements: master/m/v updated in place from grad (grad_dt: ZS_F32 or ZS_BF16); the updated
   master is written to param_out in param_dt (may be NULL to skip). Host memory only; on the
   calling thread (the CPU device's zs_dev_adamw). */
void zs_cpu_adamw(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                  zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n);

/* ---- Vectorised, multi-threaded paths (same bits as zs_cpu_adamw's scalar reference) ----
 *
 * zs_cpu_adamw picks the widest instruction set the CPU supports (cpuid, once per process), or the
 * one named by the environment variable ZS_ADAMW_ISA=scalar|avx2|avx512 (a path the CPU lacks
 * falls back to the next narrower one), on the calling thread. Threads belong to whoever calls
 * zs_cpu_adamw_mt with a pool: each engine's optimizer (src/optim/optim.h) owns its pools, a
 * NUMA-bound one for offloaded state and, on the CPU device, one of ZS_ADAMW_THREADS unbound
 * workers; nothing here is process-wide but the path chosen once from cpuid. */

typedef enum {
  ZS_ADAMW_ISA_AUTO = -1, /* the active path (cpuid or ZS_ADAMW_ISA) */
  ZS_ADAMW_ISA_SCALAR = 0,
  ZS_ADAMW_ISA_AVX2,   /* AVX2 + FMA, 8 lanes */
  ZS_ADAMW_ISA_AVX512, /* AVX-512F, 16 lanes */
} zs_adamw_isa;

typedef struct zs_pool zs_pool; /* src/base/worker_pool.h */

/* "scalar", "avx2", "avx512" ("auto" for ZS_ADAMW_ISA_AUTO). */
const char *zs_adamw_isa_name(zs_adamw_isa isa);
/* 1 if this CPU (and OS) can run the path. Scalar always can. */
int zs_adamw_isa_supported(zs_adamw_isa isa);
/* The path ZS_ADAMW_ISA_AUTO resolves to in this process. */
zs_adamw_isa zs_adamw_isa_active(void);
/* ZS_ADAMW_THREADS as a worker count: N when 1 < N <= 4096, else 1 (no pool). Read at each
   call (an engine reads it once, when it is created). */
int zs_cpu_adamw_env_threads(void);

/* zs_cpu_adamw on `pool`'s workers (tiles of ZS_ADAMW_TILE elements; NULL pool = calling thread).
 */
void zs_cpu_adamw_mt(zs_pool *pool, const zs_adamw_coef *c, float *master, float *m, float *v,
                     const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                     size_t n);
/* As zs_cpu_adamw_mt with an explicit path (tests, benchmarks). A path the CPU lacks runs the
   next narrower supported one, so the call never faults. The bits never depend on pool or isa. */
void zs_cpu_adamw_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                     float *m, float *v, const void *grad, zs_dtype grad_dt, void *param_out,
                     zs_dtype param_dt, size_t n);

/* Elements per work item of the threaded path: 16 Ki floats = 64 KiB per array, so one tile's
   master/m/v/grad (256 KiB) stay in L2 while it is processed. A multiple of every vector width. */
#define ZS_ADAMW_TILE ((size_t)16384)

/* The single-threaded kernels behind the paths (adamw_scalar.c, adamw_avx2.c, adamw_avx512.c).
   The AVX ones must only be called when zs_adamw_isa_supported says so. */
void zs_cpu_adamw_scalar(const zs_adamw_coef *c, float *master, float *m, float *v,
                         const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                         size_t n);
void zs_cpu_adamw_avx2(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                       zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n);
void zs_cpu_adamw_avx512(const zs_adamw_coef *c, float *master, float *m, float *v,
                         const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                         size_t n);

#endif
