/* Causal attention with grouped-query heads (Llama, Qwen2, Mistral), flash style: no T x T matrix
 * ever exists in memory. The tiling of attention.cu (GPT-2), with separate q / key / val buffers:
 *
 * Layout (as the CPU twin): q, out, dout [B,T,NH*D]; key, val [B,T,NKV*D]; lse [B,NH,T]; query
 * head h reads kv head h / G, G = NH / NKV. D <= 128 (DPL = ceil(D/32) channels per lane).
 *  forward: block (16 query rows, b*NH + h), keys of its kv head streamed in tiles of 32.
 *  backward: Dt = dout_t . out_t per (b, h, t) into scratch; dq: block (8 query rows, b*NH + h),
 *  key tiles streamed; dk, dv: block (8 key rows, b*NKV + g), for each of the group's G query
 *  heads in increasing order the query tiles from the block's first key on. Every gradient
 *  element is summed by one lane in a fixed order: deterministic, no atomics.
 */
#include "llama_cuda.h"

#include "kctx.cuh"

#define GA_TILE 32 /* keys (forward, dq) or queries (dk/dv) per shared tile */
#define GA_WARPS 8
#define GA_FWD_RPW 2 /* query rows per warp in the forward */
#define GA_FULL 0xffffffffu

/* Dot product of two shared rows over D channels. */
__device__ __forceinline__ float ga_dot(const float *a, const float *b, int D) {
  float s = 0.0f;
  for (int d = 0; d < D; d++)
    s += a[d] * b[d];
  return s;
}

