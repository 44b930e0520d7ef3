/* Lean-mode AdamW, AVX2 + FMA path: 16 elements (8 pairs) per iteration, in 8-lane halves
 * (adamw_lean.h).
 *
 * The same bits as the scalar loop: the float operations are adamw_avx2.c's, one IEEE operation
 * for one (-ffp-contract=off), and the integer ones are lean.h's on 32-bit lanes (the hash's
 * multiplies wrap as uint32_t ones do: _mm256_mullo_epi32 keeps the low 32 bits; the rounding's
 * min is signed, exact because a finite magnitude plus 16 bits stays below 2^31). One register of
 * 8 pair hashes holds the 16 elements' random halves in memory order; each half is widened in
 * order. An odd first element (pairs start at even offsets), an iteration whose 8 pair indices
 * cross a multiple of 2^32 (the pair key changes there) and the tail (< 16 elements) run the
 * scalar loop. Compiled for AVX2 through a target attribute; called only when cpuid says so
 * (adamw_lean.c). */
#include "optim/adamw/cpu/adamw_lean.h"

#include <stdint.h>

#include "optim/adamw/cpu/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZS_AVX2 __attribute__((target("avx2,fma")))
#define ZS_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

typedef struct {
  __m256 gscale, beta1, omb1, beta2, omb2, bc1, bc2, eps, wd, neg_lr;
} zs_lean8;

/* 8 bf16 values widened to fp32 (exact: bf16 is the high half of a float). */
ZS_AVX2_INLINE __m256 zs_lean_ld8(const uint16_t *p) {
  __m128i h = _mm_loadu_si128((const __m128i *)p);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* 8 lanes of bf16 bits (each <= 0xffff) stored as 8 uint16_t: the unsigned saturating pack works
   within 128-bit halves; qwords 0 and 2 then hold the lanes in order. */
ZS_AVX2_INLINE void zs_lean_st8(uint16_t *p, __m256i r) {
  __m256i packed = _mm256_packus_epi32(r, r);
  _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
}

/* zs_f32_to_bf16 (nearest even, NaN kept quiet) on 8 lanes, for bf16 moments. */
ZS_AVX2_INLINE __m256i zs_lean_rne8(__m256 x) {
  __m256i u = _mm256_castps_si256(x);
  __m256i hi = _mm256_srli_epi32(u, 16);
  __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
  __m256i bias =
      _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}

/* zs_lean_fmix32 on 8 lanes. */
ZS_AVX2_INLINE __m256i zs_lean_fmix8(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x85ebca6bu));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 13));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0xc2b2ae35u));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

/* The hashes of pairs q .. q + 7 (one high word: the caller checks), pk = zs_lean_pair_key. */
ZS_AVX2_INLINE __m256i zs_lean_hash8(uint32_t pk, uint64_t q) {
  const __m256i lo = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)q),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return zs_lean_fmix8(_mm256_xor_si256(lo, _mm256_set1_epi32((int)pk)));
}

/* zs_lean_round on 8 lanes: finite lanes sign | min(|u| + r, 0x7f7fffff) >> 16, non-finite
   lanes as round-to-nearest leaves them (inf: inf; NaN: quiet). */
ZS_AVX2_INLINE __m256i zs_lean_round8(__m256 x, __m256i r) {
  __m256i u = _mm256_castps_si256(x);
  __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  __m256i s = _mm256_min_epi32(_mm256_add_epi32(mag, r), _mm256_set1_epi32(0x7f7fffff));
  __m256i fin = _mm256_srli_epi32(
      _mm256_or_si256(_mm256_and_si256(u, _mm256_set1_epi32((int)0x80000000u)), s), 16);
  __m256i nonfin = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f7fffff));
  __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
  __m256i nfv =
      _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_and_si256(nan, _mm256_set1_epi32(0x40)));
  return _mm256_blendv_epi8(fin, nfv, nonfin);
}

