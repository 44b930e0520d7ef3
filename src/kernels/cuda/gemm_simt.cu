/* Fallback GEMM: 16 x 16 output tiles, 16-deep slices of op(A) and op(B) staged in shared memory,
   one output element per thread summed in a fixed order (deterministic). */
#include "gemm_simt.cuh"

#define GS_TILE 16

/* Element (i, p) of op(A) where op(A) is m x k; a transposed A is stored k x m. */
template <typename T>
__device__ __forceinline__ float gs_at(const T *A, int ta, int64_t lda, int i, int p) {
  return ta ? zs_ld(&A[(size_t)p + (size_t)i * lda]) : zs_ld(&A[(size_t)i + (size_t)p * lda]);
}

template <typename T>
__global__ void gemm_simt_kernel(int ta, int tb, int m, int n, int kk, const T *A, int64_t lda,
                                 const T *B, int64_t ldb, T *D, int64_t ldd, int accumulate,
                                 const T *bias) {
  __shared__ float As[GS_TILE][GS_TILE + 1], Bs[GS_TILE][GS_TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.x * GS_TILE + tx, j = blockIdx.y * GS_TILE + ty;
  float acc = 0.0f;
  for (int p0 = 0; p0 < kk; p0 += GS_TILE) {
    int ai = blockIdx.x * GS_TILE + tx, ap = p0 + ty; /* As[ty][tx] = op(A)(ai, ap) */
    As[ty][tx] = ai < m && ap < kk ? gs_at(A, ta, lda, ai, ap) : 0.0f;
    int bp = p0 + tx, bj = blockIdx.y * GS_TILE + ty; /* Bs[ty][tx] = op(B)(bp, bj) */
    /* op(B)(p, j): B stored k x n (as is) or n x k (transposed): the same accessor with roles
       swapped, since op(B)(p, j) = op'(B^T)(j, p). */
    Bs[ty][tx] = bp < kk && bj < n ? gs_at(B, !tb, ldb, bj, bp) : 0.0f;
    __syncthreads();
    for (int q = 0; q < GS_TILE; q++)
      acc += As[q][tx] * Bs[ty][q];
    __syncthreads();
  }
  if (i < m && j < n) {
    T *d = &D[(size_t)i + (size_t)j * ldd];
    if (accumulate) acc = zs_ld(d) + acc;
    if (bias) acc = acc + zs_ld(&bias[i]);
    zs_st(d, acc);
  }
}

zs_status zs_cuda_gemm_simt(zs_cuda_kctx *k, int ta, int tb, int m, int n, int kk, const void *A,
                            int64_t lda, const void *B, int64_t ldb, void *D, int64_t ldd,
                            int accumulate, const void *bias) {
  dim3 grid((unsigned)((m + GS_TILE - 1) / GS_TILE), (unsigned)((n + GS_TILE - 1) / GS_TILE));
  dim3 block(GS_TILE, GS_TILE);
  if (grid.y > 65535) return zs_kerr(ZS_ERR_UNSUPPORTED, "fallback GEMM: n = %d is too large", n);
  ZS_DT_DISPATCH(k->dt, E,
                 gemm_simt_kernel<E>
                 <<<grid, block, 0, k->stream>>>(ta, tb, m, n, kk, (const E *)A, lda, (const E *)B,
                                                 ldb, (E *)D, ldd, accumulate, (const E *)bias));
  return zs_kcu_launched("fallback GEMM");
}
