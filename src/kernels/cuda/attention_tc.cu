/* Causal attention on the tensor cores (attention.cuh): bf16 storage, D a multiple of 16 up to
 * 128, FlashAttention-2 structure with nvcuda::wmma m16n16k16 bf16 products and fp32
 * accumulation. No T x T matrix ever exists in memory.
 *
 * A block is 4 warps and owns 64 rows (query rows in the forward and dq, key rows in dk/dv),
 * 16 per warp; the other side streams through shared memory in tiles of 64. Each warp computes
 * its 16 x 64 block of scores with wmma into an fp32 scratch of its own, and its lanes then work
 * row-wise on it: lane l owns row l / 2, columns 32 (l % 2) .. + 31 (the softmax and masking,
 * the row statistics in fp32) and, for a 16-column chunk n of an output, columns 16 n + 8 (l % 2)
 * .. + 7. Probabilities P and score gradients dS are rounded to bf16 for the next product.
 *  forward: S = Q K^T, online softmax (running max m, sum l in fp32; the sum adds the fp32 p),
 *    O = O exp(m_old - m_new) + P V with O in the lanes' registers; out = O / l, lse = m + log l.
 *  dq: per key tile S, P = exp(S scale - lse), dP = dO V^T, dS = P (dP - D), dQ += dS K with dQ
 *    in wmma accumulators across the key loop; dq += dQ scale.
 *  dk, dv: per 64 keys of kv head g, for each of the group's G query heads in order, the query
 *    tiles from the block's first key on: S^T = K Q^T, P^T, dV += P^T dO, dP^T = V dO^T, dS^T,
 *    dK += dS^T Q (accumulators across both loops); dk += dK scale, dv += dV.
 * Every output element is summed in a fixed order by a fixed thread: deterministic, no atomics.
 *
 * Shared memory (dynamic, bytes for head size D): bf16 tiles of 64 rows of D + 8 elements (the
 * padding spreads rows over the banks), per warp a 16 x 72 bf16 P / dS block and a 16 x 68 fp32
 * scratch; forward 3 tiles, backward 4 (+ 512 bytes of lse / D terms in dk/dv): at D = 128,
 * 78848 / 96256 / 96768 bytes, within sm_80's, sm_89's and sm_90's opt-in limits. Every wmma
 * pointer is a multiple of 32 bytes from the start of the shared memory: tile row strides are
 * (D + 8) * 2 bytes with fragments at multiples of 16 rows and 16 columns, and every array
 * size is a multiple of 128 bytes. */
#include <mma.h>
#include <stdio.h>

#include "attention.cuh"

using namespace nvcuda;

#define TC_ROWS 64          /* rows a block owns, and rows per streamed tile */
#define TC_WARPS 4          /* 16 rows per warp */
#define TC_PL (TC_ROWS + 8) /* bf16 P / dS row: ldm a multiple of 8 elements */
#define TC_SL (TC_ROWS + 4) /* fp32 scratch row: ldm a multiple of 4 elements */
#define TC_FULL 0xffffffffu
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define TC_OK_ARCH 1 /* bf16 wmma exists from sm_80 on; older targets get trapping kernels */
#else
#define TC_OK_ARCH 0
#endif

typedef __nv_bfloat16 tc_bf16;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, tc_bf16, wmma::row_major> tc_fa;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, tc_bf16, wmma::row_major> tc_fb_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, tc_bf16, wmma::col_major> tc_fb_col;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> tc_facc;

/* Shared bytes of the three kernels for head size D (see the top of the file). */
static constexpr size_t tc_tile_bytes(int D) {
  return (size_t)TC_ROWS * (D + 8) * sizeof(tc_bf16);
}
static constexpr size_t tc_warp_bytes() {
  return (size_t)TC_WARPS * 16 * (TC_PL * sizeof(tc_bf16) + TC_SL * sizeof(float));
}
static constexpr size_t tc_fwd_bytes(int D) {
  return 3 * tc_tile_bytes(D) + tc_warp_bytes();
}
static constexpr size_t tc_dq_bytes(int D) {
  return 4 * tc_tile_bytes(D) + tc_warp_bytes();
}
static constexpr size_t tc_dkdv_bytes(int D) {
  return 4 * tc_tile_bytes(D) + tc_warp_bytes() + 2 * TC_ROWS * sizeof(float);
}

