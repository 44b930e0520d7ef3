/* Elementwise engine kernels: dtype conversion, accumulation, ordered chunk sums, scaling.
   All math is fp32 with one rounding to the destination dtype per element, as on the CPU. */
#include "device/cuda/cuda_check.cuh"
#include "device/cuda/cuda_common.cuh"
#include "device/cuda/engine_cuda.h"

#define EW_THREADS 256

/* dst = src, converted element by element. */
template <typename TD, typename TS>
__global__ void convert_kernel(TD *dst, const TS *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    zs_st(&dst[i], zs_ld(&src[i]));
}

/* dst += src. */
template <typename TD, typename TS>
__global__ void add_into_kernel(TD *dst, const TS *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    zs_st(&dst[i], __fadd_rn(zs_ld(&dst[i]), zs_ld(&src[i])));
}

/* x rounded to T and back (exact for float). */
template <typename T> __device__ __forceinline__ float round_as(float x) {
  T t;
  zs_st(&t, x);
  return zs_ld(&t);
}

/* dst = (accumulate ? dst : chunk 0) + chunk k0 + ... + chunk nchunks-1, left to right, every
   partial sum rounded to TD (the bits of dst += chunk k one by one), as on the CPU. */
template <typename TD, typename TS>
__global__ void sum_chunks_kernel(TD *dst, const TS *src, int nchunks, size_t stride, size_t n,
                                  int accumulate) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float acc = accumulate ? zs_ld(&dst[i]) : round_as<TD>(zs_ld(&src[i]));
    for (int k = accumulate ? 0 : 1; k < nchunks; k++)
      acc = round_as<TD>(__fadd_rn(acc, zs_ld(&src[(size_t)k * stride + i])));
    zs_st(&dst[i], acc);
  }
}

/* x *= s. */
template <typename T> __global__ void scale_kernel(T *x, float s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    zs_st(&x[i], __fmul_rn(zs_ld(&x[i]), s));
}

/* Launches K<TD, TS> over the four dtype pairs; `args` follow (dst, src). */
#define ZS_LAUNCH_PAIR(K, dst_dt, src_dt, dst, src, n, stream, ...)                                \
  do {                                                                                             \
    dim3 g_(zs_grid((n), EW_THREADS)), b_(EW_THREADS);                                             \
    cudaStream_t s_ = (cudaStream_t)(stream);                                                      \
    if ((dst_dt) == ZS_F32 && (src_dt) == ZS_F32)                                                  \
      K<float, float><<<g_, b_, 0, s_>>>((float *)(dst), (const float *)(src), __VA_ARGS__);       \
    else if ((dst_dt) == ZS_F32)                                                                   \
      K<float, zs_bf16><<<g_, b_, 0, s_>>>((float *)(dst), (const zs_bf16 *)(src), __VA_ARGS__);   \
    else if ((src_dt) == ZS_F32)                                                                   \
      K<zs_bf16, float><<<g_, b_, 0, s_>>>((zs_bf16 *)(dst), (const float *)(src), __VA_ARGS__);   \
    else                                                                                           \
      K<zs_bf16, zs_bf16>                                                                          \
          <<<g_, b_, 0, s_>>>((zs_bf16 *)(dst), (const zs_bf16 *)(src), __VA_ARGS__);              \
  } while (0)

/* Common argument checks of the two-buffer kernels. */
static zs_status check_pair(const char *fn, const void *dst, zs_dtype dst_dt, const void *src,
                            zs_dtype src_dt, size_t n) {
  if (!zs_dt_ok(dst_dt) || !zs_dt_ok(src_dt))
    return zs_err(ZS_ERR_INVALID_ARG, "%s: dtypes %d/%d: use ZS_F32 or ZS_BF16", fn, (int)dst_dt,
                  (int)src_dt);
  if (n && (!dst || !src)) return zs_err(ZS_ERR_INVALID_ARG, "%s: NULL buffer with n = %zu", fn, n);
  return ZS_OK;
}

extern "C" zs_status zs_cuda_convert(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                                     size_t n, void *stream) {
  ZS_CHECK(check_pair("zs_cuda_convert", dst, dst_dt, src, src_dt, n));
  if (!n) return ZS_OK;
  if (dst_dt == src_dt) {
    if (dst == src) return ZS_OK;
    size_t bytes = n * zs_dtype_size(dst_dt);
    return zs_cu_check(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream),
        "zs_cuda_convert: cudaMemcpyAsync");
  }
  ZS_LAUNCH_PAIR(convert_kernel, dst_dt, src_dt, dst, src, n, stream, n);
  return zs_cu_launched("zs_cuda_convert");
}

extern "C" zs_status zs_cuda_add_into(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                                      size_t n, void *stream) {
  ZS_CHECK(check_pair("zs_cuda_add_into", dst, dst_dt, src, src_dt, n));
  if (!n) return ZS_OK;
  ZS_LAUNCH_PAIR(add_into_kernel, dst_dt, src_dt, dst, src, n, stream, n);
  return zs_cu_launched("zs_cuda_add_into");
}

extern "C" zs_status zs_cuda_sum_chunks(void *dst, zs_dtype dst_dt, const void *src,
                                        zs_dtype src_dt, int nchunks, size_t chunk_stride, size_t n,
                                        int accumulate, void *stream) {
  ZS_CHECK(check_pair("zs_cuda_sum_chunks", dst, dst_dt, src, src_dt, n));
  if (nchunks < 0 || (!accumulate && nchunks < 1))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_cuda_sum_chunks: nchunks = %d: need >= 1 (>= 0 when accumulating)", nchunks);
  if (nchunks > 1 && chunk_stride < n)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_cuda_sum_chunks: chunk_stride %zu < n %zu: chunks would overlap",
                  chunk_stride, n);
  if (!n) return ZS_OK;
  ZS_LAUNCH_PAIR(sum_chunks_kernel, dst_dt, src_dt, dst, src, n, stream, nchunks, chunk_stride, n,
                 accumulate ? 1 : 0);
  return zs_cu_launched("zs_cuda_sum_chunks");
}

extern "C" zs_status zs_cuda_scale(void *x, zs_dtype dt, float s, size_t n, void *stream) {
  if (!zs_dt_ok(dt))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_scale: dtype %d: use ZS_F32 or ZS_BF16", (int)dt);
  if (!n) return ZS_OK;
  if (!x) return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_scale: x is NULL with n = %zu", n);
  dim3 g(zs_grid(n, EW_THREADS)), b(EW_THREADS);
  if (dt == ZS_F32)
    scale_kernel<float><<<g, b, 0, (cudaStream_t)stream>>>((float *)x, s, n);
  else
    scale_kernel<zs_bf16><<<g, b, 0, (cudaStream_t)stream>>>((zs_bf16 *)x, s, n);
  return zs_cu_launched("zs_cuda_scale");
}
