/* Pointwise Llama-family kernels: rotary embedding (HF rotate_half) forward/backward and SwiGLU
   forward/backward. The same formulas and operation order as src/kernels/cpu/llama_rope.c and
   llama_swiglu.c, fp32 math on either storage dtype. */
#include "llama_cuda.h"

#include "kctx.cuh"

#define PW_THREADS 256

/* One thread per rotated pair (b, t, h, i < D/2); both halves are read before either is written
   (out may alias inp). */
template <typename T>
__global__ void rope_fwd_kernel(T *out, const T *inp, const float *cs, const float *sn, size_t np,
                                int T_, int H, int half) {
  for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < np;
       p += (size_t)gridDim.x * blockDim.x) {
    size_t row = p / half; /* (b*T + t)*H + h */
    int i = (int)(p % half);
    int t = (int)((row / H) % T_);
    size_t o = row * 2 * half + i;
    float c = cs[(size_t)t * half + i], s = sn[(size_t)t * half + i];
    float x1 = zs_ld(&inp[o]), x2 = zs_ld(&inp[o + half]);
    zs_st(&out[o], x1 * c - x2 * s);
    zs_st(&out[o + half], x2 * c + x1 * s);
  }
}

/* dinp += the rotation by -angle of dout. */
template <typename T>
__global__ void rope_bwd_kernel(T *dinp, const T *dout, const float *cs, const float *sn, size_t np,
                                int T_, int H, int half) {
  for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < np;
       p += (size_t)gridDim.x * blockDim.x) {
    size_t row = p / half;
    int i = (int)(p % half);
    int t = (int)((row / H) % T_);
    size_t o = row * 2 * half + i;
    float c = cs[(size_t)t * half + i], s = sn[(size_t)t * half + i];
    float d1 = zs_ld(&dout[o]), d2 = zs_ld(&dout[o + half]);
    zs_st(&dinp[o], zs_ld(&dinp[o]) + d1 * c + d2 * s);
    zs_st(&dinp[o + half], zs_ld(&dinp[o + half]) + d2 * c - d1 * s);
  }
}

/* silu(g) as the storage dtype holds it (HF rounds act_fn's output before the product). */
__device__ __forceinline__ float pw_as(float x, const float *) {
  return x;
}
__device__ __forceinline__ float pw_as(float x, const zs_bf16 *) {
  return __bfloat162float(zs_f2bf(x));
}

/* out = as_dtype(silu(g)) * u. */
template <typename T>
__global__ void swiglu_fwd_kernel(T *out, const T *gate, const T *up, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float g = zs_ld(&gate[i]), u = zs_ld(&up[i]);
    float s = 1.0f / (1.0f + expf(-g));
    zs_st(&out[i], pw_as(g * s, out) * u);
  }
}

/* dgate += dout u s (1 + g (1 - s)), dup += dout as_dtype(silu(g)): the up projection's gradient
   uses the silu value the forward multiplied by (rounded to bf16 in bf16, as HF's act_fn output
   is), so that it is the exact derivative of the forward's product. */
template <typename T>
__global__ void swiglu_bwd_kernel(T *dgate, T *dup, const T *dout, const T *gate, const T *up,
                                  size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float g = zs_ld(&gate[i]), d = zs_ld(&dout[i]);
    float s = 1.0f / (1.0f + expf(-g));
    zs_st(&dgate[i], zs_ld(&dgate[i]) + d * zs_ld(&up[i]) * s * (1.0f + g * (1.0f - s)));
    zs_st(&dup[i], zs_ld(&dup[i]) + d * pw_as(g * s, dup));
  }
}

extern "C" zs_status zs_cuda_rope_fwd(zs_cuda_kctx *k, void *out, const void *inp,
                                      const float *cos_t, const float *sin_t, int B, int T, int H,
                                      int D) {
  size_t np = (size_t)B * T * H * (D / 2);
  ZS_DT_DISPATCH(k->dt, E,
                 rope_fwd_kernel<E><<<zs_grid(np, PW_THREADS), PW_THREADS, 0, k->stream>>>(
                     (E *)out, (const E *)inp, cos_t, sin_t, np, T, H, D / 2));
  return zs_kcu_launched("zs_cuda_rope_fwd");
}

extern "C" zs_status zs_cuda_rope_bwd(zs_cuda_kctx *k, void *dinp, const void *dout,
                                      const float *cos_t, const float *sin_t, int B, int T, int H,
                                      int D) {
  size_t np = (size_t)B * T * H * (D / 2);
  ZS_DT_DISPATCH(k->dt, E,
                 rope_bwd_kernel<E><<<zs_grid(np, PW_THREADS), PW_THREADS, 0, k->stream>>>(
                     (E *)dinp, (const E *)dout, cos_t, sin_t, np, T, H, D / 2));
  return zs_kcu_launched("zs_cuda_rope_bwd");
}

extern "C" zs_status zs_cuda_swiglu_fwd(zs_cuda_kctx *k, void *out, const void *gate,
                                        const void *up, size_t n) {
  ZS_DT_DISPATCH(k->dt, E,
                 swiglu_fwd_kernel<E><<<zs_grid(n, PW_THREADS), PW_THREADS, 0, k->stream>>>(
                     (E *)out, (const E *)gate, (const E *)up, n));
  return zs_kcu_launched("zs_cuda_swiglu_fwd");
}

extern "C" zs_status zs_cuda_swiglu_bwd(zs_cuda_kctx *k, void *dgate, void *dup, const void *dout,
                                        const void *gate, const void *up, size_t n) {
  ZS_DT_DISPATCH(k->dt, E,
                 swiglu_bwd_kernel<E><<<zs_grid(n, PW_THREADS), PW_THREADS, 0, k->stream>>>(
                     (E *)dgate, (E *)dup, (const E *)dout, (const E *)gate, (const E *)up, n));
  return zs_kcu_launched("zs_cuda_swiglu_bwd");
}