/* Elements i .. i + 7 with their random bits r: adamw.h's order, then the rounding. */
ZS_AVX2_INLINE void zs_lean_step8(const zs_lean8 *k, uint16_t *p, void *m, void *v,
                                  const uint16_t *grad, int mbf16, size_t i, __m256i r) {
  __m256 g = _mm256_mul_ps(zs_lean_ld8(grad + i), k->gscale);
  __m256 pf = zs_lean_ld8(p + i);
  __m256 mo = mbf16 ? zs_lean_ld8((uint16_t *)m + i) : _mm256_loadu_ps((float *)m + i);
  __m256 vo = mbf16 ? zs_lean_ld8((uint16_t *)v + i) : _mm256_loadu_ps((float *)v + i);
  __m256 mn = _mm256_fmadd_ps(k->beta1, mo, _mm256_mul_ps(k->omb1, g));
  __m256 vn = _mm256_fmadd_ps(k->beta2, vo, _mm256_mul_ps(_mm256_mul_ps(k->omb2, g), g));
  __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vn, k->bc2)), k->eps);
  __m256 upd = _mm256_div_ps(_mm256_mul_ps(mn, k->bc1), den);
  pf = _mm256_fmadd_ps(k->neg_lr, _mm256_fmadd_ps(k->wd, pf, upd), pf);
  zs_lean_st8(p + i, zs_lean_round8(pf, r));
  if (mbf16) {
    zs_lean_st8((uint16_t *)m + i, zs_lean_rne8(mn));
    zs_lean_st8((uint16_t *)v + i, zs_lean_rne8(vn));
  } else {
    _mm256_storeu_ps((float *)m + i, mn);
    _mm256_storeu_ps((float *)v + i, vn);
  }
}

/* The loop for one moment dtype (mbf16 constant at each call: one branch-free loop each). */
ZS_AVX2_INLINE void zs_lean_body8(const zs_adamw_coef *c, const zs_lean_key *key, uint16_t *p,
                                  void *m, void *v, const uint16_t *grad, int mbf16, size_t n) {
  const zs_lean8 k = {_mm256_set1_ps(c->gscale), _mm256_set1_ps(c->beta1), _mm256_set1_ps(c->omb1),
                      _mm256_set1_ps(c->beta2),  _mm256_set1_ps(c->omb2),  _mm256_set1_ps(c->bc1),
                      _mm256_set1_ps(c->bc2),    _mm256_set1_ps(c->eps),   _mm256_set1_ps(c->wd),
                      _mm256_set1_ps(c->neg_lr)};
  size_t i = 0;
  if (n && (key->elem0 & 1u)) { /* pairs start at even offsets */
    zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, 0, 1);
    i = 1;
  }
  for (; i + 16 <= n; i += 16) {
    const uint64_t q = (key->elem0 + i) >> 1;
    if ((uint32_t)q > 0xfffffff8u) { /* q + 7 carries into the high word */
      zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, i, 16);
      continue;
    }
    zs_prefetch_ahead(grad, i, 2);
    zs_prefetch_ahead(p, i, 2);
    zs_prefetch_ahead(m, i, mbf16 ? 2 : 4);
    zs_prefetch_ahead(v, i, mbf16 ? 2 : 4);
    const __m256i h = zs_lean_hash8(zs_lean_pair_key(key->k0, key->k1, (uint32_t)(q >> 32)), q);
    zs_lean_step8(&k, p, m, v, grad, mbf16, i, _mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)));
    zs_lean_step8(&k, p, m, v, grad, mbf16, i + 8,
                  _mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)));
  }
  if (i < n) zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, i, n - i);
}

ZS_AVX2 void zs_cpu_adamw_lean_avx2(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p,
                                    void *m, void *v, int mbf16, const uint16_t *grad, size_t n) {
  if (mbf16)
    zs_lean_body8(c, k, p, m, v, grad, 1, n);
  else
    zs_lean_body8(c, k, p, m, v, grad, 0, n);
}

#else /* not x86: never selected by the dispatcher, kept so the symbol exists everywhere */

/* Non-x86 build: the scalar reference. */
void zs_cpu_adamw_lean_avx2(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                            void *v, int mbf16, const uint16_t *grad, size_t n) {
  zs_cpu_adamw_lean_scalar(c, k, p, m, v, mbf16, grad, n);
}

#endif
