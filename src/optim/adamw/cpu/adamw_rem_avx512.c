/* The remainder-master AdamW (adamw_rem.h), AVX-512 path (F, BW, DQ). The update is adamw.h's,
 * op for op as in adamw_avx512.c (IEEE ops one for one, explicit fused multiply-adds,
 * -ffp-contract=off); the join and split of base/bf16_rem.h are integer lane ops, exact.
 *
 * With bf16 moments every array is 16-bit, and full blocks of 32 elements take
 * adamw_lean_avx512.c's lane order: unpack the words of two arrays into 32-bit lanes (elements 0-3,
 * 8-11, 16-19, 24-27 and 4-7, 12-15, 20-23, 28-31), compute, and pack back with one saturating pack
 * per array. The join is then one unpack of (rem, param) (param << 16 | rem) less 2^16 where rem's
 * sign bit is set (the sign extension), and round-to-nearest-even of the moments skips its NaN
 * test: a block whose new p is NaN anywhere (which a NaN m or v always makes it) goes through the
 * 16-lane step below, from its inputs, still intact. That detour is defensive: m and v built from
 * bf16 inputs only carry NaNs whose low half is zero, which the short cut would round right. The
 * 16-lane step does the rest (fp32 moments, the tail): 16-bit arrays are read through a zero-padded
 * staging buffer at the tail and written with masked down-converting stores; masked-off lanes
 * compute on zeros and are never stored. */
#include "optim/adamw/cpu/adamw_rem.h"

#include <stdint.h>
#include <string.h>

#include "optim/adamw/cpu/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZS_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq")))
#define ZS_AVX512_INLINE                                                                           \
  __attribute__((target("avx512f,avx512bw,avx512dq"), always_inline)) static inline

/* Up to 16 16-bit values (lanes past `lanes` read as 0) widened to 32-bit lanes: zero-extended,
   or sign-extended when sgn. */
ZS_AVX512_INLINE __m512i zs_rem_load16x16(const uint16_t *p, size_t lanes, int sgn) {
  uint16_t tmp[16];
  if (lanes < 16) {
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, p, lanes * sizeof(uint16_t));
    p = tmp;
  }
  const __m256i h = _mm256_loadu_si256((const __m256i *)p);
  return sgn ? _mm512_cvtepi16_epi32(h) : _mm512_cvtepu16_epi32(h);
}

/* Up to 16 bf16 as floats. */
ZS_AVX512_INLINE __m512 zs_rem_bf16x16(const uint16_t *p, size_t lanes) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(zs_rem_load16x16(p, lanes, 0), 16));
}

/* zs_f32_to_bf16 (nearest even, NaN stays quiet NaN) on 16 lanes, results in the low halves; the
   same integer steps as adamw_avx512.c's moment rounding. */
ZS_AVX512_INLINE __m512i zs_rem_rne16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i hi = _mm512_srli_epi32(u, 16);
  const __m512i absu = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(absu, _mm512_set1_epi32(0x7f800000));
  const __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
}

