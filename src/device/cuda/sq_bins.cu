/* Exact, partition-invariant sum of squares (for the global gradient norm): integer bins per
   exponent, see engine_cuda.h. Each block sums the squares of at most SQ_BLOCK_ELEMS elements per
   bin in shared memory, normalises those bins and adds them atomically into the caller's bins.
   Integer addition is associative, so the split into calls and blocks, the grouping inside a
   block and the order of the atomics cannot change the result: each block's shared bins hold the
   same integers whatever the grouping, so they normalise to the same words as one atomic per
   element gave.

   Inside a block a warp takes SQ_WARP_ELEMS elements at a time (SQ_PER_LANE per lane) and adds
   them bin by bin: one warp sum and one shared atomic per distinct bin among them, instead of
   one atomic per element (the few bins a gradient's exponents fall in made those collide).

   Overflow: a square is mant^2 <= (2^24 - 1)^2 < 2^48. A lane's partial for one bin is at most
   SQ_PER_LANE of them (< 2^51), a warp's sum of 32 lanes < 2^56, and a shared bin holds at most
   SQ_BLOCK_ELEMS = 2^16 squares (< 2^64), the non-finite count at most 2^16: nothing wraps before
   the block's normalisation, which carries every bin's high 32 bits 16 bins up. */
#include "device/cuda/cuda_check.cuh"
#include "device/cuda/cuda_common.cuh"
#include "device/cuda/engine_cuda.h"

#define SQ_THREADS 256
#define SQ_BLOCK_ELEMS 65536 /* elements per block: keeps each shared bin below 2^64 */
#define SQ_PER_LANE 8        /* elements a lane holds per round: its partials stay below 2^51 */
#define SQ_WARP_ELEMS (32 * SQ_PER_LANE)
#define SQ_ROUND_ELEMS (SQ_THREADS * SQ_PER_LANE) /* SQ_BLOCK_ELEMS is a multiple of it */
#define SQ_FULL 0xffffffffu

/* Carries every bin's high 32 bits 16 bins up (2^32 * 2^(2e) == 2^(2(e+16))); one thread. */
__device__ void sq_normalise(unsigned long long *b) {
  for (int e = 0; e + 16 < ZS_SQ_NBINS; e++) {
    unsigned long long carry = b[e] >> 32;
    b[e] &= 0xffffffffull;
    b[e + 16] += carry;
  }
}

/* fp32 bits of element i. */
__device__ __forceinline__ uint32_t sq_bits(const float *x, size_t i) {
  return __float_as_uint(x[i]);
}
__device__ __forceinline__ uint32_t sq_bits(const zs_bf16 *x, size_t i) {
  return (uint32_t)__bfloat16_as_ushort(x[i]) << 16;
}

/* The bin and the mantissa whose square goes there, for fp32 bits u: a finite non-zero value's
   exponent bin (subnormals in bin 1) and mantissa; a non-finite one the count word with 1 (1^2
   counts it once); a zero bin 0, which no element ever adds to, as "nothing". */
__device__ __forceinline__ void sq_split(uint32_t u, uint32_t *bin, uint32_t *mant) {
  const uint32_t E = (u >> 23) & 0xffu, M = u & 0x7fffffu;
  if (E == 255u) {
    *bin = ZS_SQ_NBINS;
    *mant = 1u;
    return;
  }
  *mant = E ? (M | 0x800000u) : M;
  *bin = *mant ? (E ? E : 1u) : 0u;
}

/* Sum over the warp's 32 lanes (every lane gets it). */
__device__ __forceinline__ unsigned long long sq_warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(SQ_FULL, v, o);
  return v;
}

/* Adds the squares of the warp's SQ_WARP_ELEMS (bin, mantissa) pairs (bin 0: nothing) into sb:
   per round the first lane with a pair left names its bin, every lane sums its pairs of that bin
   and clears them, and lane 0 adds the warp's sum with one shared atomic. The loop is
   warp-uniform (its test is a ballot) and ends after as many rounds as the warp has distinct
   bins. Called by all 32 lanes. */
