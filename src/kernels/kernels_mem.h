/* Memory of the user's buffers on a CUDA kernel context: the CUDA halves of zs_k_alloc,
 * _free, _zero, _copy and _sync (include/zshard_kernels.h), implemented in kernels_mem_cuda.c with
 * the CUDA runtime, all ordered on the context's stream. Internal; only in CUDA builds. Arguments
 * are validated by the public functions (kernels_api.c); failures return ZS_ERR_DEVICE or
 * ZS_ERR_OUT_OF_MEMORY with zs_last_error() naming the public function and the CUDA call. */
#ifndef ZS_KERNELS_KERNELS_MEM_H
#define ZS_KERNELS_KERNELS_MEM_H

#include <stddef.h>

#include "kernels/cuda/gpt2_cuda.h"

/* bytes > 0 of zero-filled device memory (cudaMallocAsync + cudaMemsetAsync on the stream). */
zs_status zs_cuda_mem_alloc(zs_cuda_kctx *k, size_t bytes, void **p);
/* cudaFreeAsync on the stream; p != NULL. */
void zs_cuda_mem_free(zs_cuda_kctx *k, void *p);
zs_status zs_cuda_mem_zero(zs_cuda_kctx *k, void *p, size_t bytes);
/* cudaMemcpyDefault on the stream; waits for the stream when either side is host memory. Waits
   poll for at most timeout_s (<= 0: unbounded) and then return ZS_ERR_TIMEOUT. */
zs_status zs_cuda_mem_copy(zs_cuda_kctx *k, void *dst, const void *src, size_t bytes,
                           double timeout_s);
zs_status zs_cuda_mem_sync(zs_cuda_kctx *k, double timeout_s);

#endif