/* One vector of up to 16 elements at i (lanes in mask); mbf16 constant at each call. */
ZS_AVX512_INLINE void zs_adamw_rem_avx512_step(const zs_adamw_coef *c, uint16_t *param,
                                               uint16_t *rem, void *m, void *v, int mbf16,
                                               const uint16_t *grad, size_t i, __mmask16 mask,
                                               size_t lanes) {
  __m512 p = _mm512_castsi512_ps(
      _mm512_add_epi32(_mm512_slli_epi32(zs_rem_load16x16(param + i, lanes, 0), 16),
                       zs_rem_load16x16(rem + i, lanes, 1)));
  const __m512 g = _mm512_mul_ps(zs_rem_bf16x16(grad + i, lanes), _mm512_set1_ps(c->gscale));
  const __m512 m0 = mbf16 ? zs_rem_bf16x16((const uint16_t *)m + i, lanes)
                          : _mm512_maskz_loadu_ps(mask, (const float *)m + i);
  const __m512 v0 = mbf16 ? zs_rem_bf16x16((const uint16_t *)v + i, lanes)
                          : _mm512_maskz_loadu_ps(mask, (const float *)v + i);
  const __m512 mn =
      _mm512_fmadd_ps(_mm512_set1_ps(c->beta1), m0, _mm512_mul_ps(_mm512_set1_ps(c->omb1), g));
  const __m512 vn = _mm512_fmadd_ps(_mm512_set1_ps(c->beta2), v0,
                                    _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(c->omb2), g), g));
  const __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vn, _mm512_set1_ps(c->bc2))),
                                   _mm512_set1_ps(c->eps));
  const __m512 upd = _mm512_div_ps(_mm512_mul_ps(mn, _mm512_set1_ps(c->bc1)), den);
  p = _mm512_fmadd_ps(_mm512_set1_ps(c->neg_lr), _mm512_fmadd_ps(_mm512_set1_ps(c->wd), p, upd), p);
  const __m512i b = _mm512_castps_si512(p);
  _mm512_mask_cvtepi32_storeu_epi16(
      param + i, mask, _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x8000)), 16));
  _mm512_mask_cvtepi32_storeu_epi16(rem + i, mask, _mm512_and_si512(b, _mm512_set1_epi32(0xffff)));
  if (mbf16) {
    _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)m + i, mask, zs_rem_rne16(mn));
    _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)v + i, mask, zs_rem_rne16(vn));
  } else {
    _mm512_mask_storeu_ps((float *)m + i, mask, mn);
    _mm512_mask_storeu_ps((float *)v + i, mask, vn);
  }
}

/* adamw.h's update of 16 lanes: returns the new p, sets the new m and v. */
ZS_AVX512_INLINE __m512 zs_rem_adam16(const zs_adamw_coef *c, __m512 g, __m512 p, __m512 m,
                                      __m512 v, __m512 *mn, __m512 *vn) {
  g = _mm512_mul_ps(g, _mm512_set1_ps(c->gscale));
  *mn = _mm512_fmadd_ps(_mm512_set1_ps(c->beta1), m, _mm512_mul_ps(_mm512_set1_ps(c->omb1), g));
  *vn = _mm512_fmadd_ps(_mm512_set1_ps(c->beta2), v,
                        _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(c->omb2), g), g));
  const __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(*vn, _mm512_set1_ps(c->bc2))),
                                   _mm512_set1_ps(c->eps));
  const __m512 upd = _mm512_div_ps(_mm512_mul_ps(*mn, _mm512_set1_ps(c->bc1)), den);
  return _mm512_fmadd_ps(_mm512_set1_ps(c->neg_lr), _mm512_fmadd_ps(_mm512_set1_ps(c->wd), p, upd),
                         p);
}

/* The fp32 value of (param << 16 | rem) lanes: less 2^17 where rem is negative (bf16_rem.h). */
ZS_AVX512_INLINE __m512 zs_rem_join32(__m512i x) {
  const __m512i neg = _mm512_and_si512(x, _mm512_set1_epi32(0x8000));
  return _mm512_castsi512_ps(_mm512_sub_epi32(x, _mm512_add_epi32(neg, neg)));
}

/* zs_f32_to_bf16 of lanes that are not NaN, in the low halves. */
ZS_AVX512_INLINE __m512i zs_rem_rne16_finite(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, odd), _mm512_set1_epi32(0x7fff)),
                           16);
}

/* Elements i .. i + 31 with bf16 moments in the unpacked lane order; 0 (nothing stored) when a
   new p is NaN. */