/* Forward: block (query tile, b*NH + h). qs / ks: row strides of q (and out) and of key/val. */
template <int DPL, typename T>
__global__ void __launch_bounds__(GA_WARPS * 32)
    gqa_fwd_kernel(T *out, float *lse, const T *q, const T *key, const T *val, int T_, int NH,
                   int G, int D, float scale) {
  constexpr int HSP = DPL * 32, RPW = GA_FWD_RPW, BQ = GA_WARPS * RPW;
  __shared__ float Qs[BQ][HSP];
  __shared__ float Ks[GA_TILE][HSP + 1];
  __shared__ float Vs[GA_TILE][HSP];
  const int b = blockIdx.y / NH, h = blockIdx.y % NH, q0 = blockIdx.x * BQ;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const size_t qs = (size_t)NH * D, ks = (size_t)(NH / G) * D;
  const T *qb = q + (size_t)b * T_ * qs + (size_t)h * D;
  const size_t kvo = (size_t)b * T_ * ks + (size_t)(h / G) * D;
  for (int idx = threadIdx.x; idx < BQ * D; idx += blockDim.x) {
    int r = idx / D, d = idx % D, t = q0 + r;
    Qs[r][d] = t < T_ ? zs_ld(&qb[(size_t)t * qs + d]) : 0.0f;
  }
  float m[RPW], l[RPW], o[RPW][DPL];
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int dd = 0; dd < DPL; dd++)
      o[i][dd] = 0.0f;
  }
  const int kend = min(T_, q0 + BQ);
  for (int k0 = 0; k0 < kend; k0 += GA_TILE) {
    __syncthreads(); /* the previous tile is consumed (and Qs is written) */
    for (int idx = threadIdx.x; idx < GA_TILE * D; idx += blockDim.x) {
      int j = idx / D, d = idx % D, kk = k0 + j;
      size_t off = kvo + (size_t)kk * ks + d;
      Ks[j][d] = kk < T_ ? zs_ld(&key[off]) : 0.0f;
      Vs[j][d] = kk < T_ ? zs_ld(&val[off]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int r = warp + i * GA_WARPS, t = q0 + r;
      if (t >= T_ || k0 > t) continue; /* warp-uniform */
      const bool ok = k0 + lane <= t;
      float s = ok ? ga_dot(Qs[r], Ks[lane], D) * scale : -INFINITY;
      float mnew = fmaxf(m[i], zs_warp_max(s)); /* finite: key k0 <= t is in this tile */
      float p = ok ? expf(s - mnew) : 0.0f;
      float corr = expf(m[i] - mnew); /* 0 on the first tile (m = -inf) */
      l[i] = l[i] * corr + zs_warp_sum(p);
      m[i] = mnew;
#pragma unroll
      for (int dd = 0; dd < DPL; dd++)
        o[i][dd] *= corr;
      const int nj = min(GA_TILE, t - k0 + 1);
      for (int jj = 0; jj < nj; jj++) {
        float pj = __shfl_sync(GA_FULL, p, jj);
#pragma unroll
        for (int dd = 0; dd < DPL; dd++) {
          int d = lane + 32 * dd;
          if (d < D) o[i][dd] += pj * Vs[jj][d];
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int t = q0 + warp + i * GA_WARPS;
    if (t >= T_) continue;
    float inv = 1.0f / l[i];
    T *orow = out + ((size_t)b * T_ + t) * qs + (size_t)h * D;
#pragma unroll
    for (int dd = 0; dd < DPL; dd++) {
      int d = lane + 32 * dd;
      if (d < D) zs_st(&orow[d], o[i][dd] * inv);
    }
    if (lane == 0) lse[(size_t)blockIdx.y * T_ + t] = m[i] + logf(l[i]);
  }
}

/* Dv[(b*NH + h)*T + t] = dout_t . out_t over head h; one warp per (b, t, h). */
template <typename T>
__global__ void gqa_rowdot_kernel(float *Dv, const T *dout, const T *out, int B, int T_, int NH,
                                  int D) {
  const int lane = threadIdx.x & 31;
  size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (row >= (size_t)B * T_ * NH) return;
  size_t bt = row / NH;
  int h = (int)(row % NH);
  const size_t off = row * D; /* (bt*NH + h)*D */
  float s = 0.0f;
  for (int d = lane; d < D; d += 32)
    s += zs_ld(&dout[off + d]) * zs_ld(&out[off + d]);
  s = zs_warp_sum(s);
  int b = (int)(bt / T_), t = (int)(bt % T_);
  if (lane == 0) Dv[((size_t)b * NH + h) * T_ + t] = s;
}

/* dq: block (8 query rows, b*NH + h), one row per warp, key tiles of kv head h / G streamed. */
template <int DPL, typename T>
__global__ void __launch_bounds__(GA_WARPS * 32)
    gqa_dq_kernel(T *dq, const T *dout, const T *q, const T *key, const T *val, const float *lse,
                  const float *Dv, int T_, int NH, int G, int D, float scale) {
  constexpr int HSP = DPL * 32;
  __shared__ float Qs[GA_WARPS][HSP], dOs[GA_WARPS][HSP];
  __shared__ float Ks[GA_TILE][HSP + 1], Vs[GA_TILE][HSP + 1];
  const int b = blockIdx.y / NH, h = blockIdx.y % NH, q0 = blockIdx.x * GA_WARPS;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = q0 + warp;
  const size_t qs = (size_t)NH * D, ks = (size_t)(NH / G) * D;
  const size_t qo = (size_t)b * T_ * qs + (size_t)h * D;
  const size_t kvo = (size_t)b * T_ * ks + (size_t)(h / G) * D;
  for (int idx = threadIdx.x; idx < GA_WARPS * D; idx += blockDim.x) {
    int r = idx / D, d = idx % D, tq = q0 + r;
    Qs[r][d] = tq < T_ ? zs_ld(&q[qo + (size_t)tq * qs + d]) : 0.0f;
    dOs[r][d] = tq < T_ ? zs_ld(&dout[qo + (size_t)tq * qs + d]) : 0.0f;
  }
  const float L = t < T_ ? lse[(size_t)blockIdx.y * T_ + t] : 0.0f;
  const float Dt = t < T_ ? Dv[(size_t)blockIdx.y * T_ + t] : 0.0f;
  float acc[DPL];
#pragma unroll
  for (int dd = 0; dd < DPL; dd++)
    acc[dd] = 0.0f;
  const int kend = min(T_, q0 + GA_WARPS);
  for (int k0 = 0; k0 < kend; k0 += GA_TILE) {
    __syncthreads();
    for (int idx = threadIdx.x; idx < GA_TILE * D; idx += blockDim.x) {
      int j = idx / D, d = idx % D, kk = k0 + j;
      size_t off = kvo + (size_t)kk * ks + d;
      Ks[j][d] = kk < T_ ? zs_ld(&key[off]) : 0.0f;
      Vs[j][d] = kk < T_ ? zs_ld(&val[off]) : 0.0f;
    }
    __syncthreads();
    if (t >= T_ || k0 > t) continue; /* warp-uniform; the loop's barriers stay matched */
    const bool ok = k0 + lane <= t;
    float p = ok ? expf(ga_dot(Qs[warp], Ks[lane], D) * scale - L) : 0.0f;
    float ds = p * (ga_dot(dOs[warp], Vs[lane], D) - Dt);
    const int nj = min(GA_TILE, t - k0 + 1);
    for (int jj = 0; jj < nj; jj++) {
      float dsj = __shfl_sync(GA_FULL, ds, jj);
#pragma unroll
      for (int dd = 0; dd < DPL; dd++) {
        int d = lane + 32 * dd;
        if (d < D) acc[dd] += dsj * Ks[jj][d];
      }
    }
  }
  if (t >= T_) return;
  T *dqr = dq + qo + (size_t)t * qs;
#pragma unroll
  for (int dd = 0; dd < DPL; dd++) {
    int d = lane + 32 * dd;
    if (d < D) zs_st(&dqr[d], zs_ld(&dqr[d]) + acc[dd] * scale);
  }
}

/* dk, dv: block (8 key rows, b*NKV + g), one key row per warp; for each query head h of the group
   (in order) the query tiles from the block's first key on (earlier queries cannot see these
   keys). The sums run over heads, then queries, in one lane per element. */
template <int DPL, typename T>
__global__ void __launch_bounds__(GA_WARPS * 32)
    gqa_dkdv_kernel(T *dkey, T *dval, const T *dout, const T *q, const T *key, const T *val,
                    const float *lse, const float *Dv, int T_, int NH, int G, int D, float scale) {
  constexpr int HSP = DPL * 32;
  __shared__ float Ks[GA_WARPS][HSP], Vs[GA_WARPS][HSP];
  __shared__ float Qs[GA_TILE][HSP + 1], dOs[GA_TILE][HSP + 1];
  __shared__ float Ls[GA_TILE], Ds[GA_TILE];
  const int NKV = NH / G, b = blockIdx.y / NKV, g = blockIdx.y % NKV, k0 = blockIdx.x * GA_WARPS;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, j = k0 + warp;
  const size_t qs = (size_t)NH * D, ks = (size_t)NKV * D;
  const size_t kvo = (size_t)b * T_ * ks + (size_t)g * D;
  for (int idx = threadIdx.x; idx < GA_WARPS * D; idx += blockDim.x) {
    int r = idx / D, d = idx % D, kk = k0 + r;
    size_t off = kvo + (size_t)kk * ks + d;
    Ks[r][d] = kk < T_ ? zs_ld(&key[off]) : 0.0f;
    Vs[r][d] = kk < T_ ? zs_ld(&val[off]) : 0.0f;
  }
  float dk[DPL], dv[DPL];
#pragma unroll
  for (int dd = 0; dd < DPL; dd++)
    dk[dd] = dv[dd] = 0.0f;
  for (int hh = 0; hh < G; hh++) {
    const int h = g * G + hh;
    const size_t qo = (size_t)b * T_ * qs + (size_t)h * D;
    const float *lrow = lse + ((size_t)b * NH + h) * T_, *drow = Dv + ((size_t)b * NH + h) * T_;
    for (int q0 = k0; q0 < T_; q0 += GA_TILE) {
      __syncthreads();
      for (int idx = threadIdx.x; idx < GA_TILE * D; idx += blockDim.x) {
        int r = idx / D, d = idx % D, tq = q0 + r;
        Qs[r][d] = tq < T_ ? zs_ld(&q[qo + (size_t)tq * qs + d]) : 0.0f;
        dOs[r][d] = tq < T_ ? zs_ld(&dout[qo + (size_t)tq * qs + d]) : 0.0f;
      }
      if (threadIdx.x < GA_TILE) {
        int tq = q0 + threadIdx.x;
        Ls[threadIdx.x] = tq < T_ ? lrow[tq] : 0.0f;
        Ds[threadIdx.x] = tq < T_ ? drow[tq] : 0.0f;
      }
      __syncthreads();
      if (j >= T_) continue; /* warp-uniform */
      const int i = q0 + lane;
      const bool ok = i < T_ && i >= j;
      float p = ok ? expf(ga_dot(Qs[lane], Ks[warp], D) * scale - Ls[lane]) : 0.0f;
      float ds = p * (ga_dot(dOs[lane], Vs[warp], D) - Ds[lane]);
      const int ni = min(GA_TILE, T_ - q0);
      for (int ii = 0; ii < ni; ii++) {
        float pi = __shfl_sync(GA_FULL, p, ii), dsi = __shfl_sync(GA_FULL, ds, ii);
#pragma unroll
        for (int dd = 0; dd < DPL; dd++) {
          int d = lane + 32 * dd;
          if (d < D) {
            dv[dd] += pi * dOs[ii][d];
            dk[dd] += dsi * Qs[ii][d];
          }
        }
      }
    }
  }
  if (j >= T_) return;
  T *dkr = dkey + kvo + (size_t)j * ks, *dvr = dval + kvo + (size_t)j * ks;
#pragma unroll
  for (int dd = 0; dd < DPL; dd++) {
    int d = lane + 32 * dd;
    if (d < D) {
      zs_st(&dkr[d], zs_ld(&dkr[d]) + dk[dd] * scale);
      zs_st(&dvr[d], zs_ld(&dvr[d]) + dv[dd]);
    }
  }
}

/* Runs the statements with compile-time DPL = 1..4 (the caller has checked the range). */
#define GA_DPL_DISPATCH(dpl, P, ...)                                                               \
  do {                                                                                             \
    switch (dpl) {                                                                                 \
    case 1: {                                                                                      \
      constexpr int P = 1;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 2: {                                                                                      \
      constexpr int P = 2;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 3: {                                                                                      \
      constexpr int P = 3;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    default: {                                                                                     \
      constexpr int P = 4;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    }                                                                                              \
  } while (0)

/* Checks the head dim and the batch chunk that fits one launch (grid.y = nb*NH <= 65535) and the
   scratch (row terms of nb*NH*T floats). */
static zs_status gqa_plan(const char *fn, int B, int T, int NH, int D, int *dpl, int *bc) {
  if (D > 128)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: head dim D = %d > 128 is not supported on CUDA", fn, D);
  *dpl = (D + 31) / 32;
  size_t per_b = (size_t)NH * T * sizeof(float);
  size_t fit = ZS_SCRATCH_BYTES / per_b, grid_fit = 65535 / (size_t)NH;
  if (fit < 1 || grid_fit < 1)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: NH = %d, T = %d is too large for one sequence", fn, NH,
                   T);
  size_t c = fit < grid_fit ? fit : grid_fit;
  *bc = (int)((size_t)B < c ? (size_t)B : c);
  return ZS_OK;
}

extern "C" zs_status zs_cuda_gqa_attention_fwd(zs_cuda_kctx *k, void *out, float *lse,
                                               const void *q, const void *key, const void *val,
                                               int B, int T, int NH, int NKV, int D) {
  static const char fn[] = "zs_cuda_gqa_attention_fwd";
  int dpl, bc;
  ZS_CHECK(gqa_plan(fn, B, T, NH, D, &dpl, &bc));
  const float scale = 1.0f / sqrtf((float)D);
  const int G = NH / NKV, bq = GA_WARPS * GA_FWD_RPW;
  for (int b0 = 0; b0 < B; b0 += bc) {
    int nb = B - b0 < bc ? B - b0 : bc;
    dim3 grid((unsigned)((T + bq - 1) / bq), (unsigned)(nb * NH));
    size_t qo = (size_t)b0 * T * NH * D, ko = (size_t)b0 * T * NKV * D;
    ZS_DT_DISPATCH(
        k->dt, E,
        GA_DPL_DISPATCH(dpl, P,
                        gqa_fwd_kernel<P, E><<<grid, GA_WARPS * 32, 0, k->stream>>>(
                            (E *)out + qo, lse + (size_t)b0 * NH * T, (const E *)q + qo,
                            (const E *)key + ko, (const E *)val + ko, T, NH, G, D, scale)));
    ZS_CHECK(zs_kcu_launched(fn));
  }
  return ZS_OK;
}

extern "C" zs_status zs_cuda_gqa_attention_bwd(zs_cuda_kctx *k, void *dq, void *dkey, void *dval,
                                               const void *dout, const void *q, const void *key,
                                               const void *val, const void *out, const float *lse,
                                               int B, int T, int NH, int NKV, int D) {
  static const char fn[] = "zs_cuda_gqa_attention_bwd";
  int dpl, bc;
  ZS_CHECK(gqa_plan(fn, B, T, NH, D, &dpl, &bc));
  const float scale = 1.0f / sqrtf((float)D);
  const int G = NH / NKV;
  float *Dv = (float *)k->scratch;
  for (int b0 = 0; b0 < B; b0 += bc) {
    int nb = B - b0 < bc ? B - b0 : bc;
    size_t qo = (size_t)b0 * T * NH * D, ko = (size_t)b0 * T * NKV * D, lo = (size_t)b0 * NH * T;
    size_t rows = (size_t)nb * T * NH;
    unsigned rgrid = (unsigned)((rows + GA_WARPS - 1) / GA_WARPS);
    dim3 qgrid((unsigned)((T + GA_WARPS - 1) / GA_WARPS), (unsigned)(nb * NH));
    dim3 kgrid((unsigned)((T + GA_WARPS - 1) / GA_WARPS), (unsigned)(nb * NKV));
    ZS_DT_DISPATCH(k->dt, E,
                   gqa_rowdot_kernel<E><<<rgrid, GA_WARPS * 32, 0, k->stream>>>(
                       Dv, (const E *)dout + qo, (const E *)out + qo, nb, T, NH, D));
    ZS_CHECK(zs_kcu_launched("zs_cuda_gqa_attention_bwd (row terms)"));
    ZS_DT_DISPATCH(k->dt, E,
                   GA_DPL_DISPATCH(dpl, P,
                                   gqa_dq_kernel<P, E><<<qgrid, GA_WARPS * 32, 0, k->stream>>>(
                                       (E *)dq + qo, (const E *)dout + qo, (const E *)q + qo,
                                       (const E *)key + ko, (const E *)val + ko, lse + lo, Dv, T,
                                       NH, G, D, scale)));
    ZS_CHECK(zs_kcu_launched("zs_cuda_gqa_attention_bwd (dq)"));
    ZS_DT_DISPATCH(k->dt, E,
                   GA_DPL_DISPATCH(dpl, P,
                                   gqa_dkdv_kernel<P, E><<<kgrid, GA_WARPS * 32, 0, k->stream>>>(
                                       (E *)dkey + ko, (E *)dval + ko, (const E *)dout + qo,
                                       (const E *)q + qo, (const E *)key + ko, (const E *)val + ko,
                                       lse + lo, Dv, T, NH, G, D, scale)));
    ZS_CHECK(zs_kcu_launched("zs_cuda_gqa_attention_bwd (dk, dv)"));
  }
  return ZS_OK;
}
