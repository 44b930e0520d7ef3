/* Internal helpers shared by the CUDA kernels: dtype load/store, bf16 rounding identical to the
   CPU's (src/base/bf16.h), grid sizing and warp/block reductions. */
#ifndef ZS_DEVICE_CUDA_CUDA_COMMON_CUH
#define ZS_DEVICE_CUDA_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

typedef __nv_bfloat16 zs_bf16;

/* f32 -> bf16, round to nearest even, NaN kept quiet: the same integer steps as zs_f32_to_bf16,
   so both sides produce the same bits for every input. */
__device__ __forceinline__ zs_bf16 zs_f2bf(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
    return __ushort_as_bfloat16((unsigned short)((u >> 16) | 0x40));
  u += 0x7fffu + ((u >> 16) & 1u);
  return __ushort_as_bfloat16((unsigned short)(u >> 16));
}

/* Loads one element as fp32. */
__device__ __forceinline__ float zs_ld(const float *p) {
  return *p;
}
__device__ __forceinline__ float zs_ld(const zs_bf16 *p) {
  return __bfloat162float(*p);
}
/* Stores one fp32 value, rounded to the element type. */
__device__ __forceinline__ void zs_st(float *p, float x) {
  *p = x;
}
__device__ __forceinline__ void zs_st(zs_bf16 *p, float x) {
  *p = zs_f2bf(x);
}

/* Sum / max over the 32 lanes of a warp; every lane gets the result. */
__device__ __forceinline__ float zs_warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1)
    x = __fadd_rn(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float zs_warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

/* Number of blocks of `threads` covering n items, capped (kernels use grid-stride loops). */
static inline unsigned zs_grid(size_t n, unsigned threads) {
  size_t g = (n + threads - 1) / threads;
  const size_t cap = 65535u * 16u;
  if (g < 1) g = 1;
  return (unsigned)(g < cap ? g : cap);
}

/* Runs the statements with T = float or T = zs_bf16 according to dt. */
#define ZS_DT_DISPATCH(dt, T, ...)                                                                 \
  do {                                                                                             \
    if ((dt) == ZS_BF16) {                                                                         \
      typedef zs_bf16 T;                                                                           \
      __VA_ARGS__;                                                                                 \
    } else {                                                                                       \
      typedef float T;                                                                             \
      __VA_ARGS__;                                                                                 \
    }                                                                                              \
  } while (0)

/* True for the two dtypes the kernels know. */
static inline int zs_dt_ok(zs_dtype dt) {
  return dt == ZS_F32 || dt == ZS_BF16;
}

#endif
