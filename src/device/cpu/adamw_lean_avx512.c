/* Lean-mode AdamW, AVX-512F path: 16 lanes (adamw_lean.h).
 *
 * The same bit-identity argument as adamw_lean_avx2.c (IEEE float operations one for one, lean.h's
 * integer operations on 32-bit lanes). Only AVX-512F instructions are used. A vector whose 16
 * offsets cross a multiple of 2^32 and the tail (< 16 elements) run the scalar loop. */
#include "device/cpu/adamw_lean.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZS_AVX512 __attribute__((target("avx512f")))
#define ZS_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) static inline

typedef struct {
  __m512 gscale, beta1, omb1, beta2, omb2, bc1, bc2, eps, wd, neg_lr;
  uint32_t k0, k1;
} zs_lean16;

/* 16 bf16 values widened to fp32 (exact). */
ZS_AVX512_INLINE __m512 zs_lean_ld16(const uint16_t *p) {
  __m256i h = _mm256_loadu_si256((const __m256i *)p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* 16 lanes of bf16 bits (each <= 0xffff) stored as 16 uint16_t (the truncating narrow is exact). */
ZS_AVX512_INLINE void zs_lean_st16(uint16_t *p, __m512i r) {
  _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(r));
}

/* zs_f32_to_bf16 (nearest even, NaN kept quiet) on 16 lanes, for bf16 moments. */
ZS_AVX512_INLINE __m512i zs_lean_rne16(__m512 x) {
  __m512i u = _mm512_castps_si512(x);
  __m512i hi = _mm512_srli_epi32(u, 16);
  __m512i mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  __mmask16 nan = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x7f800000));
  __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
}

/* zs_lean_fmix32 on 16 lanes. */
ZS_AVX512_INLINE __m512i zs_lean_fmix16(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0x85ebca6bu));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 13));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0xc2b2ae35u));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}

/* zs_lean_bits of unit elements j .. j + 15, whose high words are equal. */
ZS_AVX512_INLINE __m512i zs_lean_bits16(const zs_lean16 *k, uint64_t j) {
  __m512i lo =
      _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)j),
                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  __m512i x = zs_lean_fmix16(_mm512_xor_si512(lo, _mm512_set1_epi32((int)k->k0)));
  x = _mm512_add_epi32(x, _mm512_set1_epi32((int)((uint32_t)(j >> 32) ^ k->k1)));
  return _mm512_srli_epi32(zs_lean_fmix16(x), 16);
}

/* zs_lean_round on 16 lanes (see zs_lean_round8 in adamw_lean_avx2.c). */
ZS_AVX512_INLINE __m512i zs_lean_round16(__m512 x, __m512i r) {
  __m512i u = _mm512_castps_si512(x);
  __m512i mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  __m512i s = _mm512_min_epi32(_mm512_add_epi32(mag, r), _mm512_set1_epi32(0x7f7fffff));
  __m512i fin = _mm512_srli_epi32(
      _mm512_or_si512(_mm512_and_si512(u, _mm512_set1_epi32((int)0x80000000u)), s), 16);
  __mmask16 nonfin = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x7f7fffff));
  __mmask16 nan = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x7f800000));
  __m512i nfv = _mm512_mask_or_epi32(_mm512_srli_epi32(u, 16), nan, _mm512_srli_epi32(u, 16),
                                     _mm512_set1_epi32(0x40));
  return _mm512_mask_mov_epi32(fin, nonfin, nfv);
}

/* Elements i .. i + 15 (unit elements j .. j + 15): adamw.h's order, then the rounding. */
ZS_AVX512_INLINE void zs_lean_step16(const zs_lean16 *k, uint16_t *p, void *m, void *v,
                                     const uint16_t *grad, int mbf16, size_t i, uint64_t j) {
  __m512 g = _mm512_mul_ps(zs_lean_ld16(grad + i), k->gscale);
  __m512 pf = zs_lean_ld16(p + i);
  __m512 mo = mbf16 ? zs_lean_ld16((uint16_t *)m + i) : _mm512_loadu_ps((float *)m + i);
  __m512 vo = mbf16 ? zs_lean_ld16((uint16_t *)v + i) : _mm512_loadu_ps((float *)v + i);
  __m512 mn = _mm512_fmadd_ps(k->beta1, mo, _mm512_mul_ps(k->omb1, g));
  __m512 vn = _mm512_fmadd_ps(k->beta2, vo, _mm512_mul_ps(_mm512_mul_ps(k->omb2, g), g));
  __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vn, k->bc2)), k->eps);
  __m512 upd = _mm512_div_ps(_mm512_mul_ps(mn, k->bc1), den);
  pf = _mm512_fmadd_ps(k->neg_lr, _mm512_fmadd_ps(k->wd, pf, upd), pf);
  zs_lean_st16(p + i, zs_lean_round16(pf, zs_lean_bits16(k, j)));
  if (mbf16) {
    zs_lean_st16((uint16_t *)m + i, zs_lean_rne16(mn));
    zs_lean_st16((uint16_t *)v + i, zs_lean_rne16(vn));
  } else {
    _mm512_storeu_ps((float *)m + i, mn);
    _mm512_storeu_ps((float *)v + i, vn);
  }
}

/* The loop for one moment dtype (mbf16 constant at each call). */
ZS_AVX512_INLINE void zs_lean_body16(const zs_adamw_coef *c, const zs_lean_key *key, uint16_t *p,
                                     void *m, void *v, const uint16_t *grad, int mbf16, size_t n) {
  const zs_lean16 k = {_mm512_set1_ps(c->gscale),
                       _mm512_set1_ps(c->beta1),
                       _mm512_set1_ps(c->omb1),
                       _mm512_set1_ps(c->beta2),
                       _mm512_set1_ps(c->omb2),
                       _mm512_set1_ps(c->bc1),
                       _mm512_set1_ps(c->bc2),
                       _mm512_set1_ps(c->eps),
                       _mm512_set1_ps(c->wd),
                       _mm512_set1_ps(c->neg_lr),
                       key->k0,
                       key->k1};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint64_t j = key->elem0 + i;
    if ((uint32_t)j > 0xfffffff0u) /* j + 15 carries into the high word */
      zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, i, 16);
    else
      zs_lean_step16(&k, p, m, v, grad, mbf16, i, j);
  }
  if (i < n) zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, i, n - i);
}

ZS_AVX512 void zs_cpu_adamw_lean_avx512(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p,
                                        void *m, void *v, int mbf16, const uint16_t *grad,
                                        size_t n) {
  if (mbf16)
    zs_lean_body16(c, k, p, m, v, grad, 1, n);
  else
    zs_lean_body16(c, k, p, m, v, grad, 0, n);
}

#else /* not x86: never selected by the dispatcher, kept so the symbol exists everywhere */

/* Non-x86 build: the scalar reference. */
void zs_cpu_adamw_lean_avx512(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                              void *v, int mbf16, const uint16_t *grad, size_t n) {
  zs_cpu_adamw_lean_scalar(c, k, p, m, v, mbf16, grad, n);
}

#endif
