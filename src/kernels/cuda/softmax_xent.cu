/* Fused softmax + cross-entropy: one block per row, one pass of online max/sum over the V real
   logits, then (when asked) a second pass that writes dlogits = (softmax - onehot) * dloss, which
   may overwrite the logits in place: each element is read and written by the same thread, and
   the target's logit is read before the first write. */
#include "kctx.cuh"
#include "row_lse.cuh"

#define SX_THREADS 512

/* Row blockIdx.x: losses[row] = logsumexp(x[:V]) - x[target], and dlogits if non-NULL. */
template <typename T>
__global__ void __launch_bounds__(SX_THREADS)
    softmax_xent_kernel(float *losses, T *dlogits, const T *logits, const int *targets, float dloss,
                        int V, int Vp) {
  __shared__ float lt_sh;
  const size_t row = blockIdx.x;
  const T *x = logits + row * Vp;
  const int tgt = targets[row];
  if (threadIdx.x == 0) lt_sh = zs_ld(&x[tgt]);
  float m = -INFINITY, s = 0.0f;
  for (int c = threadIdx.x; c < V; c += SX_THREADS)
    zs_lse_merge(m, s, zs_ld(&x[c]), 1.0f);
  zs_lse_block<SX_THREADS>(m, s); /* every logit of the row has been read from here on */
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
