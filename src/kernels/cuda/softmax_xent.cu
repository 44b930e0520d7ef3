/* Fused softmax + cross-entropy: one block per row, one pass of online max/sum over the V real
   logits, then (when asked) a second pass that writes dlogits = (softmax - onehot) * dloss, which
   may overwrite the logits in place: each element is read and written by the same thread, and
   the target's logit is read before the first write. */
#include "kctx.cuh"

#define SX_THREADS 512
#define SX_WARPS (SX_THREADS / 32)

/* Merges the running (max, sum of exp(x - max)) pair (m2, s2) into (m, s). */
__device__ __forceinline__ void sx_merge(float &m, float &s, float m2, float s2) {
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

/* Row blockIdx.x: losses[row] = logsumexp(x[:V]) - x[target], and dlogits if non-NULL. */
template <typename T>
__global__ void __launch_bounds__(SX_THREADS)
    softmax_xent_kernel(float *losses, T *dlogits, const T *logits, const int *targets, float dloss,
                        int V, int Vp) {
  __shared__ float wm[SX_WARPS], ws[SX_WARPS], lt_sh;
  const size_t row = blockIdx.x;
  const T *x = logits + row * Vp;
  const int tgt = targets[row];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) lt_sh = zs_ld(&x[tgt]);
  float m = -INFINITY, s = 0.0f;
  for (int c = threadIdx.x; c < V; c += SX_THREADS)
    sx_merge(m, s, zs_ld(&x[c]), 1.0f);
  for (int o = 16; o > 0; o >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    sx_merge(m, s, m2, s2);
  }
  if (lane == 0) {
    wm[warp] = m;
    ws[warp] = s;
  }
  __syncthreads(); /* every logit of the row has been read from here on */
  m = wm[0];
  s = ws[0];
  for (int w = 1; w < SX_WARPS; w++)
    sx_merge(m, s, wm[w], ws[w]);
  if (threadIdx.x == 0) losses[row] = (m - lt_sh) + logf(s);
  if (!dlogits) return;
  T *d = dlogits + row * Vp;
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < Vp; c += SX_THREADS) {
    float g = 0.0f;
    if (c < V) {
      g = expf(zs_ld(&x[c]) - m) * inv * dloss;
      if (c == tgt) g -= dloss;
    }
    zs_st(&d[c], g);
  }
}

extern "C" zs_status zs_cuda_softmax_xent(zs_cuda_kctx *k, float *losses, void *dlogits,
                                          const void *logits, const int *targets, float dloss,
                                          int N, int V, int Vp) {
  ZS_DT_DISPATCH(k->dt, E,
                 softmax_xent_kernel<E><<<(unsigned)N, SX_THREADS, 0, k->stream>>>(
                     losses, (E *)dlogits, (const E *)logits, targets, dloss, V, Vp));
  return zs_kcu_launched("zs_cuda_softmax_xent");
}
