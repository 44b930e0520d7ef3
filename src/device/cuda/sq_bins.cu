/* Exact, partition-invariant sum of squares (for the global gradient norm): integer bins per
   exponent, see engine_cuda.h. Each block squares at most SQ_BLOCK_ELEMS elements into shared
   bins (mant^2 < 2^48, so 2^16 of them cannot overflow a uint64), normalises them and adds them
   atomically into the caller's bins. Integer addition is associative, so the split into calls and
   blocks and the order of the atomics cannot change the result. */
#include "device/cuda/cuda_check.cuh"
#include "device/cuda/cuda_common.cuh"
#include "device/cuda/engine_cuda.h"

#define SQ_THREADS 256
#define SQ_BLOCK_ELEMS 65536 /* elements per block pass: keeps each bin below 2^64 */

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

/* Block `blockIdx.x` squares elements [blockIdx.x * SQ_BLOCK_ELEMS, +SQ_BLOCK_ELEMS) of x. */
template <typename T>
__global__ void __launch_bounds__(SQ_THREADS)
    sq_bins_kernel(unsigned long long *bins, const T *x, size_t n) {
  __shared__ unsigned long long sb[ZS_SQ_NWORDS];
  for (int i = threadIdx.x; i < ZS_SQ_NWORDS; i += blockDim.x)
    sb[i] = 0;
  __syncthreads();
  size_t begin = (size_t)blockIdx.x * SQ_BLOCK_ELEMS;
  size_t end = begin + SQ_BLOCK_ELEMS < n ? begin + SQ_BLOCK_ELEMS : n;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    uint32_t u = sq_bits(x, i);
    uint32_t E = (u >> 23) & 0xffu, M = u & 0x7fffffu;
    if (E == 255u) {
      atomicAdd(&sb[ZS_SQ_NBINS], 1ull);
    } else {
      unsigned long long mant = E ? (M | 0x800000u) : M;
      if (mant) atomicAdd(&sb[E ? E : 1], mant * mant);
    }
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