ZS_AVX512_INLINE int zs_rem_step32_m16(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem,
                                       uint16_t *m, uint16_t *v, const uint16_t *grad, size_t i) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i P = _mm512_loadu_si512(param + i), R = _mm512_loadu_si512(rem + i);
  const __m512i G = _mm512_loadu_si512(grad + i), M = _mm512_loadu_si512(m + i);
  const __m512i V = _mm512_loadu_si512(v + i);
  __m512 ma, va, mb, vb;
  const __m512 pa = zs_rem_adam16(c, _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, G)),
                                  zs_rem_join32(_mm512_unpacklo_epi16(R, P)),
                                  _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, M)),
                                  _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, V)), &ma, &va);
  const __m512 pb = zs_rem_adam16(c, _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, G)),
                                  zs_rem_join32(_mm512_unpackhi_epi16(R, P)),
                                  _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, M)),
                                  _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, V)), &mb, &vb);
  if (_mm512_fpclass_ps_mask(pa, 0x81) | _mm512_fpclass_ps_mask(pb, 0x81)) return 0;
  const __m512i ba = _mm512_castps_si512(pa), bb = _mm512_castps_si512(pb);
  const __m512i half = _mm512_set1_epi32(0x8000), low = _mm512_set1_epi32(0xffff);
  _mm512_storeu_si512(param + i,
                      _mm512_packus_epi32(_mm512_srli_epi32(_mm512_add_epi32(ba, half), 16),
                                          _mm512_srli_epi32(_mm512_add_epi32(bb, half), 16)));
  _mm512_storeu_si512(rem + i,
                      _mm512_packus_epi32(_mm512_and_si512(ba, low), _mm512_and_si512(bb, low)));
  _mm512_storeu_si512(m + i, _mm512_packus_epi32(zs_rem_rne16_finite(ma), zs_rem_rne16_finite(mb)));
  _mm512_storeu_si512(v + i, _mm512_packus_epi32(zs_rem_rne16_finite(va), zs_rem_rne16_finite(vb)));
  return 1;
}

/* Full vectors, then one masked vector for the tail. */
ZS_AVX512_INLINE void zs_adamw_rem_avx512_body(const zs_adamw_coef *c, uint16_t *param,
                                               uint16_t *rem, void *m, void *v, int mbf16,
                                               const uint16_t *grad, size_t n) {
  size_t i = 0;
  const size_t msz = mbf16 ? 2 : 4;
  if (mbf16)
    for (; i + 32 <= n; i += 32) {
      zs_prefetch_ahead(param, i, 2);
      zs_prefetch_ahead(rem, i, 2);
      zs_prefetch_ahead(m, i, 2);
      zs_prefetch_ahead(v, i, 2);
      zs_prefetch_ahead(grad, i, 2);
      if (!zs_rem_step32_m16(c, param, rem, (uint16_t *)m, (uint16_t *)v, grad, i)) {
        zs_adamw_rem_avx512_step(c, param, rem, m, v, 1, grad, i, (__mmask16)0xffff, 16);
        zs_adamw_rem_avx512_step(c, param, rem, m, v, 1, grad, i + 16, (__mmask16)0xffff, 16);
      }
    }
  for (; i + 16 <= n; i += 16) {
    zs_prefetch_ahead(param, i, 2);
    zs_prefetch_ahead(rem, i, 2);
    zs_prefetch_ahead(m, i, msz);
    zs_prefetch_ahead(v, i, msz);
    zs_prefetch_ahead(grad, i, 2);
    zs_adamw_rem_avx512_step(c, param, rem, m, v, mbf16, grad, i, (__mmask16)0xffff, 16);
  }
  if (i < n)
    zs_adamw_rem_avx512_step(c, param, rem, m, v, mbf16, grad, i, (__mmask16)((1u << (n - i)) - 1u),
                             n - i);
}

ZS_AVX512 void zs_cpu_adamw_rem_avx512(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem,
                                       void *m, void *v, zs_dtype moment_dt, const uint16_t *grad,
                                       size_t n) {
  if (moment_dt == ZS_BF16)
    zs_adamw_rem_avx512_body(c, param, rem, m, v, 1, grad, n);
  else
    zs_adamw_rem_avx512_body(c, param, rem, m, v, 0, grad, n);
}

#else /* not x86: never selected by the dispatcher, kept so the symbol exists everywhere */

/* Non-x86 build: the scalar reference. */
void zs_cpu_adamw_rem_avx512(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m,
                             void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n) {
  zs_cpu_adamw_rem_scalar(c, param, rem, m, v, moment_dt, grad, n);
}

#endif