__device__ __forceinline__ void sq_warp_add(unsigned long long *sb, uint32_t (&bin)[SQ_PER_LANE],
                                            const uint32_t (&mant)[SQ_PER_LANE]) {
  for (;;) {
    uint32_t first = 0;
#pragma unroll
    for (int k = SQ_PER_LANE - 1; k >= 0; k--)
      if (bin[k]) first = bin[k];
    const unsigned pending = __ballot_sync(SQ_FULL, first != 0);
    if (!pending) return;
    const uint32_t b = __shfl_sync(SQ_FULL, first, __ffs((int)pending) - 1);
    unsigned long long v = 0;
#pragma unroll
    for (int k = 0; k < SQ_PER_LANE; k++)
      if (bin[k] == b) {
        v += (unsigned long long)mant[k] * mant[k];
        bin[k] = 0;
      }
    v = sq_warp_sum(v);
    if ((threadIdx.x & 31u) == 0) atomicAdd(&sb[b], v);
  }
}

/* Block `blockIdx.x` squares elements [blockIdx.x * SQ_BLOCK_ELEMS, +SQ_BLOCK_ELEMS) of x. Warp w
   takes SQ_WARP_ELEMS contiguous elements per round (lane l elements l, l + 32, ...: coalesced
   loads), rounds SQ_ROUND_ELEMS apart; the round test depends on the warp only, so every lane of
   a warp reaches the warp collectives together (lanes past the end hold nothing). */
template <typename T>
__global__ void __launch_bounds__(SQ_THREADS)
    sq_bins_kernel(unsigned long long *bins, const T *x, size_t n) {
  __shared__ unsigned long long sb[ZS_SQ_NWORDS];
  for (int i = threadIdx.x; i < ZS_SQ_NWORDS; i += blockDim.x)
    sb[i] = 0;
  __syncthreads();
  const size_t begin = (size_t)blockIdx.x * SQ_BLOCK_ELEMS;
  const size_t end = begin + SQ_BLOCK_ELEMS < n ? begin + SQ_BLOCK_ELEMS : n;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (size_t base = begin + (size_t)warp * SQ_WARP_ELEMS; base < end; base += SQ_ROUND_ELEMS) {
    uint32_t bin[SQ_PER_LANE], mant[SQ_PER_LANE];
#pragma unroll
    for (int k = 0; k < SQ_PER_LANE; k++) {
      const size_t i = base + (size_t)k * 32 + lane;
      bin[k] = mant[k] = 0;
      if (i < end) sq_split(sq_bits(x, i), &bin[k], &mant[k]);
    }
    sq_warp_add(sb, bin, mant);
  }
  __syncthreads();
  if (threadIdx.x == 0) sq_normalise(sb);
  __syncthreads();
  for (int i = threadIdx.x; i < ZS_SQ_NWORDS; i += blockDim.x)
    if (sb[i]) atomicAdd(&bins[i], sb[i]);
}

extern "C" zs_status zs_cuda_sq_bins(uint64_t *bins, const void *x, zs_dtype dt, size_t n,
                                     void *stream) {
  if (!zs_dt_ok(dt))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_sq_bins: dtype %d: use ZS_F32 or ZS_BF16", (int)dt);
  if (!bins) return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_sq_bins: bins is NULL");
  if (!n) return ZS_OK;
  if (!x) return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_sq_bins: x is NULL with n = %zu", n);
  size_t nblocks = (n + SQ_BLOCK_ELEMS - 1) / SQ_BLOCK_ELEMS;
  if (nblocks > 0x7fffffffu)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_sq_bins: n = %zu is too large for one call", n);
  cudaStream_t s = (cudaStream_t)stream;
  unsigned long long *b = (unsigned long long *)bins;
  if (dt == ZS_F32)
    sq_bins_kernel<float><<<(unsigned)nblocks, SQ_THREADS, 0, s>>>(b, (const float *)x, n);
  else
    sq_bins_kernel<zs_bf16><<<(unsigned)nblocks, SQ_THREADS, 0, s>>>(b, (const zs_bf16 *)x, n);
  return zs_cu_launched("zs_cuda_sq_bins");
}
