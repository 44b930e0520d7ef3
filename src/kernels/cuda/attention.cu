/* Causal multi-head attention, flash style: no T x T matrix ever exists in memory.
 *
 * Layout (as the CPU twin): qkv[B,T,3C] = q | k | v, head h at channels h*hs .. h*hs+hs-1 of each,
 * out[B,T,C], lse[B,NH,T]. hs <= 128 (DPL = ceil(hs/32) channels per lane).
 *
 * Tiles of 32 keys (or queries) live in shared memory, one per lane: a lane computes the full dot
 * product of its key with a query row held in shared memory (broadcast reads; key rows padded to
 * an odd stride so the lanes hit distinct banks), the warp does the online softmax with shuffles,
 * and for the weighted sums each lane owns DPL output channels.
 *  forward: block = 8 warps x RPW query rows, keys streamed; writes out and lse.
 *  backward: D_t = dout_t . out_t first (scratch); then one pass over query rows for dq (keys
 *  streamed) and one over key rows for dk, dv (queries streamed). Probabilities are recomputed as
 *  exp(s - lse). Each gradient element is summed by a single lane: deterministic, no atomics.
 */
#include "kctx.cuh"

#define AT_TILE 32 /* keys (forward, dq) or queries (dk/dv) per shared tile */
#define AT_WARPS 8
#define AT_FWD_RPW 2 /* query rows per warp in the forward */
#define AT_FULL 0xffffffffu

/* Dot product of two shared rows over hs channels. */
__device__ __forceinline__ float at_dot(const float *a, const float *b, int hs) {
  float s = 0.0f;
  for (int d = 0; d < hs; d++)
    s += a[d] * b[d];
  return s;
}

