/* LayerNorm over the last dimension: one warp per row, fp32 statistics; backward computes dinp
   per row and dw/db with the deterministic column reduction. */
#include "colreduce.cuh"

#define LN_WARPS 8   /* rows per block */
#define LN_EPS 1e-5f /* ZS_LAYERNORM_EPS of the CPU twin */

/* Row i (one warp): mean, then the biased variance around it (two passes, like the CPU), then
   out = (x - mean) * rstd * w + b. */
template <typename T>
__global__ void __launch_bounds__(LN_WARPS * 32)
    layernorm_fwd_kernel(T *out, float *mean, float *rstd, const T *inp, const T *w, const T *b,
                         int N, int C) {
  int lane = threadIdx.x & 31;
  int i = blockIdx.x * LN_WARPS + (threadIdx.x >> 5);
  if (i >= N) return;
  const T *x = inp + (size_t)i * C;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32)
    s += zs_ld(&x[c]);
  float m = zs_warp_sum(s) / (float)C;
  float v = 0.0f;
  for (int c = lane; c < C; c += 32) {
    float d = zs_ld(&x[c]) - m;
    v += d * d;
  }
  float r = 1.0f / sqrtf(zs_warp_sum(v) / (float)C + LN_EPS);
  T *o = out + (size_t)i * C;
  for (int c = lane; c < C; c += 32)
    zs_st(&o[c], (zs_ld(&x[c]) - m) * r * zs_ld(&w[c]) + zs_ld(&b[c]));
  if (lane == 0) {
    mean[i] = m;
    rstd[i] = r;
  }
}

/* Row i (one warp): with n = (x - mean) rstd and g = dout w,
   dinp += rstd (g - mean(g) - n mean(g n)). */
template <typename T>
__global__ void __launch_bounds__(LN_WARPS * 32)
    layernorm_bwd_kernel(T *dinp, const T *dout, const T *inp, const T *w, const float *mean,
                         const float *rstd, int N, int C) {
  int lane = threadIdx.x & 31;
  int i = blockIdx.x * LN_WARPS + (threadIdx.x >> 5);
  if (i >= N) return;
  const T *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
  float m = mean[i], r = rstd[i];
  float sg = 0.0f, sgn = 0.0f;
  for (int c = lane; c < C; c += 32) {
    float n = (zs_ld(&x[c]) - m) * r;
    float g = zs_ld(&d[c]) * zs_ld(&w[c]);
    sg += g;
    sgn += g * n;
  }
  float mg = zs_warp_sum(sg) / (float)C, mgn = zs_warp_sum(sgn) / (float)C;
  T *dx = dinp + (size_t)i * C;
  for (int c = lane; c < C; c += 32) {
    float n = (zs_ld(&x[c]) - m) * r;
    zs_st(&dx[c], zs_ld(&dx[c]) + r * (zs_ld(&d[c]) * zs_ld(&w[c]) - mg - n * mgn));
  }
}

extern "C" zs_status zs_cuda_layernorm_fwd(zs_cuda_kctx *k, void *out, float *mean, float *rstd,
                                           const void *inp, const void *w, const void *b, int N,
                                           int C) {
  unsigned grid = (unsigned)((N + LN_WARPS - 1) / LN_WARPS);
  ZS_DT_DISPATCH(k->dt, E,
                 layernorm_fwd_kernel<E><<<grid, LN_WARPS * 32, 0, k->stream>>>(
                     (E *)out, mean, rstd, (const E *)inp, (const E *)w, (const E *)b, N, C));
  return zs_kcu_launched("zs_cuda_layernorm_fwd");
}

extern "C" zs_status zs_cuda_layernorm_bwd(zs_cuda_kctx *k, void *dinp, void *dw, void *db,
                                           const void *dout, const void *inp, const void *w,
                                           const float *mean, const float *rstd, int N, int C) {
  unsigned grid = (unsigned)((N + LN_WARPS - 1) / LN_WARPS);
  ZS_DT_DISPATCH(k->dt, E,
                 layernorm_bwd_kernel<E><<<grid, LN_WARPS * 32, 0, k->stream>>>(
                     (E *)dinp, (const E *)dout, (const E *)inp, (const E *)w, mean, rstd, N, C));
  ZS_CHECK(zs_kcu_launched("zs_cuda_layernorm_bwd"));
  zs_status rc = zs_cuda_colreduce(k, db, dw, dout, inp, mean, rstd, N, C);
  return rc == ZS_OK ? rc : zs_kerr_wrap(rc, "zs_cuda_layernorm_bwd");
}
