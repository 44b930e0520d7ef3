/* The coefficients of one AdamW step, shared by the CPU kernels (cpu/adamw.h gives the operation
 * order every twin follows) and the CUDA ones (cuda/adamw_cuda.h). Plain C, included by .c and .cu
 * files alike. */
#ifndef ZS_OPTIM_ADAMW_COEF_H
#define ZS_OPTIM_ADAMW_COEF_H

#ifdef __cplusplus
extern "C" {
#endif

/* The coefficients of one AdamW step, as floats (src/optim/adamw/cpu/adamw.h gives the operation
   order every twin follows). */
typedef struct {
  float gscale, beta1, omb1, beta2, omb2, bc1, bc2, eps, wd, neg_lr;
} zs_adamw_coef;

/* Fills the coefficients for optimizer step t (1-based). Computed in double, rounded once
   (adamw_scalar.c). */
void zs_adamw_coef_make(zs_adamw_coef *c, float lr, float beta1, float beta2, float eps, float wd,
                        long long t, double gscale);

#ifdef __cplusplus
}
#endif

#endif