/* Copies rows row0 .. row0+63 of a [T, stride] bf16 matrix (D columns from src) into a shared
   tile of row stride D + 8, 16 bytes at a time; rows >= T become zeros. src and stride are
   16-byte aligned (zs_attn_tc_ready checked). */
template <int D>
__device__ __forceinline__ void tc_load_tile(tc_bf16 *dst, const tc_bf16 *src, size_t stride,
                                             int row0, int T) {
  constexpr int V = D / 8; /* 16-byte pieces per row */
  for (int idx = threadIdx.x; idx < TC_ROWS * V; idx += TC_WARPS * 32) {
    const int r = idx / V, c = (idx % V) * 8, t = row0 + r;
    uint4 x = make_uint4(0u, 0u, 0u, 0u);
    if (t < T) x = *(const uint4 *)(src + (size_t)t * stride + c);
    *(uint4 *)(dst + r * (D + 8) + c) = x;
  }
}

/* S (16 x 64, fp32, row stride TC_SL) = A (this warp's 16 rows of a tile) B^T, B a whole tile:
   S[r][c] = sum_d A[r][d] B[c][d]. KEEP_A holds A's D / 16 fragments in registers across the
   four column blocks (dk/dv, whose accumulators fill the registers, reloads them instead). */
template <int D, bool KEEP_A>
__device__ __forceinline__ void tc_scores(float *S, const tc_bf16 *A, const tc_bf16 *B) {
  constexpr int DP = D + 8;
  tc_fa fa[KEEP_A ? D / 16 : 1];
  if (KEEP_A)
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
      wmma::load_matrix_sync(fa[kk], A + 16 * kk, DP);
#pragma unroll
  for (int n = 0; n < TC_ROWS / 16; n++) {
    tc_facc acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
      tc_fb_col fb; /* B^T: element (d, c) at B[c * DP + d] */
      wmma::load_matrix_sync(fb, B + 16 * n * DP + 16 * kk, DP);
      if (!KEEP_A) wmma::load_matrix_sync(fa[0], A + 16 * kk, DP);
      wmma::mma_sync(acc, fa[KEEP_A ? kk : 0], fb, acc);
    }
    wmma::store_matrix_sync(S + 16 * n, acc, TC_SL, wmma::mem_row_major);
  }
}

/* acc[n] += P (16 x 64 bf16, row stride TC_PL) B[:, 16n .. 16n+15] for every 16-column chunk n
   of B (a 64 x D tile). */
