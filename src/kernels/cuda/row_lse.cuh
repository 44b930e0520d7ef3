/* A row's online log-sum-exp statistics, (max m, sum s of exp(x - m)), merged across a block: the
   cross-entropy kernels' first pass (softmax_xent.cu, vocab_xent.cu). Internal. */
#ifndef ZS_KERNELS_CUDA_ROW_LSE_CUH
#define ZS_KERNELS_CUDA_ROW_LSE_CUH

#include "kctx.cuh"

/* Merges the pair (m2, s2) into (m, s); (-inf, 0) is the empty pair. */
__device__ __forceinline__ void zs_lse_merge(float &m, float &s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (m == -INFINITY) {
    m = m2;
    s = s2;
    return;
  }
  float M = fmaxf(m, m2);
  s = s * expf(m - M) + s2 * expf(m2 - M);
  m = M;
}

/* Every thread's pair merged over the block of THREADS (a multiple of 32), the result in every
   thread; the block's threads must all call it (it holds a __syncthreads: what they read before it
   has been read by all). */
template <int THREADS> __device__ __forceinline__ void zs_lse_block(float &m, float &s) {
  __shared__ float wm[THREADS / 32], ws[THREADS / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    zs_lse_merge(m, s, m2, s2);
  }
  if (lane == 0) {
    wm[warp] = m;
    ws[warp] = s;
  }
  __syncthreads();
  m = wm[0];
  s = ws[0];
  for (int w = 1; w < THREADS / 32; w++)
    zs_lse_merge(m, s, wm[w], ws[w]);
}

#endif
