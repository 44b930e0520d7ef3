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
#ifndef ZS_OPTIM_ADAMW_CPU_ADAMW_H
#define ZS_OPTIM_ADAMW_CPU_ADAMW_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bf16.h"

#include "device/ops.h" /* zs_dtype_size */
#include "optim/adamw/coef.h"
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

/* One element with bf16 moments: m and v widened to fp32 (exact), the reference order in fp32,
   the new m and v rounded to bf16 (nearest even) on store. The master update uses the fp32 m'
   and v' of this step, before their rounding. */
static inline void zs_adamw_elem_m16(const zs_adamw_coef *c, float *p, uint16_t *m, uint16_t *v,
                                     float grad) {
  float mf = zs_bf16_to_f32(*m), vf = zs_bf16_to_f32(*v);
  zs_adamw_elem(c, p, &mf, &vf, grad);
  *m = zs_f32_to_bf16(mf);
  *v = zs_f32_to_bf16(vf);
}

/* n elements: master/m/v updated in place from grad (grad_dt: ZS_F32 or ZS_BF16); the updated
   master is written to param_out in param_dt (may be NULL to skip). Host memory only; on the
   calling thread (the CPU device's zs_dev_adamw). */
void zs_cpu_adamw(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                  zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n);

/* ---- Vectorised paths (same bits as the scalar reference) ----
 *
 * zs_cpu_adamw picks the widest instruction set the CPU supports (cpuid, once per process), or the
 * one named by the environment variable ZS_ADAMW_ISA=scalar|avx2|avx512 (a path the CPU lacks
 * falls back to the next narrower one), and runs on the calling thread: it is the CPU device's
 * twin of zs_cuda_adamw. The multi-threaded update over a worker pool is the offload layer's
 * (src/optim/adamw/adamw_mt.h); each engine's optimizer owns its pools. */

typedef enum {
  ZS_ADAMW_ISA_AUTO = -1, /* the active path (cpuid or ZS_ADAMW_ISA) */
  ZS_ADAMW_ISA_SCALAR = 0,
  ZS_ADAMW_ISA_AVX2,   /* AVX2 + FMA, 8 lanes */
  ZS_ADAMW_ISA_AVX512, /* AVX-512 F, BW and DQ, 16 lanes */
} zs_adamw_isa;

/* "scalar", "avx2", "avx512" ("auto" for ZS_ADAMW_ISA_AUTO). */
const char *zs_adamw_isa_name(zs_adamw_isa isa);
/* 1 if this CPU (and OS) can run the path. Scalar always can. */
int zs_adamw_isa_supported(zs_adamw_isa isa);
/* The path ZS_ADAMW_ISA_AUTO resolves to in this process. */
zs_adamw_isa zs_adamw_isa_active(void);
/* The path a request runs: ZS_ADAMW_ISA_AUTO -> the active one; else the widest supported path
   not wider than isa (so a call never faults). */
zs_adamw_isa zs_adamw_isa_resolve(zs_adamw_isa isa);

/* A single-threaded kernel (the signature of zs_cpu_adamw). */
typedef void (*zs_adamw_kernel)(const zs_adamw_coef *c, float *master, float *m, float *v,
                                const void *grad, zs_dtype grad_dt, void *param_out,
                                zs_dtype param_dt, size_t n);
/* The kernel behind a resolved path (zs_adamw_isa_resolve). */
zs_adamw_kernel zs_adamw_kernel_for(zs_adamw_isa isa);

/* ---- bf16 moments ----
   The same update with m and v stored in bf16 (zs_adamw_elem_m16): every path gives the bits of
   the scalar one, as above. */
typedef void (*zs_adamw_kernel_m16)(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                                    const void *grad, zs_dtype grad_dt, void *param_out,
                                    zs_dtype param_dt, size_t n);
/* The bf16-moment kernel behind a resolved path. */
zs_adamw_kernel_m16 zs_adamw_kernel_m16_for(zs_adamw_isa isa);
/* The active path's bf16-moment kernel on the calling thread (zs_cpu_adamw's twin). */
void zs_cpu_adamw_m16(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                      const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                      size_t n);
void zs_cpu_adamw_m16_scalar(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                             const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                             size_t n);
void zs_cpu_adamw_m16_avx2(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                           const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                           size_t n);
void zs_cpu_adamw_m16_avx512(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                             const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                             size_t n);

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
