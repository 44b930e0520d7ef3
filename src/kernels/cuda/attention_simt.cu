/* Causal attention, SIMT path (attention.cuh): fp32 arithmetic on CUDA cores, for fp32 storage,
 * head sizes that are not a multiple of 16, and devices without the tensor-core path. Flash
 * style: no T x T matrix ever exists in memory. D <= 128 (DPL = ceil(D/32) channels per lane).
 *
 * Tiles of 32 keys (or queries) live in shared memory, one per lane: a lane computes the full dot
 * product of its key with a query row held in shared memory (broadcast reads; key rows padded to
 * an odd stride so the lanes hit distinct banks), the warp does the online softmax with shuffles,
 * and for the weighted sums each lane owns DPL output channels.
 *  forward: block (16 query rows, b*NH + h), keys of kv head h / G streamed in tiles of 32.
 *  dq: block (8 query rows, b*NH + h), one row per warp, key tiles streamed.
 *  dk, dv: block (8 key rows, b*NKV + g), one key row per warp; for each of the group's G query
 *  heads in increasing order the query tiles from the block's first key on (earlier queries
 *  cannot see these keys). Probabilities are recomputed as exp(s - lse). Every gradient element
 *  is summed by one lane in a fixed order: deterministic, no atomics. */
#include "attention.cuh"

#define SA_TILE 32 /* keys (forward, dq) or queries (dk/dv) per shared tile */
#define SA_WARPS 8
#define SA_FWD_RPW 2 /* query rows per warp in the forward */
#define SA_FULL 0xffffffffu

/* Dot product of two shared rows over D channels. */
__device__ __forceinline__ float sa_dot(const float *a, const float *b, int D) {
  float s = 0.0f;
  for (int d = 0; d < D; d++)
    s += a[d] * b[d];
  return s;
}

