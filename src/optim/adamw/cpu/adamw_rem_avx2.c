/* The remainder-master AdamW (adamw_rem.h), AVX2 + FMA path: 8 lanes. The update is adamw.h's,
 * op for op as in adamw_avx2.c (same bit-identity argument: IEEE ops one for one, explicit fused
 * multiply-adds, -ffp-contract=off); the join and split of base/bf16_rem.h are integer lane ops
 * (shift, add, and), exact. The tail (< 8 elements) runs the scalar reference. */
#include "optim/adamw/cpu/adamw_rem.h"

#include <stdint.h>
#include "optim/adamw/cpu/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZS_AVX2 __attribute__((target("avx2,fma")))
#define ZS_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

/* 8 16-bit values widened to 32-bit lanes: zero-extended, or sign-extended when sgn. */
ZS_AVX2_INLINE __m256i zs_rem_load16x8(const uint16_t *p, int sgn) {
  const __m128i h = _mm_loadu_si128((const __m128i *)p);
  return sgn ? _mm256_cvtepi16_epi32(h) : _mm256_cvtepu16_epi32(h);
}

/* 8 lanes each <= 0xffff to 8 uint16 (the unsigned saturating pack is exact on them; it packs
   within 128-bit halves, qwords 0 and 2 hold the 8 values in order). */
ZS_AVX2_INLINE void zs_rem_store16x8(uint16_t *p, __m256i x) {
  const __m256i packed = _mm256_packus_epi32(x, x);
  _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
}

/* 8 bf16 as floats (bf16 is the high half of a float). */
ZS_AVX2_INLINE __m256 zs_rem_bf16x8(const uint16_t *p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(zs_rem_load16x8(p, 0), 16));
}

/* zs_f32_to_bf16 (nearest even, NaN stays quiet NaN) on 8 lanes, results in the low halves; the
   same integer steps as adamw_avx2.c's moment rounding. */
ZS_AVX2_INLINE __m256i zs_rem_rne8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7f800000));
  const __m256i bias =
      _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}

/* The multiple-of-8 prefix (mbf16 constant at each call); returns its length. */
ZS_AVX2_INLINE size_t zs_adamw_rem_avx2_body(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem,
                                             void *m, void *v, int mbf16, const uint16_t *grad,
                                             size_t n) {
  const __m256 gscale = _mm256_set1_ps(c->gscale), beta1 = _mm256_set1_ps(c->beta1),
               omb1 = _mm256_set1_ps(c->omb1), beta2 = _mm256_set1_ps(c->beta2),
               omb2 = _mm256_set1_ps(c->omb2), bc1 = _mm256_set1_ps(c->bc1),
               bc2 = _mm256_set1_ps(c->bc2), eps = _mm256_set1_ps(c->eps),
               wd = _mm256_set1_ps(c->wd), neg_lr = _mm256_set1_ps(c->neg_lr);
  const __m256i half = _mm256_set1_epi32(0x8000), low = _mm256_set1_epi32(0xffff);
  size_t i = 0;
  const size_t msz = mbf16 ? 2 : 4;
  for (; i + 8 <= n; i += 8) {
    if (i % 16 == 0) { /* every 16 elements: a line of each bf16 array, two of fp32 moments */
      zs_prefetch_ahead(param, i, 2);
      zs_prefetch_ahead(rem, i, 2);
      zs_prefetch_ahead(m, i, msz);
      zs_prefetch_ahead(m, i + 8, msz);
      zs_prefetch_ahead(v, i, msz);
      zs_prefetch_ahead(v, i + 8, msz);
      zs_prefetch_ahead(grad, i, 2);
    }
    /* Join: (param << 16) + (int16)rem. */
    __m256 p = _mm256_castsi256_ps(_mm256_add_epi32(
        _mm256_slli_epi32(zs_rem_load16x8(param + i, 0), 16), zs_rem_load16x8(rem + i, 1)));
    const __m256 g = _mm256_mul_ps(zs_rem_bf16x8(grad + i), gscale);
    const __m256 m0 =
        mbf16 ? zs_rem_bf16x8((const uint16_t *)m + i) : _mm256_loadu_ps((float *)m + i);
    const __m256 v0 =
        mbf16 ? zs_rem_bf16x8((const uint16_t *)v + i) : _mm256_loadu_ps((float *)v + i);
    const __m256 mn = _mm256_fmadd_ps(beta1, m0, _mm256_mul_ps(omb1, g));
    const __m256 vn = _mm256_fmadd_ps(beta2, v0, _mm256_mul_ps(_mm256_mul_ps(omb2, g), g));
    const __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vn, bc2)), eps);
    const __m256 upd = _mm256_div_ps(_mm256_mul_ps(mn, bc1), den);
    p = _mm256_fmadd_ps(neg_lr, _mm256_fmadd_ps(wd, p, upd), p);
    /* Split: param = (b + 0x8000) >> 16, rem = b & 0xffff. */
    const __m256i b = _mm256_castps_si256(p);
    zs_rem_store16x8(param + i, _mm256_srli_epi32(_mm256_add_epi32(b, half), 16));
    zs_rem_store16x8(rem + i, _mm256_and_si256(b, low));
    if (mbf16) {
      zs_rem_store16x8((uint16_t *)m + i, zs_rem_rne8(mn));
      zs_rem_store16x8((uint16_t *)v + i, zs_rem_rne8(vn));
    } else {
      _mm256_storeu_ps((float *)m + i, mn);
      _mm256_storeu_ps((float *)v + i, vn);
    }
  }
  return i;
}

ZS_AVX2 void zs_cpu_adamw_rem_avx2(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m,
                                   void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n) {
  const int mbf16 = moment_dt == ZS_BF16;
  const size_t done = mbf16 ? zs_adamw_rem_avx2_body(c, param, rem, m, v, 1, grad, n)
                            : zs_adamw_rem_avx2_body(c, param, rem, m, v, 0, grad, n);
  if (done == n) return;
  const size_t ms = zs_dtype_size(moment_dt);
  zs_cpu_adamw_rem_scalar(c, param + done, rem + done, (char *)m + done * ms, (char *)v + done * ms,
                          moment_dt, grad + done, n - done);
}

#else /* not x86: never selected by the dispatcher, kept so the symbol exists everywhere */

/* Non-x86 build: the scalar reference. */
void zs_cpu_adamw_rem_avx2(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m, void *v,
                           zs_dtype moment_dt, const uint16_t *grad, size_t n) {
  zs_cpu_adamw_rem_scalar(c, param, rem, m, v, moment_dt, grad, n);
}

#endif
