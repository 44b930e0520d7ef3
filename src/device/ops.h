/* What the CPU and CUDA twins of the engine's ops share, in one place: element sizes and the bin
 * count of the exact sum of squares. Plain C, included by .c and .cu files alike
 * (src/device/cpu/engine_ops.h, src/device/cuda/engine_cuda.h) and by every layer above that sizes
 * buffers. */
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

#ifdef __cplusplus
}
#endif

#endif