template <int D, int UNROLL>
__device__ __forceinline__ void tc_accum(tc_facc *acc, const tc_bf16 *P, const tc_bf16 *B) {
#pragma unroll UNROLL
  for (int kk = 0; kk < TC_ROWS / 16; kk++) {
    tc_fa fa;
    wmma::load_matrix_sync(fa, P + 16 * kk, TC_PL);
#pragma unroll
    for (int n = 0; n < D / 16; n++) {
      tc_fb_row fb;
      wmma::load_matrix_sync(fb, B + 16 * kk * (D + 8) + 16 * n, D + 8);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

/* Forward: block (query tile, b*NH + h); the tiles of the causal end (most keys) start first. */
template <int D> __global__ void __launch_bounds__(TC_WARPS * 32, 1) tc_fwd_kernel(zs_attn_args a) {
#if TC_OK_ARCH
  constexpr int DP = D + 8, NC = D / 16;
  extern __shared__ __align__(128) unsigned char tc_smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = lane >> 1, half = lane & 1;
  tc_bf16 *Qs = (tc_bf16 *)tc_smem, *Ks = Qs + TC_ROWS * DP, *Vs = Ks + TC_ROWS * DP;
  tc_bf16 *Ps = Vs + TC_ROWS * DP + warp * 16 * TC_PL;
  float *Ss = (float *)(Vs + TC_ROWS * DP + TC_WARPS * 16 * TC_PL) + warp * 16 * TC_SL;
  const int T = a.T, b = blockIdx.y / a.NH, h = blockIdx.y % a.NH;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * TC_ROWS, t = q0 + 16 * warp + r;
  const size_t kvo = (size_t)b * T * a.ks + (size_t)(h / a.G) * D;
  tc_load_tile<D>(Qs, (const tc_bf16 *)a.q + (size_t)b * T * a.qs + (size_t)h * D, a.qs, q0, T);
  float m = -INFINITY, l = 0.0f, o[NC][8];
#pragma unroll
  for (int n = 0; n < NC; n++)
#pragma unroll
    for (int i = 0; i < 8; i++)
      o[n][i] = 0.0f;
  const int kend = min(T, q0 + TC_ROWS);
  for (int k0 = 0; k0 < kend; k0 += TC_ROWS) {
    __syncthreads(); /* every warp is done with the previous K, V tile (and Qs is written) */
    tc_load_tile<D>(Ks, (const tc_bf16 *)a.k + kvo, a.ks, k0, T);
    tc_load_tile<D>(Vs, (const tc_bf16 *)a.v + kvo, a.ks, k0, T);
    __syncthreads();
    tc_scores<D, true>(Ss, Qs + 16 * warp * DP, Ks);
    __syncwarp();
    /* Online softmax of row r over this tile. Key k0 <= q0 <= t is valid for every row of the
       block (k0 < kend <= T), so the running max is finite from the first tile on; rows t >= T
       (padding, zero queries) compute finite values that are never stored. */
    const float *srow = Ss + r * TC_SL + 32 * half;
    tc_bf16 *prow = Ps + r * TC_PL + 32 * half;
    float s[32], mx = -INFINITY;
#pragma unroll
    for (int c = 0; c < 32; c++) {
      const int key = k0 + 32 * half + c;
      s[c] = key <= t && key < T ? srow[c] * a.scale : -INFINITY;
      mx = fmaxf(mx, s[c]);
    }
    const float mnew = fmaxf(m, fmaxf(mx, __shfl_xor_sync(TC_FULL, mx, 1)));
    const float corr = expf(m - mnew); /* 0 on the first tile (m = -inf) */
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < 32; c++) {
      const float p = expf(s[c] - mnew); /* 0 for masked keys */
      sum += p;
      prow[c] = __float2bfloat16_rn(p);
    }
    l = l * corr + (sum + __shfl_xor_sync(TC_FULL, sum, 1));
    m = mnew;
    __syncwarp(); /* P written, the scores read: Ss is free for P V */
                  /* O = O corr + P V, one 16-column chunk at a time through the scratch. */
#pragma unroll
    for (int n = 0; n < NC; n++) {
      tc_facc acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < TC_ROWS / 16; kk++) {
        tc_fa fa;
        tc_fb_row fb;
        wmma::load_matrix_sync(fa, Ps + 16 * kk, TC_PL);
        wmma::load_matrix_sync(fb, Vs + 16 * kk * DP + 16 * n, DP);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(Ss, acc, TC_SL, wmma::mem_row_major);
      __syncwarp();
#pragma unroll
      for (int i = 0; i < 8; i++)
        o[n][i] = o[n][i] * corr + Ss[r * TC_SL + 8 * half + i];
      __syncwarp(); /* read before the next chunk overwrites it */
    }
  }
  if (t < T) {
    const float inv = 1.0f / l;
    tc_bf16 *orow = (tc_bf16 *)a.o + ((size_t)b * T + t) * a.os + (size_t)h * D + 8 * half;
#pragma unroll
    for (int n = 0; n < NC; n++)
#pragma unroll
      for (int i = 0; i < 8; i++)
        orow[16 * n + i] = zs_f2bf(o[n][i] * inv);
    if (half == 0) a.lse[(size_t)blockIdx.y * T + t] = m + logf(l);
  }
#else
  __trap(); /* never silently write nothing: zs_attn_tc_ready refuses these builds */
#endif
}

/* Adds scale x the warp's 16 x D accumulators into 16 rows of a bf16 matrix (row i of the warp
   at dst + i * stride; rows >= T skipped), one 16-column chunk at a time through the scratch S. */
template <int D>
__device__ __forceinline__ void tc_add_out(tc_bf16 *dst, size_t stride, int row0, int T,
                                           const tc_facc *acc, float scale, float *S) {
  const int lane = threadIdx.x & 31, r = lane >> 1, half = lane & 1;
  tc_bf16 *row = dst + (size_t)r * stride + 8 * half;
#pragma unroll
  for (int n = 0; n < D / 16; n++) {
    wmma::store_matrix_sync(S, acc[n], TC_SL, wmma::mem_row_major);
    __syncwarp();
    if (row0 + r < T)
#pragma unroll
      for (int i = 0; i < 8; i++) {
        tc_bf16 *e = row + 16 * n + i;
        *e = zs_f2bf(__bfloat162float(*e) + S[r * TC_SL + 8 * half + i] * scale);
      }
    __syncwarp(); /* read before the next chunk overwrites it */
  }
}

/* dq: block (query tile, b*NH + h), key tiles of kv head h / G streamed; heavy tiles first. */
template <int D> __global__ void __launch_bounds__(TC_WARPS * 32, 1) tc_dq_kernel(zs_attn_args a) {
#if TC_OK_ARCH
  constexpr int DP = D + 8, NC = D / 16;
  extern __shared__ __align__(128) unsigned char tc_smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = lane >> 1, half = lane & 1;
  tc_bf16 *Qs = (tc_bf16 *)tc_smem, *dOs = Qs + TC_ROWS * DP, *Ks = dOs + TC_ROWS * DP;
  tc_bf16 *Vs = Ks + TC_ROWS * DP, *Ps = Vs + TC_ROWS * DP + warp * 16 * TC_PL;
  float *Ss = (float *)(Vs + TC_ROWS * DP + TC_WARPS * 16 * TC_PL) + warp * 16 * TC_SL;
  const int T = a.T, b = blockIdx.y / a.NH, h = blockIdx.y % a.NH;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * TC_ROWS, t = q0 + 16 * warp + r;
  const size_t qo = (size_t)b * T * a.qs + (size_t)h * D;
  const size_t kvo = (size_t)b * T * a.ks + (size_t)(h / a.G) * D;
  tc_load_tile<D>(Qs, (const tc_bf16 *)a.q + qo, a.qs, q0, T);
  tc_load_tile<D>(dOs, (const tc_bf16 *)a.dout + (size_t)b * T * a.os + (size_t)h * D, a.os, q0, T);
  const float L = t < T ? a.lse[(size_t)blockIdx.y * T + t] : 0.0f;
  const float Dt = t < T ? a.Dv[(size_t)blockIdx.y * T + t] : 0.0f;
  tc_facc acc[NC];
#pragma unroll
  for (int n = 0; n < NC; n++)
    wmma::fill_fragment(acc[n], 0.0f);
  const int kend = min(T, q0 + TC_ROWS);
  for (int k0 = 0; k0 < kend; k0 += TC_ROWS) {
    __syncthreads(); /* every warp is done with the previous K, V tile (and Qs, dOs written) */
    tc_load_tile<D>(Ks, (const tc_bf16 *)a.k + kvo, a.ks, k0, T);
    tc_load_tile<D>(Vs, (const tc_bf16 *)a.v + kvo, a.ks, k0, T);
    __syncthreads();
    tc_scores<D, true>(Ss, Qs + 16 * warp * DP, Ks);
    __syncwarp();
    const float *srow = Ss + r * TC_SL + 32 * half;
    float p[32];
#pragma unroll
    for (int c = 0; c < 32; c++) {
      const int key = k0 + 32 * half + c;
      p[c] = key <= t && key < T ? expf(srow[c] * a.scale - L) : 0.0f;
    }
    __syncwarp(); /* the scores are read: Ss takes dP */
    tc_scores<D, true>(Ss, dOs + 16 * warp * DP, Vs);
    __syncwarp();
    tc_bf16 *prow = Ps + r * TC_PL + 32 * half;
#pragma unroll
    for (int c = 0; c < 32; c++)
      prow[c] = __float2bfloat16_rn(p[c] * (srow[c] - Dt));
    __syncwarp(); /* dS written */
    tc_accum<D, 4>(acc, Ps, Ks);
  }
  tc_add_out<D>((tc_bf16 *)a.dq + qo + (size_t)(q0 + 16 * warp) * a.qs, a.qs, q0 + 16 * warp, T,
                acc, a.scale, Ss);
#else
  __trap(); /* never silently write nothing: zs_attn_tc_ready refuses these builds */
#endif
}

/* dk, dv: block (key tile, b*NKV + g); for each query head h of the group in order, the query
   tiles from the block's first key on (earlier queries cannot see these keys). */
template <int D>
__global__ void __launch_bounds__(TC_WARPS * 32, 1) tc_dkdv_kernel(zs_attn_args a) {
#if TC_OK_ARCH
  constexpr int DP = D + 8, NC = D / 16;
  extern __shared__ __align__(128) unsigned char tc_smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = lane >> 1, half = lane & 1;
  tc_bf16 *Ks = (tc_bf16 *)tc_smem, *Vs = Ks + TC_ROWS * DP, *Qs = Vs + TC_ROWS * DP;
  tc_bf16 *dOs = Qs + TC_ROWS * DP, *Ps = dOs + TC_ROWS * DP + warp * 16 * TC_PL;
  float *Ss = (float *)(dOs + TC_ROWS * DP + TC_WARPS * 16 * TC_PL) + warp * 16 * TC_SL;
  float *Ls = (float *)(dOs + TC_ROWS * DP + TC_WARPS * 16 * TC_PL) + TC_WARPS * 16 * TC_SL;
  float *Ds = Ls + TC_ROWS;
  const int T = a.T, NH = a.NH, G = a.G, NKV = NH / G;
  const int b = blockIdx.y / NKV, g = blockIdx.y % NKV, k0 = blockIdx.x * TC_ROWS;
  const int j = k0 + 16 * warp + r; /* the lane's key row */
  const size_t kvo = (size_t)b * T * a.ks + (size_t)g * D;
  tc_load_tile<D>(Ks, (const tc_bf16 *)a.k + kvo, a.ks, k0, T);
  tc_load_tile<D>(Vs, (const tc_bf16 *)a.v + kvo, a.ks, k0, T);
  tc_facc dk[NC], dv[NC];
#pragma unroll
  for (int n = 0; n < NC; n++) {
    wmma::fill_fragment(dk[n], 0.0f);
    wmma::fill_fragment(dv[n], 0.0f);
  }
  for (int hh = 0; hh < G; hh++) {
    const int h = g * G + hh;
    const tc_bf16 *qb = (const tc_bf16 *)a.q + (size_t)b * T * a.qs + (size_t)h * D;
    const tc_bf16 *dob = (const tc_bf16 *)a.dout + (size_t)b * T * a.os + (size_t)h * D;
    const float *lrow = a.lse + ((size_t)b * NH + h) * T, *drow = a.Dv + ((size_t)b * NH + h) * T;
    for (int q0 = k0; q0 < T; q0 += TC_ROWS) {
      __syncthreads(); /* every warp is done with the previous Q, dO tile (and Ks, Vs written) */
      tc_load_tile<D>(Qs, qb, a.qs, q0, T);
      tc_load_tile<D>(dOs, dob, a.os, q0, T);
      if (threadIdx.x < TC_ROWS) {
        const int i = q0 + threadIdx.x;
        Ls[threadIdx.x] = i < T ? lrow[i] : 0.0f;
        Ds[threadIdx.x] = i < T ? drow[i] : 0.0f;
      }
      __syncthreads();
      tc_scores<D, false>(Ss, Ks + 16 * warp * DP, Qs); /* S^T: row = key, column = query */
      __syncwarp();
      const int c0 = 32 * half;
      const float *srow = Ss + r * TC_SL + c0;
      tc_bf16 *prow = Ps + r * TC_PL + c0;
      float p[32];
#pragma unroll
      for (int c = 0; c < 32; c++) {
        const int i = q0 + c0 + c; /* query */
        p[c] = i < T && i >= j ? expf(srow[c] * a.scale - Ls[c0 + c]) : 0.0f;
        prow[c] = __float2bfloat16_rn(p[c]);
      }
      __syncwarp(); /* P^T written, the scores read */
      tc_accum<D, 1>(dv, Ps, dOs);
      tc_scores<D, false>(Ss, Vs + 16 * warp * DP, dOs); /* dP^T */
      __syncwarp(); /* dP^T stored; P^T's loads are done before dS^T overwrites it */
#pragma unroll
      for (int c = 0; c < 32; c++)
        prow[c] = __float2bfloat16_rn(p[c] * (srow[c] - Ds[c0 + c]));
      __syncwarp(); /* dS^T written */
      tc_accum<D, 1>(dk, Ps, Qs);
    }
  }
  const int j0 = k0 + 16 * warp;
  tc_add_out<D>((tc_bf16 *)a.dk + kvo + (size_t)j0 * a.ks, a.ks, j0, T, dk, a.scale, Ss);
  tc_add_out<D>((tc_bf16 *)a.dv + kvo + (size_t)j0 * a.ks, a.ks, j0, T, dv, 1.0f, Ss);
#else
  __trap(); /* never silently write nothing: zs_attn_tc_ready refuses these builds */
#endif
}

/* Runs the statements with compile-time D = 16, 32, .., 128 (the caller has checked D). */
#define TC_D_DISPATCH(d, DD, ...)                                                                  \
  do {                                                                                             \
    switch (d) {                                                                                   \
    case 16: {                                                                                     \
      constexpr int DD = 16;                                                                       \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 32: {                                                                                     \
      constexpr int DD = 32;                                                                       \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 48: {                                                                                     \
      constexpr int DD = 48;                                                                       \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 64: {                                                                                     \
      constexpr int DD = 64;                                                                       \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 80: {                                                                                     \
      constexpr int DD = 80;                                                                       \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 96: {                                                                                     \
      constexpr int DD = 96;                                                                       \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    case 112: {                                                                                    \
      constexpr int DD = 112;                                                                      \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    default: {                                                                                     \
      constexpr int DD = 128;                                                                      \
      __VA_ARGS__;                                                                                 \
    } break;                                                                                       \
    }                                                                                              \
  } while (0)

/* 1 when p is 16-byte aligned (NULL: unused, fine). */
static int tc_aligned(const void *p) {
  return ((uintptr_t)p & 15u) == 0;
}

/* 1 when kernel f (named `name`) can run with `bytes` of dynamic shared memory, else 0 with the
   reason in why (n bytes): its PTX architecture is below compute_80 (its body would be empty: a
   build without an 80+ architecture, JIT-compiled for this device), or the attribute calls fail.
   zs_attn_tc_ready checked that no error was pending, so the error cleared is these calls' own.
   The attribute is set on every call rather than once: it belongs to the current device. */
template <typename F>
static int tc_grant(F f, const char *name, size_t bytes, char *why, size_t n) {
  cudaFuncAttributes fa;
  cudaError_t e = cudaFuncGetAttributes(&fa, f);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, n, "cudaFuncGetAttributes of the %s kernel failed: %s", name,
             cudaGetErrorString(e));
    return 0;
  }
  if (fa.ptxVersion < 80 || fa.binaryVersion < 80) {
    snprintf(why, n,
             "the %s kernel was built from compute_%d PTX for sm_%d, below 8.0 (no tensor-core "
             "body): add 80 or later to CMAKE_CUDA_ARCHITECTURES",
             name, fa.ptxVersion, fa.binaryVersion);
    return 0;
  }
  e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e == cudaSuccess) return 1;
  (void)cudaGetLastError();
  snprintf(why, n, "the device does not grant the %s kernel %zu bytes of dynamic shared memory: %s",
           name, bytes, cudaGetErrorString(e));
  return 0;
}

/* The conditions that need no CUDA call: row strides and pointer alignment (uint4 tile loads). */
static int tc_layout_ok(const zs_attn_args *a, int bwd, char *why, size_t n) {
  if (a->qs % 8 || a->ks % 8 || a->os % 8) {
    snprintf(why, n, "row strides qs = %zu, ks = %zu, os = %zu elements are not all multiples of 8",
             a->qs, a->ks, a->os);
    return 0;
  }
  const void *p[4] = {a->q, a->k, a->v, bwd ? a->dout : NULL};
  static const char *const names[4] = {"q", "k", "v", "dout"};
  for (int i = 0; i < 4; i++)
    if (!tc_aligned(p[i])) {
      snprintf(why, n, "%s (%p) is not 16-byte aligned", names[i], p[i]);
      return 0;
    }
  return 1;
}

zs_status zs_attn_tc_ready(const char *fn, const zs_attn_args *a, int bwd, int *ok, char *why,
                           size_t n) {
  *ok = 0;
  if (!tc_layout_ok(a, bwd, why, n)) return ZS_OK;
  /* An error of earlier work is reported, never swallowed with the queries' own below. */
  if (cudaPeekAtLastError() != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    return zs_kerr(ZS_ERR_DEVICE, "%s: a CUDA error of earlier work was pending: %s (%s)", fn,
                   cudaGetErrorName(e), cudaGetErrorString(e));
  }
  int dev = 0, major = 0, minor = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, n, "the device's compute capability is unknown: %s", cudaGetErrorString(e));
    return ZS_OK;
  }
  if (major < 8) {
    snprintf(why, n, "device %d has compute capability %d.%d, below 8.0", dev, major, minor);
    return ZS_OK;
  }
  TC_D_DISPATCH(a->D, DD,
                *ok = bwd ? tc_grant(tc_dq_kernel<DD>, "dq", tc_dq_bytes(DD), why, n) &&
                                tc_grant(tc_dkdv_kernel<DD>, "dk, dv", tc_dkdv_bytes(DD), why, n)
                          : tc_grant(tc_fwd_kernel<DD>, "forward", tc_fwd_bytes(DD), why, n));
  return ZS_OK;
}

zs_status zs_attn_tc_fwd(zs_cuda_kctx *k, const zs_attn_args *a) {
  const dim3 grid((unsigned)((a->T + TC_ROWS - 1) / TC_ROWS), (unsigned)(a->B * a->NH));
  TC_D_DISPATCH(a->D, DD,
                tc_fwd_kernel<DD><<<grid, TC_WARPS * 32, tc_fwd_bytes(DD), k->stream>>>(*a));
  return zs_kcu_launched("attention forward (tensor cores)");
}

zs_status zs_attn_tc_bwd(zs_cuda_kctx *k, const zs_attn_args *a) {
  const unsigned nt = (unsigned)((a->T + TC_ROWS - 1) / TC_ROWS);
  const dim3 qgrid(nt, (unsigned)(a->B * a->NH)), kgrid(nt, (unsigned)(a->B * (a->NH / a->G)));
  TC_D_DISPATCH(a->D, DD,
                tc_dq_kernel<DD><<<qgrid, TC_WARPS * 32, tc_dq_bytes(DD), k->stream>>>(*a));
  ZS_CHECK(zs_kcu_launched("attention dq (tensor cores)"));
  TC_D_DISPATCH(a->D, DD,
                tc_dkdv_kernel<DD><<<kgrid, TC_WARPS * 32, tc_dkdv_bytes(DD), k->stream>>>(*a));
  return zs_kcu_launched("attention dk, dv (tensor cores)");
}
