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

#include "zshard.h"

typedef struct {
  float gscale, beta1, omb1, beta2, omb2, bc1, bc2, eps, wd, neg_lr;
} zs_adamw_coef;

/* Fills the coefficients for optimizer step t (1-based). Computed in double, rounded once. */
void zs_adamw_coef_make(zs_adamw_coef *c, float lr, float beta1, float beta2, float eps,
                        float wd, long long t, double gscale);

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
   master is written to param_out in param_dt (may be NULL to skip). Host memory only. */
void zs_cpu_adamw(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                  zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n);

#endif
