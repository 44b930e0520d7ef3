/* Elementwise and reduction kernels the sharding engine runs on a CUDA device.
 *
 * Plain C-callable. Pointers are device pointers (bins too); `stream` is a
 * cudaStream_t (NULL = legacy default stream); work is only queued, never waited for. Every call
 * returns ZS_OK, ZS_ERR_INVALID_ARG (bad dtype / NULL with n > 0) or ZS_ERR_DEVICE (launch
 * failure, named in zs_last_error()). n == 0 is a no-op. bf16 is stored as __nv_bfloat16 /
 * uint16_t; f32 -> bf16 rounds to nearest even (NaN stays NaN), exactly like
 * src/base/bf16.h.
 */
#ifndef ZS_DEVICE_CUDA_ENGINE_CUDA_H
#define ZS_DEVICE_CUDA_ENGINE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "device/ops.h" /* ZS_SQ_NBINS */
#include "zshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = src[i] converted from src_dt to dst_dt (a plain copy when they are equal). */
zs_status zs_cuda_convert(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, size_t n,
                          void *stream);
/* dst[i] += src[i]: fp32 math, one rounding to dst_dt. */
zs_status zs_cuda_add_into(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, size_t n,
                           void *stream);
/* Deterministic rank-order reduction of nchunks chunks src[k*chunk_stride + i] (k = 0..nchunks-1):
   acc = accumulate ? dst[i] : chunk 0, then acc = acc + chunk k for the remaining chunks in order
   (plain fp32 adds, no fma, every partial sum rounded to dst_dt: the bits of dst += chunk k one
   by one), dst[i] = acc. chunk_stride is in elements. */
zs_status zs_cuda_sum_chunks(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                             int nchunks, size_t chunk_stride, size_t n, int accumulate,
                             void *stream);
/* x[i] = x[i] * s in fp32, rounded back to dt. */
zs_status zs_cuda_scale(void *x, zs_dtype dt, float s, size_t n, void *stream);
/* Adds the exact sum of squares of x[0..n) into bins[0..ZS_SQ_NBINS] (device memory, zeroed by the
   caller before the first call). Per element with fp32 bits u: E = (u >> 23) & 0xff,
   M = u & 0x7fffff; E == 255 -> bins[ZS_SQ_NBINS] += 1; else mant = E ? M | 0x800000 : M,
   e = E ? E : 1, bins[e] += mant * mant (value mant^2 * 2^(2e - 300)). Each block's partial bins
   are normalised (for e = 0 .. ZS_SQ_NBINS - 17: b[e + 16] += b[e] >> 32, b[e] &= 0xffffffff)
   before the atomic add, so bins never overflow for any realistic n; the caller normalises once
   more on the host (zs_sq_bins_normalise) after the last call. Integer sums: any split into calls
   and blocks gives the same integers as zs_cpu_sq_bins after that normalisation. Only atomic adds
   touch `bins`, so calls on several streams may share one bins array. */
zs_status zs_cuda_sq_bins(uint64_t *bins, const void *x, zs_dtype dt, size_t n, void *stream);
#ifdef __cplusplus
}
#endif
#endif