/* Forward: block (query tile, b*NH + h). */
template <int DPL, typename T>
__global__ void __launch_bounds__(AT_WARPS * 32)
    attn_fwd_kernel(T *out, float *lse, const T *qkv, int T_, int C, int NH, float scale) {
  constexpr int HSP = DPL * 32, RPW = AT_FWD_RPW, BQ = AT_WARPS * RPW;
  __shared__ float Qs[BQ][HSP];
  __shared__ float Ks[AT_TILE][HSP + 1];
  __shared__ float Vs[AT_TILE][HSP];
  const int hs = C / NH, b = blockIdx.y / NH, h = blockIdx.y % NH, q0 = blockIdx.x * BQ;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const size_t rs = (size_t)3 * C;
  const T *base = qkv + (size_t)b * T_ * rs + (size_t)h * hs;
  for (int idx = threadIdx.x; idx < BQ * hs; idx += blockDim.x) {
    int r = idx / hs, d = idx % hs, t = q0 + r;
    Qs[r][d] = t < T_ ? zs_ld(&base[(size_t)t * rs + d]) : 0.0f;
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
  for (int k0 = 0; k0 < kend; k0 += AT_TILE) {
    __syncthreads(); /* the previous tile is consumed (and Qs is written) */
    for (int idx = threadIdx.x; idx < AT_TILE * hs; idx += blockDim.x) {
      int j = idx / hs, d = idx % hs, key = k0 + j;
      const T *row = base + (size_t)key * rs + d;
      Ks[j][d] = key < T_ ? zs_ld(row + C) : 0.0f;
      Vs[j][d] = key < T_ ? zs_ld(row + 2 * (size_t)C) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int r = warp + i * AT_WARPS, t = q0 + r;
      if (t >= T_ || k0 > t) continue; /* warp-uniform */
      const bool ok = k0 + lane <= t;
      float s = ok ? at_dot(Qs[r], Ks[lane], hs) * scale : -INFINITY;
      float mnew = fmaxf(m[i], zs_warp_max(s)); /* finite: key k0 <= t is in this tile */
      float p = ok ? expf(s - mnew) : 0.0f;
      float corr = expf(m[i] - mnew); /* 0 on the first tile (m = -inf) */
      l[i] = l[i] * corr + zs_warp_sum(p);
      m[i] = mnew;
#pragma unroll
      for (int dd = 0; dd < DPL; dd++)
        o[i][dd] *= corr;
      const int nj = min(AT_TILE, t - k0 + 1);
      for (int jj = 0; jj < nj; jj++) {
        float pj = __shfl_sync(AT_FULL, p, jj);
#pragma unroll
        for (int dd = 0; dd < DPL; dd++) {
          int d = lane + 32 * dd;
          if (d < hs) o[i][dd] += pj * Vs[jj][d];
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int t = q0 + warp + i * AT_WARPS;
    if (t >= T_) continue;
    float inv = 1.0f / l[i];
    T *orow = out + ((size_t)b * T_ + t) * C + (size_t)h * hs;
#pragma unroll
    for (int dd = 0; dd < DPL; dd++) {
      int d = lane + 32 * dd;
      if (d < hs) zs_st(&orow[d], o[i][dd] * inv);
    }
    if (lane == 0) lse[(size_t)blockIdx.y * T_ + t] = m[i] + logf(l[i]);
  }
}

/* D[(b*NH + h)*T + t] = dout_t . out_t over head h's channels; one warp per (b, t, h). */
template <typename T>
__global__ void attn_rowdot_kernel(float *Dv, const T *dout, const T *out, int B, int T_, int C,
                                   int NH) {
  const int lane = threadIdx.x & 31, hs = C / NH;
  size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (row >= (size_t)B * T_ * NH) return;
  size_t bt = row / NH;
  int h = (int)(row % NH);
  const size_t off = bt * C + (size_t)h * hs;
  float s = 0.0f;
  for (int d = lane; d < hs; d += 32)
    s += zs_ld(&dout[off + d]) * zs_ld(&out[off + d]);
  s = zs_warp_sum(s);
  int b = (int)(bt / T_), t = (int)(bt % T_);
  if (lane == 0) Dv[((size_t)b * NH + h) * T_ + t] = s;
}

/* dq: block (8 query rows, b*NH + h), one row per warp, key tiles streamed. */
template <int DPL, typename T>
__global__ void __launch_bounds__(AT_WARPS * 32)
    attn_dq_kernel(T *dqkv, const T *dout, const T *qkv, const float *lse, const float *Dv, int T_,
                   int C, int NH, float scale) {
  constexpr int HSP = DPL * 32;
  __shared__ float Qs[AT_WARPS][HSP], dOs[AT_WARPS][HSP];
  __shared__ float Ks[AT_TILE][HSP + 1], Vs[AT_TILE][HSP + 1];
  const int hs = C / NH, b = blockIdx.y / NH, h = blockIdx.y % NH, q0 = blockIdx.x * AT_WARPS;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = q0 + warp;
  const size_t rs = (size_t)3 * C;
  const T *base = qkv + (size_t)b * T_ * rs + (size_t)h * hs;
  const T *dbase = dout + (size_t)b * T_ * C + (size_t)h * hs;
  for (int idx = threadIdx.x; idx < AT_WARPS * hs; idx += blockDim.x) {
    int r = idx / hs, d = idx % hs, tq = q0 + r;
    Qs[r][d] = tq < T_ ? zs_ld(&base[(size_t)tq * rs + d]) : 0.0f;
    dOs[r][d] = tq < T_ ? zs_ld(&dbase[(size_t)tq * C + d]) : 0.0f;
  }
  const float L = t < T_ ? lse[(size_t)blockIdx.y * T_ + t] : 0.0f;
  const float Dt = t < T_ ? Dv[(size_t)blockIdx.y * T_ + t] : 0.0f;
  float acc[DPL];
#pragma unroll
  for (int dd = 0; dd < DPL; dd++)
    acc[dd] = 0.0f;
  const int kend = min(T_, q0 + AT_WARPS);
  for (int k0 = 0; k0 < kend; k0 += AT_TILE) {
    __syncthreads();
    for (int idx = threadIdx.x; idx < AT_TILE * hs; idx += blockDim.x) {
      int j = idx / hs, d = idx % hs, key = k0 + j;
      const T *row = base + (size_t)key * rs + d;
      Ks[j][d] = key < T_ ? zs_ld(row + C) : 0.0f;
      Vs[j][d] = key < T_ ? zs_ld(row + 2 * (size_t)C) : 0.0f;
    }
    __syncthreads();
    if (t >= T_ || k0 > t) continue; /* warp-uniform; the loop's barriers stay matched */
    const bool ok = k0 + lane <= t;
    float p = ok ? expf(at_dot(Qs[warp], Ks[lane], hs) * scale - L) : 0.0f;
    float ds = p * (at_dot(dOs[warp], Vs[lane], hs) - Dt);
    const int nj = min(AT_TILE, t - k0 + 1);
    for (int jj = 0; jj < nj; jj++) {
      float dsj = __shfl_sync(AT_FULL, ds, jj);
#pragma unroll
      for (int dd = 0; dd < DPL; dd++) {
        int d = lane + 32 * dd;
        if (d < hs) acc[dd] += dsj * Ks[jj][d];
      }
    }
  }
  if (t >= T_) return;
  T *dq = dqkv + ((size_t)b * T_ + t) * rs + (size_t)h * hs;
#pragma unroll
  for (int dd = 0; dd < DPL; dd++) {
    int d = lane + 32 * dd;
    if (d < hs) zs_st(&dq[d], zs_ld(&dq[d]) + acc[dd] * scale);
  }
}

/* dk, dv: block (8 key rows, b*NH + h), one key row per warp, query tiles streamed from the
   block's first key on (earlier queries cannot see these keys). */
template <int DPL, typename T>
__global__ void __launch_bounds__(AT_WARPS * 32)
    attn_dkdv_kernel(T *dqkv, const T *dout, const T *qkv, const float *lse, const float *Dv,
                     int T_, int C, int NH, float scale) {
  constexpr int HSP = DPL * 32;
  __shared__ float Ks[AT_WARPS][HSP], Vs[AT_WARPS][HSP];
  __shared__ float Qs[AT_TILE][HSP + 1], dOs[AT_TILE][HSP + 1];
  __shared__ float Ls[AT_TILE], Ds[AT_TILE];
  const int hs = C / NH, b = blockIdx.y / NH, h = blockIdx.y % NH, k0 = blockIdx.x * AT_WARPS;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, j = k0 + warp;
  const size_t rs = (size_t)3 * C;
  const T *base = qkv + (size_t)b * T_ * rs + (size_t)h * hs;
  const T *dbase = dout + (size_t)b * T_ * C + (size_t)h * hs;
  const float *lrow = lse + (size_t)blockIdx.y * T_, *drow = Dv + (size_t)blockIdx.y * T_;
  for (int idx = threadIdx.x; idx < AT_WARPS * hs; idx += blockDim.x) {
    int r = idx / hs, d = idx % hs, key = k0 + r;
    const T *row = base + (size_t)key * rs + d;
    Ks[r][d] = key < T_ ? zs_ld(row + C) : 0.0f;
    Vs[r][d] = key < T_ ? zs_ld(row + 2 * (size_t)C) : 0.0f;
  }
  float dk[DPL], dv[DPL];
#pragma unroll
  for (int dd = 0; dd < DPL; dd++)
    dk[dd] = dv[dd] = 0.0f;
  for (int q0 = k0; q0 < T_; q0 += AT_TILE) {
    __syncthreads();
    for (int idx = threadIdx.x; idx < AT_TILE * hs; idx += blockDim.x) {
      int r = idx / hs, d = idx % hs, tq = q0 + r;
      Qs[r][d] = tq < T_ ? zs_ld(&base[(size_t)tq * rs + d]) : 0.0f;
      dOs[r][d] = tq < T_ ? zs_ld(&dbase[(size_t)tq * C + d]) : 0.0f;
    }
    if (threadIdx.x < AT_TILE) {
      int tq = q0 + threadIdx.x;
      Ls[threadIdx.x] = tq < T_ ? lrow[tq] : 0.0f;
      Ds[threadIdx.x] = tq < T_ ? drow[tq] : 0.0f;
    }
    __syncthreads();
    if (j >= T_) continue; /* warp-uniform */
    const int i = q0 + lane;
    const bool ok = i < T_ && i >= j;
    float p = ok ? expf(at_dot(Qs[lane], Ks[warp], hs) * scale - Ls[lane]) : 0.0f;
    float ds = p * (at_dot(dOs[lane], Vs[warp], hs) - Ds[lane]);
    const int ni = min(AT_TILE, T_ - q0);
    for (int ii = 0; ii < ni; ii++) {
      float pi = __shfl_sync(AT_FULL, p, ii), dsi = __shfl_sync(AT_FULL, ds, ii);
#pragma unroll
      for (int dd = 0; dd < DPL; dd++) {
        int d = lane + 32 * dd;
        if (d < hs) {
          dv[dd] += pi * dOs[ii][d];
          dk[dd] += dsi * Qs[ii][d];
        }
      }
    }
  }
  if (j >= T_) return;
  T *dkrow = dqkv + ((size_t)b * T_ + j) * rs + C + (size_t)h * hs;
  T *dvrow = dkrow + C;
#pragma unroll
  for (int dd = 0; dd < DPL; dd++) {
    int d = lane + 32 * dd;
    if (d < hs) {
      zs_st(&dkrow[d], zs_ld(&dkrow[d]) + dk[dd] * scale);
      zs_st(&dvrow[d], zs_ld(&dvrow[d]) + dv[dd]);
    }
  }
}

/* Runs the statements with compile-time DPL = 1..4 (the caller has checked the range). */
#define AT_DPL_DISPATCH(dpl, D, ...)                                                               \
  do {                                                                                             \
    switch (dpl) {                                                                                 \
    case 1: {                                                                                      \
      constexpr int D = 1;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 2: {                                                                                      \
      constexpr int D = 2;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 3: {                                                                                      \
      constexpr int D = 3;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    default: {                                                                                     \
      constexpr int D = 4;                                                                         \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    }                                                                                              \
  } while (0)

/* Checks the head size and the batch chunk that fits one launch (grid.y <= 65535) and the
   scratch (row terms D of bc*NH*T floats). */
static zs_status attn_plan(const char *fn, int B, int T, int C, int NH, int *dpl, int *bc) {
  int hs = C / NH;
  if (hs > 128)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: head size %d > 128 is not supported on CUDA", fn, hs);
  *dpl = (hs + 31) / 32;
  size_t per_b = (size_t)NH * T * sizeof(float);
  size_t fit = ZS_SCRATCH_BYTES / per_b, grid_fit = 65535 / (size_t)NH;
  if (fit < 1 || grid_fit < 1)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: NH = %d, T = %d is too large for one sequence", fn, NH,
                   T);
  size_t c = fit < grid_fit ? fit : grid_fit;
  *bc = (int)((size_t)B < c ? (size_t)B : c);
  return ZS_OK;
}

extern "C" zs_status zs_cuda_attention_fwd(zs_cuda_kctx *k, void *out, float *lse, const void *qkv,
                                           int B, int T, int C, int NH) {
  static const char fn[] = "zs_cuda_attention_fwd";
  int dpl, bc;
  ZS_CHECK(attn_plan(fn, B, T, C, NH, &dpl, &bc));
  const float scale = 1.0f / sqrtf((float)(C / NH));
  const int bq = AT_WARPS * AT_FWD_RPW;
  for (int b0 = 0; b0 < B; b0 += bc) {
    int nb = B - b0 < bc ? B - b0 : bc;
    dim3 grid((unsigned)((T + bq - 1) / bq), (unsigned)(nb * NH));
    size_t xo = (size_t)b0 * T * C;
    ZS_DT_DISPATCH(k->dt, E,
                   AT_DPL_DISPATCH(dpl, D,
                                   attn_fwd_kernel<D, E><<<grid, AT_WARPS * 32, 0, k->stream>>>(
                                       (E *)out + xo, lse + (size_t)b0 * NH * T,
                                       (const E *)qkv + 3 * xo, T, C, NH, scale)));
    ZS_CHECK(zs_kcu_launched(fn));
  }
  return ZS_OK;
}

extern "C" zs_status zs_cuda_attention_bwd(zs_cuda_kctx *k, void *dqkv, const void *dout,
                                           const void *qkv, const void *out, const float *lse,
                                           int B, int T, int C, int NH) {
  static const char fn[] = "zs_cuda_attention_bwd";
  int dpl, bc;
  ZS_CHECK(attn_plan(fn, B, T, C, NH, &dpl, &bc));
  const float scale = 1.0f / sqrtf((float)(C / NH));
  float *Dv = (float *)k->scratch;
  for (int b0 = 0; b0 < B; b0 += bc) {
    int nb = B - b0 < bc ? B - b0 : bc;
    size_t xo = (size_t)b0 * T * C, lo = (size_t)b0 * NH * T;
    size_t rows = (size_t)nb * T * NH;
    unsigned rgrid = (unsigned)((rows + AT_WARPS - 1) / AT_WARPS);
    dim3 grid((unsigned)((T + AT_WARPS - 1) / AT_WARPS), (unsigned)(nb * NH));
    ZS_DT_DISPATCH(k->dt, E,
                   attn_rowdot_kernel<E><<<rgrid, AT_WARPS * 32, 0, k->stream>>>(
                       Dv, (const E *)dout + xo, (const E *)out + xo, nb, T, C, NH));
    ZS_CHECK(zs_kcu_launched("zs_cuda_attention_bwd (row terms)"));
    ZS_DT_DISPATCH(k->dt, E,
                   AT_DPL_DISPATCH(dpl, D,
                                   attn_dq_kernel<D, E><<<grid, AT_WARPS * 32, 0, k->stream>>>(
                                       (E *)dqkv + 3 * xo, (const E *)dout + xo,
                                       (const E *)qkv + 3 * xo, lse + lo, Dv, T, C, NH, scale)));
    ZS_CHECK(zs_kcu_launched("zs_cuda_attention_bwd (dq)"));
    ZS_DT_DISPATCH(k->dt, E,
                   AT_DPL_DISPATCH(dpl, D,
                                   attn_dkdv_kernel<D, E><<<grid, AT_WARPS * 32, 0, k->stream>>>(
                                       (E *)dqkv + 3 * xo, (const E *)dout + xo,
                                       (const E *)qkv + 3 * xo, lse + lo, Dv, T, C, NH, scale)));
    ZS_CHECK(zs_kcu_launched("zs_cuda_attention_bwd (dk, dv)"));
  }
  return ZS_OK;
}
