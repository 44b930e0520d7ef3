/* GELU (tanh form), forward and backward: the same formula and operation order as
   src/kernels/cpu/gpt2_gelu.c, fp32 math on either storage dtype. */
#include "kctx.cuh"

#define GELU_THREADS 256
#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* out = 0.5 x (1 + tanh(k (x + a x^3))). */
template <typename T> __global__ void gelu_fwd_kernel(T *out, const T *inp, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float x = zs_ld(&inp[i]);
    float u = GELU_K * (x + GELU_A * x * x * x);
    zs_st(&out[i], 0.5f * x * (1.0f + tanhf(u)));
  }
}

/* dinp += dout * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 a x^2)). */
template <typename T>
__global__ void gelu_bwd_kernel(T *dinp, const T *inp, const T *dout, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float x = zs_ld(&inp[i]);
    float u = GELU_K * (x + GELU_A * x * x * x);
    float th = tanhf(u);
    float du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
    float g = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
    zs_st(&dinp[i], zs_ld(&dinp[i]) + zs_ld(&dout[i]) * g);
  }
}

extern "C" zs_status zs_cuda_gelu_fwd(zs_cuda_kctx *k, void *out, const void *inp, size_t n) {
  if (!n) return ZS_OK;
  ZS_DT_DISPATCH(k->dt, T,
                 gelu_fwd_kernel<T><<<zs_grid(n, GELU_THREADS), GELU_THREADS, 0, k->stream>>>(
                     (T *)out, (const T *)inp, n));
  return zs_kcu_launched("zs_cuda_gelu_fwd");
}

extern "C" zs_status zs_cuda_gelu_bwd(zs_cuda_kctx *k, void *dinp, const void *inp,
                                      const void *dout, size_t n) {
  if (!n) return ZS_OK;
  ZS_DT_DISPATCH(k->dt, T,
                 gelu_bwd_kernel<T><<<zs_grid(n, GELU_THREADS), GELU_THREADS, 0, k->stream>>>(
                     (T *)dinp, (const T *)inp, (const T *)dout, n));
  return zs_kcu_launched("zs_cuda_gelu_bwd");
}
