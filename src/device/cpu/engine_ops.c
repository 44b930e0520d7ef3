/* CPU engine helpers: conversions, accumulation, ordered sums, exact sum of squares. */
#include "device/cpu/engine_ops.h"

#include <math.h>
#include <string.h>

#include "base/bf16.h"

static inline float load_f(const void *p, zs_dtype dt, size_t i) {
  return dt == ZS_BF16 ? zs_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static inline void store_f(void *p, zs_dtype dt, size_t i, float v) {
  if (dt == ZS_BF16)
    ((uint16_t *)p)[i] = zs_f32_to_bf16(v);
  else
    ((float *)p)[i] = v;
}

/* v rounded to dt and back (exact for fp32). */
static inline float round_to(zs_dtype dt, float v) {
  return dt == ZS_BF16 ? zs_bf16_to_f32(zs_f32_to_bf16(v)) : v;
}

void zs_cpu_convert(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, size_t n) {
  if (dst_dt == src_dt) {
    if (dst != src) memmove(dst, src, n * zs_dtype_size(dst_dt));
    return;
  }
  for (size_t i = 0; i < n; i++)
    store_f(dst, dst_dt, i, load_f(src, src_dt, i));
}

void zs_cpu_add_into(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, size_t n) {
  if (dst_dt == ZS_F32 && src_dt == ZS_F32) {
    float *d = dst;
    const float *s = src;
    for (size_t i = 0; i < n; i++)
      d[i] = d[i] + s[i];
    return;
  }
  for (size_t i = 0; i < n; i++)
    store_f(dst, dst_dt, i, load_f(dst, dst_dt, i) + load_f(src, src_dt, i));
}

void zs_cpu_sum_chunks(void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt, int nchunks,
                       size_t stride, size_t n, int accumulate) {
  if (dst_dt == ZS_F32 && src_dt == ZS_F32) {
    /* Blocked so the running sums stay in cache while chunks stream by. */
    float *d = dst;
    const float *s = src;
    for (size_t b = 0; b < n; b += 1024) {
      size_t e = b + 1024 < n ? b + 1024 : n;
      int k0 = accumulate ? 0 : 1;
      if (!accumulate)
        for (size_t i = b; i < e; i++)
          d[i] = s[i];
      for (int k = k0; k < nchunks; k++) {
        const float *c = s + (size_t)k * stride;
        for (size_t i = b; i < e; i++)
          d[i] = d[i] + c[i];
      }
    }
    return;
  }
  /* Every partial sum is rounded to dst's dtype, as dst = chunk 0; dst += chunk 1; ... would be:
     deterministic mode's fold must give one rank's bits, whose += rounds after each add. */
  for (size_t i = 0; i < n; i++) {
    float acc = accumulate ? load_f(dst, dst_dt, i) : round_to(dst_dt, load_f(src, src_dt, i));
    for (int k = accumulate ? 0 : 1; k < nchunks; k++)
      acc = round_to(dst_dt, acc + load_f(src, src_dt, (size_t)k * stride + i));
    store_f(dst, dst_dt, i, acc);
  }
}

void zs_cpu_scale(void *x, zs_dtype dt, float s, size_t n) {
  for (size_t i = 0; i < n; i++)
    store_f(x, dt, i, load_f(x, dt, i) * s);
}

/* Adds one float's square into the (not yet normalised) bins. */
static inline void sq_bin_add(uint64_t *bins, uint32_t u) {
  uint32_t E = (u >> 23) & 0xffu, M = u & 0x7fffffu;
  if (E == 255u) {
    bins[ZS_SQ_NBINS] += 1;
    return;
  }
  uint64_t mant = E ? (M | 0x800000u) : M;
  bins[E ? E : 1] += mant * mant;
}

void zs_sq_bins_normalise(uint64_t *bins) {
  for (int e = 0; e + 16 < ZS_SQ_NBINS; e++) {
    uint64_t carry = bins[e] >> 32;
    bins[e] &= 0xffffffffu;
    bins[e + 16] += carry; /* 2^32 * 2^(2e) == 2^(2(e+16)) */
  }
}

void zs_cpu_sq_bins(uint64_t *bins, const void *x, zs_dtype dt, size_t n) {
  /* mant^2 < 2^48, so a bin absorbs 2^16 elements before it could overflow: normalise per block. */
  uint64_t local[ZS_SQ_NWORDS];
  for (size_t b = 0; b < n; b += 65536) {
    size_t e = b + 65536 < n ? b + 65536 : n;
    memset(local, 0, sizeof local);
    if (dt == ZS_BF16) {
      const uint16_t *h = x;
      for (size_t i = b; i < e; i++)
        sq_bin_add(local, (uint32_t)h[i] << 16);
    } else {
      const uint32_t *f = x;
      for (size_t i = b; i < e; i++)
        sq_bin_add(local, f[i]);
    }
    zs_sq_bins_normalise(local);
    for (int k = 0; k < ZS_SQ_NWORDS; k++)
      bins[k] += local[k];
  }
  zs_sq_bins_normalise(bins);
}

double zs_sq_bins_value(const uint64_t *bins) {
  /* Canonical form first: base-4 digits (bin e weighs 4^e, so 4 units of bin e are one unit of
     bin e+1). Different carry histories of the same integer give the same digits, hence the same
     double below. */
  uint64_t d[ZS_SQ_NBINS];
  memcpy(d, bins, sizeof d);
  for (int e = 0; e + 1 < ZS_SQ_NBINS; e++) {
    d[e + 1] += d[e] >> 2;
    d[e] &= 3u;
  }
  double acc = 0.0;
  for (int e = ZS_SQ_NBINS - 1; e >= 0; e--)
    if (d[e]) acc += ldexp((double)d[e], 2 * e - 300);
  return acc;
}
