/* RMSNorm over the last dimension (HF LlamaRMSNorm): one warp per row, fp32 statistics; backward
   computes dinp per row and dw with the deterministic column reduction (colreduce.cuh). */
#include "colreduce.cuh"

#define RN_WARPS 8 /* rows per block */

/* x as the storage dtype would hold it: identity for fp32, the bf16 rounding for bf16 (HF rounds
   the normalised row to the input dtype before the weight multiply). */
__device__ __forceinline__ float rn_as(float x, const float *) {
  return x;
}
__device__ __forceinline__ float rn_as(float x, const zs_bf16 *) {
  return __bfloat162float(zs_f2bf(x));
}

/* Row i (one warp): r = 1 / sqrt(mean(x^2) + eps), out = w * as_dtype(x r). */
template <typename T>
__global__ void __launch_bounds__(RN_WARPS * 32)
    rmsnorm_fwd_kernel(T *out, float *rrms, const T *inp, const T *w, float eps, int N, int C) {
  int lane = threadIdx.x & 31;
  int i = blockIdx.x * RN_WARPS + (threadIdx.x >> 5);
  if (i >= N) return;
  const T *x = inp + (size_t)i * C;
  float ss = 0.0f;
  for (int c = lane; c < C; c += 32) {
    float v = zs_ld(&x[c]);
    ss += v * v;
  }
  float r = 1.0f / sqrtf(zs_warp_sum(ss) / (float)C + eps);
  T *o = out + (size_t)i * C;
  for (int c = lane; c < C; c += 32)
    zs_st(&o[c], zs_ld(&w[c]) * rn_as(zs_ld(&x[c]) * r, out));
  if (lane == 0) rrms[i] = r;
}

/* Row i (one warp): with n = x r and g = dout w, dinp += r (g - n mean(g n)). */
template <typename T>
__global__ void __launch_bounds__(RN_WARPS * 32)
    rmsnorm_bwd_kernel(T *dinp, const T *dout, const T *inp, const T *w, const float *rrms, int N,
                       int C) {
  int lane = threadIdx.x & 31;
  int i = blockIdx.x * RN_WARPS + (threadIdx.x >> 5);
  if (i >= N) return;
  const T *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
  float r = rrms[i], sgn = 0.0f;
  for (int c = lane; c < C; c += 32)
    sgn += zs_ld(&d[c]) * zs_ld(&w[c]) * (zs_ld(&x[c]) * r);
  float mgn = zs_warp_sum(sgn) / (float)C;
  T *dx = dinp + (size_t)i * C;
  for (int c = lane; c < C; c += 32) {
    float n = zs_ld(&x[c]) * r;
    zs_st(&dx[c], zs_ld(&dx[c]) + r * (zs_ld(&d[c]) * zs_ld(&w[c]) - n * mgn));
  }
}

extern "C" zs_status zs_cuda_rmsnorm_fwd(zs_cuda_kctx *k, void *out, float *rrms, const void *inp,
                                         const void *w, float eps, int N, int C) {
  unsigned grid = (unsigned)((N + RN_WARPS - 1) / RN_WARPS);
  ZS_DT_DISPATCH(k->dt, E,
                 rmsnorm_fwd_kernel<E><<<grid, RN_WARPS * 32, 0, k->stream>>>(
                     (E *)out, rrms, (const E *)inp, (const E *)w, eps, N, C));
  return zs_kcu_launched("zs_cuda_rmsnorm_fwd");
}

/* dw += column sums of dout * (x rrms): the column reduction with mean 0 and no plain sum. */
extern "C" zs_status zs_cuda_rmsnorm_bwd(zs_cuda_kctx *k, void *dinp, void *dw, const void *dout,
                                         const void *inp, const void *w, const float *rrms, int N,
                                         int C) {
  unsigned grid = (unsigned)((N + RN_WARPS - 1) / RN_WARPS);
  ZS_DT_DISPATCH(k->dt, E,
                 rmsnorm_bwd_kernel<E><<<grid, RN_WARPS * 32, 0, k->stream>>>(
                     (E *)dinp, (const E *)dout, (const E *)inp, (const E *)w, rrms, N, C));
  ZS_CHECK(zs_kcu_launched("zs_cuda_rmsnorm_bwd"));
  zs_status rc = zs_cuda_colreduce(k, NULL, dw, dout, inp, NULL, rrms, N, C);
  return rc == ZS_OK ? rc : zs_kerr_wrap(rc, "zs_cuda_rmsnorm_bwd");
}
