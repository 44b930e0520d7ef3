/* What the CPU and CUDA twins of the engine's ops share, in one place: element sizes, the AdamW
 * coefficients and the bin count of the exact sum of squares. Plain C, included by .c and .cu
 * files alike (src/device/cpu/engine_ops.h, src/device/cpu/adamw.h, src/device/cuda/engine_cuda.h)
 * and by every layer above that sizes buffers. */
#ifndef ZS_DEVICE_OPS_H
#define ZS_DEVICE_OPS_H

#include <stddef.h>

#include "zshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of one element: 2 for ZS_BF16, 4 for ZS_F32. The only place that spells it out. */
static inline size_t zs_dtype_size(zs_dtype dt) {
  return dt == ZS_BF16 ? 2 : 4;
}

/* Exponent bins of the exact, partition-invariant sum of squares (zs_cpu_sq_bins,
   zs_cuda_sq_bins); a bins array holds ZS_SQ_NWORDS uint64 words, the last one counting the
   non-finite elements. */
#define ZS_SQ_NBINS 320
#define ZS_SQ_NWORDS (ZS_SQ_NBINS + 1)

/* The coefficients of one AdamW step, as floats (src/device/cpu/adamw.h gives the operation
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
