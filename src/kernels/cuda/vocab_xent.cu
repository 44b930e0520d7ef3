/* Vocabulary-parallel cross-entropy: the twins of zs_cpu_vocab_xent_part / _finish
 * (src/kernels/cpu/llama_vocab.c). One block per row. The part is softmax_xent.cu's online
 * (max, sum) pass over this rank's Vl columns; the finish merges the P ranks' parts in rank order
 * (thread 0, the same arithmetic on every rank) and writes this rank's columns of dlogits, each
 * element read and written by the same thread (dlogits may alias logits). */
#include "kctx.cuh"
#include "llama_cuda.h"
#include "row_lse.cuh"

#define VX_THREADS 512

/* Row blockIdx.x: part = (max, sum exp(l - max), the target's logit or 0). */
template <typename T>
__global__ void __launch_bounds__(VX_THREADS)
    vocab_xent_part_kernel(float *part, const T *logits, const int *targets, int v0, int Vl) {
  const size_t row = blockIdx.x;
  const T *x = logits + row * Vl;
  float m = -INFINITY, s = 0.0f;
  for (int c = threadIdx.x; c < Vl; c += VX_THREADS)
    zs_lse_merge(m, s, zs_ld(&x[c]), 1.0f);
  zs_lse_block<VX_THREADS>(m, s);
  if (threadIdx.x != 0) return;
  const unsigned t = (unsigned)(targets[row] - v0);
  part[3 * row] = m;
  part[3 * row + 1] = s;
  part[3 * row + 2] = t < (unsigned)Vl ? zs_ld(&x[t]) : 0.0f;
}

/* Row blockIdx.x: the merged loss, then this rank's columns of the gradient. */
template <typename T>
__global__ void __launch_bounds__(VX_THREADS)
    vocab_xent_finish_kernel(float *losses, T *dlogits, const T *logits, const float *parts, int P,
                             const int *targets, float dloss, int N, int v0, int Vl) {
  __shared__ float Msh, inv_sh;
  const size_t row = blockIdx.x;
  if (threadIdx.x == 0) {
    float M = parts[3 * row], S = 0.0f, lt = 0.0f;
    for (int r = 1; r < P; r++)
      M = fmaxf(M, parts[((size_t)r * N + row) * 3]);
    for (int r = 0; r < P; r++) {
      const float *p = parts + ((size_t)r * N + row) * 3;
      S += p[1] * expf(p[0] - M);
      lt += p[2];
    }
    losses[row] = (M - lt) + logf(S);
    Msh = M;
    inv_sh = 1.0f / S;
  }
  if (!dlogits) return;
  __syncthreads();
  const T *x = logits + row * Vl;
  T *d = dlogits + row * Vl;
  const float M = Msh, inv = inv_sh;
  const int t = targets[row] - v0;
  for (int c = threadIdx.x; c < Vl; c += VX_THREADS) {
    float g = expf(zs_ld(&x[c]) - M) * inv * dloss;
    if (c == t) g -= dloss;
    zs_st(&d[c], g);
  }
}

extern "C" zs_status zs_cuda_vocab_xent_part(zs_cuda_kctx *k, float *part, const void *logits,
                                             const int *targets, int N, int v0, int Vl, int V) {
  (void)V;
  ZS_DT_DISPATCH(k->dt, E,
                 vocab_xent_part_kernel<E><<<(unsigned)N, VX_THREADS, 0, k->stream>>>(
                     part, (const E *)logits, targets, v0, Vl));
  return zs_kcu_launched("zs_cuda_vocab_xent_part");
}

extern "C" zs_status zs_cuda_vocab_xent_finish(zs_cuda_kctx *k, float *losses, void *dlogits,
                                               const void *logits, const float *parts, int P,
                                               const int *targets, float dloss, int N, int v0,
                                               int Vl, int V) {
  (void)V;
  ZS_DT_DISPATCH(k->dt, E,
                 vocab_xent_finish_kernel<E><<<(unsigned)N, VX_THREADS, 0, k->stream>>>(
                     losses, (E *)dlogits, (const E *)logits, parts, P, targets, dloss, N, v0, Vl));
  return zs_kcu_launched("zs_cuda_vocab_xent_finish");
}