/* Forward: block (query tile, b*NH + h). */
template <int DPL, typename E>
__global__ void __launch_bounds__(SA_WARPS * 32) sa_fwd_kernel(zs_attn_args a) {
  constexpr int HSP = DPL * 32, RPW = SA_FWD_RPW, BQ = SA_WARPS * RPW;
  __shared__ float Qs[BQ][HSP];
  __shared__ float Ks[SA_TILE][HSP + 1];
  __shared__ float Vs[SA_TILE][HSP];
  const E *q = (const E *)a.q, *key = (const E *)a.k, *val = (const E *)a.v;
  const int T_ = a.T, D = a.D, b = blockIdx.y / a.NH, h = blockIdx.y % a.NH;
  const int q0 = blockIdx.x * BQ, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const size_t qo = (size_t)b * T_ * a.qs + (size_t)h * D;
  const size_t kvo = (size_t)b * T_ * a.ks + (size_t)(h / a.G) * D;
  for (int idx = threadIdx.x; idx < BQ * D; idx += blockDim.x) {
    int r = idx / D, d = idx % D, t = q0 + r;
    Qs[r][d] = t < T_ ? zs_ld(&q[qo + (size_t)t * a.qs + d]) : 0.0f;
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
  for (int k0 = 0; k0 < kend; k0 += SA_TILE) {
    __syncthreads(); /* the previous tile is consumed (and Qs is written) */
    for (int idx = threadIdx.x; idx < SA_TILE * D; idx += blockDim.x) {
      int j = idx / D, d = idx % D, kk = k0 + j;
      size_t off = kvo + (size_t)kk * a.ks + d;
      Ks[j][d] = kk < T_ ? zs_ld(&key[off]) : 0.0f;
      Vs[j][d] = kk < T_ ? zs_ld(&val[off]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int r = warp + i * SA_WARPS, t = q0 + r;
      if (t >= T_ || k0 > t) continue; /* warp-uniform */
      const bool ok = k0 + lane <= t;
      float s = ok ? sa_dot(Qs[r], Ks[lane], D) * a.scale : -INFINITY;
      float mnew = fmaxf(m[i], zs_warp_max(s)); /* finite: key k0 <= t is in this tile */
      float p = ok ? expf(s - mnew) : 0.0f;
      float corr = expf(m[i] - mnew); /* 0 on the first tile (m = -inf) */
      l[i] = l[i] * corr + zs_warp_sum(p);
      m[i] = mnew;
#pragma unroll
      for (int dd = 0; dd < DPL; dd++)
        o[i][dd] *= corr;
      const int nj = min(SA_TILE, t - k0 + 1);
      for (int jj = 0; jj < nj; jj++) {
        float pj = __shfl_sync(SA_FULL, p, jj);
#pragma unroll
        for (int dd = 0; dd < DPL; dd++) {
          int d = lane + 32 * dd;
          if (d < D) o[i][dd] += pj * Vs[jj][d];
        }
      }
    }
  }
  E *out = (E *)a.o;
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int t = q0 + warp + i * SA_WARPS;
    if (t >= T_) continue;
    float inv = 1.0f / l[i];
    E *orow = out + ((size_t)b * T_ + t) * a.os + (size_t)h * D;
#pragma unroll
    for (int dd = 0; dd < DPL; dd++) {
      int d = lane + 32 * dd;
      if (d < D) zs_st(&orow[d], o[i][dd] * inv);
    }
    if (lane == 0) a.lse[(size_t)blockIdx.y * T_ + t] = m[i] + logf(l[i]);
  }
}

/* dq: block (8 query rows, b*NH + h), one row per warp, key tiles of kv head h / G streamed. */
template <int DPL, typename E>
__global__ void __launch_bounds__(SA_WARPS * 32) sa_dq_kernel(zs_attn_args a) {
  constexpr int HSP = DPL * 32;
  __shared__ float Qs[SA_WARPS][HSP], dOs[SA_WARPS][HSP];
  __shared__ float Ks[SA_TILE][HSP + 1], Vs[SA_TILE][HSP + 1];
  const E *q = (const E *)a.q, *key = (const E *)a.k, *val = (const E *)a.v;
  const E *dout = (const E *)a.dout;
  const int T_ = a.T, D = a.D, b = blockIdx.y / a.NH, h = blockIdx.y % a.NH;
  const int q0 = blockIdx.x * SA_WARPS, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int t = q0 + warp;
  const size_t qo = (size_t)b * T_ * a.qs + (size_t)h * D;
  const size_t oo = (size_t)b * T_ * a.os + (size_t)h * D;
  const size_t kvo = (size_t)b * T_ * a.ks + (size_t)(h / a.G) * D;
  for (int idx = threadIdx.x; idx < SA_WARPS * D; idx += blockDim.x) {
    int r = idx / D, d = idx % D, tq = q0 + r;
    Qs[r][d] = tq < T_ ? zs_ld(&q[qo + (size_t)tq * a.qs + d]) : 0.0f;
    dOs[r][d] = tq < T_ ? zs_ld(&dout[oo + (size_t)tq * a.os + d]) : 0.0f;
  }
  const float L = t < T_ ? a.lse[(size_t)blockIdx.y * T_ + t] : 0.0f;
  const float Dt = t < T_ ? a.Dv[(size_t)blockIdx.y * T_ + t] : 0.0f;
  float acc[DPL];
#pragma unroll
  for (int dd = 0; dd < DPL; dd++)
    acc[dd] = 0.0f;
  const int kend = min(T_, q0 + SA_WARPS);
  for (int k0 = 0; k0 < kend; k0 += SA_TILE) {
    __syncthreads();
    for (int idx = threadIdx.x; idx < SA_TILE * D; idx += blockDim.x) {
      int j = idx / D, d = idx % D, kk = k0 + j;
      size_t off = kvo + (size_t)kk * a.ks + d;
      Ks[j][d] = kk < T_ ? zs_ld(&key[off]) : 0.0f;
      Vs[j][d] = kk < T_ ? zs_ld(&val[off]) : 0.0f;
    }
    __syncthreads();
    if (t >= T_ || k0 > t) continue; /* warp-uniform; the loop's barriers stay matched */
    const bool ok = k0 + lane <= t;
    float p = ok ? expf(sa_dot(Qs[warp], Ks[lane], D) * a.scale - L) : 0.0f;
    float ds = p * (sa_dot(dOs[warp], Vs[lane], D) - Dt);
    const int nj = min(SA_TILE, t - k0 + 1);
    for (int jj = 0; jj < nj; jj++) {
      float dsj = __shfl_sync(SA_FULL, ds, jj);
#pragma unroll
      for (int dd = 0; dd < DPL; dd++) {
        int d = lane + 32 * dd;
        if (d < D) acc[dd] += dsj * Ks[jj][d];
      }
    }
  }
  if (t >= T_) return;
  E *dqr = (E *)a.dq + qo + (size_t)t * a.qs;
#pragma unroll
  for (int dd = 0; dd < DPL; dd++) {
    int d = lane + 32 * dd;
    if (d < D) zs_st(&dqr[d], zs_ld(&dqr[d]) + acc[dd] * a.scale);
  }
}

/* dk, dv: block (8 key rows, b*NKV + g), one key row per warp; for each query head h of the group
   (in order) the query tiles from the block's first key on. The sums run over heads, then
   queries, in one lane per element. */
template <int DPL, typename E>
__global__ void __launch_bounds__(SA_WARPS * 32) sa_dkdv_kernel(zs_attn_args a) {
  constexpr int HSP = DPL * 32;
  __shared__ float Ks[SA_WARPS][HSP], Vs[SA_WARPS][HSP];
  __shared__ float Qs[SA_TILE][HSP + 1], dOs[SA_TILE][HSP + 1];
  __shared__ float Ls[SA_TILE], Ds[SA_TILE];
  const E *q = (const E *)a.q, *key = (const E *)a.k, *val = (const E *)a.v;
  const E *dout = (const E *)a.dout;
  const int T_ = a.T, D = a.D, NH = a.NH, G = a.G, NKV = NH / G;
  const int b = blockIdx.y / NKV, g = blockIdx.y % NKV, k0 = blockIdx.x * SA_WARPS;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, j = k0 + warp;
  const size_t kvo = (size_t)b * T_ * a.ks + (size_t)g * D;
  for (int idx = threadIdx.x; idx < SA_WARPS * D; idx += blockDim.x) {
    int r = idx / D, d = idx % D, kk = k0 + r;
    size_t off = kvo + (size_t)kk * a.ks + d;
    Ks[r][d] = kk < T_ ? zs_ld(&key[off]) : 0.0f;
    Vs[r][d] = kk < T_ ? zs_ld(&val[off]) : 0.0f;
  }
  float dk[DPL], dv[DPL];
#pragma unroll
  for (int dd = 0; dd < DPL; dd++)
    dk[dd] = dv[dd] = 0.0f;
  for (int hh = 0; hh < G; hh++) {
    const int h = g * G + hh;
    const size_t qo = (size_t)b * T_ * a.qs + (size_t)h * D;
    const size_t oo = (size_t)b * T_ * a.os + (size_t)h * D;
    const float *lrow = a.lse + ((size_t)b * NH + h) * T_;
    const float *drow = a.Dv + ((size_t)b * NH + h) * T_;
    for (int q0 = k0; q0 < T_; q0 += SA_TILE) {
      __syncthreads();
      for (int idx = threadIdx.x; idx < SA_TILE * D; idx += blockDim.x) {
        int r = idx / D, d = idx % D, tq = q0 + r;
        Qs[r][d] = tq < T_ ? zs_ld(&q[qo + (size_t)tq * a.qs + d]) : 0.0f;
        dOs[r][d] = tq < T_ ? zs_ld(&dout[oo + (size_t)tq * a.os + d]) : 0.0f;
      }
      if (threadIdx.x < SA_TILE) {
        int tq = q0 + threadIdx.x;
        Ls[threadIdx.x] = tq < T_ ? lrow[tq] : 0.0f;
        Ds[threadIdx.x] = tq < T_ ? drow[tq] : 0.0f;
      }
      __syncthreads();
      if (j >= T_) continue; /* warp-uniform */
      const int i = q0 + lane;
      const bool ok = i < T_ && i >= j;
      float p = ok ? expf(sa_dot(Qs[lane], Ks[warp], D) * a.scale - Ls[lane]) : 0.0f;
      float ds = p * (sa_dot(dOs[lane], Vs[warp], D) - Ds[lane]);
      const int ni = min(SA_TILE, T_ - q0);
      for (int ii = 0; ii < ni; ii++) {
        float pi = __shfl_sync(SA_FULL, p, ii), dsi = __shfl_sync(SA_FULL, ds, ii);
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
  E *dkr = (E *)a.dk + kvo + (size_t)j * a.ks, *dvr = (E *)a.dv + kvo + (size_t)j * a.ks;
#pragma unroll
  for (int dd = 0; dd < DPL; dd++) {
    int d = lane + 32 * dd;
    if (d < D) {
      zs_st(&dkr[d], zs_ld(&dkr[d]) + dk[dd] * a.scale);
      zs_st(&dvr[d], zs_ld(&dvr[d]) + dv[dd]);
    }
  }
}

/* Runs the statements with compile-time DPL = 1..4 (the caller has checked D <= 128). */
#define SA_DPL_DISPATCH(dpl, P, ...)                                                               \
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

zs_status zs_attn_simt_fwd(zs_cuda_kctx *k, const zs_attn_args *a) {
  const int bq = SA_WARPS * SA_FWD_RPW, dpl = (a->D + 31) / 32;
  const dim3 grid((unsigned)((a->T + bq - 1) / bq), (unsigned)(a->B * a->NH));
  ZS_DT_DISPATCH(
      k->dt, E,
      SA_DPL_DISPATCH(dpl, P, sa_fwd_kernel<P, E><<<grid, SA_WARPS * 32, 0, k->stream>>>(*a)));
  return zs_kcu_launched("attention forward (SIMT)");
}

zs_status zs_attn_simt_bwd(zs_cuda_kctx *k, const zs_attn_args *a) {
  const int dpl = (a->D + 31) / 32, nt = (a->T + SA_WARPS - 1) / SA_WARPS;
  const dim3 qgrid((unsigned)nt, (unsigned)(a->B * a->NH));
  const dim3 kgrid((unsigned)nt, (unsigned)(a->B * (a->NH / a->G)));
  ZS_DT_DISPATCH(
      k->dt, E,
      SA_DPL_DISPATCH(dpl, P, sa_dq_kernel<P, E><<<qgrid, SA_WARPS * 32, 0, k->stream>>>(*a)));
  ZS_CHECK(zs_kcu_launched("attention dq (SIMT)"));
  ZS_DT_DISPATCH(
      k->dt, E,
      SA_DPL_DISPATCH(dpl, P, sa_dkdv_kernel<P, E><<<kgrid, SA_WARPS * 32, 0, k->stream>>>(*a)));
  return zs_kcu_launched("attention dk, dv (SIMT)");
}
