/* A plain shared-memory-tiled GEMM (CUDA cores, fp32 accumulation): the fallback for shapes or
   alignments for which cuBLASLt offers no algorithm. Internal. */
#ifndef ZS_KERNELS_CUDA_GEMM_SIMT_CUH
#define ZS_KERNELS_CUDA_GEMM_SIMT_CUH

#include "kctx.cuh"

/* Column-major D(m x n, ldd) = op(A)(m x k) op(B)(k x n) [+ D when accumulate] [+ bias[m] per row],
   ta/tb: 0 = as stored, 1 = transposed; storage in the context's dtype. */
zs_status zs_cuda_gemm_simt(zs_cuda_kctx *k, int ta, int tb, int m, int n, int kk, const void *A,
                            int64_t lda, const void *B, int64_t ldb, void *D, int64_t ldd,
                            int accumulate, const void *bias);

#endif
