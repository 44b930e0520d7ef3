/* Elementwise helpers the sharding engine runs on shards (CPU twins of
   src/device/cuda/engine_cuda.h). Buffers are host memory; dtypes ZS_F32 or ZS_BF16; math in fp32.
 */
#ifndef ZS_DEVICE_CPU_ENGINE_OPS_H
#define ZS_DEVICE_CPU_ENGINE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "device/ops.h" /* ZS_SQ_NBINS, ZS_SQ_NWORDS */
#include "zshard.h"

/* dst = src converted (round to nearest even into bf16). */
void zs_cpu_convert(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, size_t n);
/* dst += src (fp32 math, rounded to dst's dtype). */
void zs_cpu_add_into(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, size_t n);
/* Ordered sum of nchunks chunks src[k*stride + i]: acc = accumulate ? dst[i] : chunk 0, then
   acc = acc + chunk k for the remaining k in order (fp32 adds, each partial sum rounded to dst's
   dtype: the bits of dst = chunk 0 (or dst), then dst += chunk k one by one), dst[i] = acc. */
void zs_cpu_sum_chunks(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, int nchunks,
                       size_t stride, size_t n, int accumulate);
/* x *= s. */
void zs_cpu_scale(void *x, zs_dtype dt, float s, size_t n);
/* Adds the squares of x into bins (normalised). Each x = mant * 2^(e-150) with integer mant <
   2^24, so x^2 = mant^2 * 2^(2e-300) is accumulated exactly as an integer in bin e; NaN/Inf count
   in bins[ZS_SQ_NBINS]. Integer sums are associative, so any split of the data into calls, shards
   and ranks gives the same bins after zs_sq_bins_normalise. */
void zs_cpu_sq_bins(uint64_t *bins, const void *x, zs_dtype dt, size_t n);
/* Carries so every bin < 2^32 (except the top 16), keeping the represented value. */
void zs_sq_bins_normalise(uint64_t *bins);
/* The represented sum of squares as a double (deterministic function of the bins). */
double zs_sq_bins_value(const uint64_t *bins);

#endif
