/* Lean-mode AdamW, AVX-512 path (F, BW, DQ): 32 elements per iteration (adamw_lean.h).
 *
 * The same bits as the scalar loop: the float operations are adamw.h's, one IEEE operation for
 * one, and the integer ones are lean.h's on 32-bit lanes. 32 elements are 16 pairs, so one
 * register of 16 pair hashes (lean.h's h) holds their 32 random halves in memory order.
 *
 * With bf16 moments every array is bf16, and the elements need not sit in memory order in the
 * lanes, only in the same order in every array: a register of 32 bf16 values is widened by
 * interleaving zeros below its words (unpacklo/unpackhi, one instruction per 16 lanes; lanes get
 * elements 0-3, 8-11, 16-19, 24-27 and 4-7, 12-15, 20-23, 28-31), the pair hashes are split the
 * same way (their halves are those elements' bits), and the results go back with one saturating
 * pack (packus works within 128-bit blocks, so it undoes the interleave). With fp32 moments the
 * lanes keep memory order (the fp32 arrays load as they are) and the hash halves are widened in
 * order.
 *
 * The common case takes short cuts that give lean.h's bits only for finite values: the stochastic
 * rounding as one add and an unsigned min (a finite u + r never carries into the sign, and
 * min(u + r, sign | 0x7f7fffff) clamps either sign), and round-to-nearest-even of the moments
 * without the NaN test. An iteration whose new p is inf or NaN anywhere is redone by the scalar
 * loop before anything is stored (its inputs are still intact); that covers a NaN m or v too, since
 * the new p depends on both through upd and a NaN never leaves an IEEE sum, product, quotient or
 * square root. So are the tail (< 32 elements), an odd first element (pairs start at even offsets),
 * and an iteration whose 16 pair indices cross a multiple of 2^32 (the pair key changes there). */
#include "optim/adamw/cpu/adamw_lean.h"

#include <stdint.h>

#include "optim/adamw/cpu/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZS_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq")))
#define ZS_AVX512_INLINE                                                                           \
  __attribute__((target("avx512f,avx512bw,avx512dq"), always_inline)) static inline

typedef struct {
  __m512 gscale, beta1, omb1, beta2, omb2, bc1, bc2, eps, wd, neg_lr;
} zs_lean16;

/* zs_lean_fmix32 on 16 lanes. */
ZS_AVX512_INLINE __m512i zs_lean_fmix16(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0x85ebca6bu));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 13));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0xc2b2ae35u));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}

/* The hashes of pairs q .. q + 15 (one high word: the caller checks), pk = zs_lean_pair_key. */
ZS_AVX512_INLINE __m512i zs_lean_hash16(uint32_t pk, uint64_t q) {
  const __m512i lo =
      _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)q),
                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  return zs_lean_fmix16(_mm512_xor_si512(lo, _mm512_set1_epi32((int)pk)));
}

/* adamw.h's update of 16 lanes: returns the new p (fp32), sets the new m and v. */
ZS_AVX512_INLINE __m512 zs_lean_adam16(const zs_lean16 *k, __m512 g, __m512 p, __m512 m, __m512 v,
                                       __m512 *mn, __m512 *vn) {
  g = _mm512_mul_ps(g, k->gscale);
  *mn = _mm512_fmadd_ps(k->beta1, m, _mm512_mul_ps(k->omb1, g));
  *vn = _mm512_fmadd_ps(k->beta2, v, _mm512_mul_ps(_mm512_mul_ps(k->omb2, g), g));
  const __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(*vn, k->bc2)), k->eps);
  const __m512 upd = _mm512_div_ps(_mm512_mul_ps(*mn, k->bc1), den);
  return _mm512_fmadd_ps(k->neg_lr, _mm512_fmadd_ps(k->wd, p, upd), p);
}

/* zs_lean_round of finite lanes (bf16 bits in the low half of each lane). */
ZS_AVX512_INLINE __m512i zs_lean_sr16(__m512 x, __m512i r) {
  const __m512i u = _mm512_castps_si512(x);
  /* (u & 0x80000000) | 0x7f7fffff: the largest finite magnitude with u's sign */
  const __m512i lim = _mm512_ternarylogic_epi32(u, _mm512_set1_epi32((int)0x80000000u),
                                                _mm512_set1_epi32(0x7f7fffff), 0xEA);
  return _mm512_srli_epi32(_mm512_min_epu32(_mm512_add_epi32(u, r), lim), 16);
}

/* zs_f32_to_bf16 of lanes that are not NaN (nearest even; inf stays inf). */
ZS_AVX512_INLINE __m512i zs_lean_rne16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, odd), _mm512_set1_epi32(0x7fff)),
                           16);
}

/* Lanes of x that are NaN or +-inf (fpclass: QNaN 0x01, +inf 0x08, -inf 0x10, SNaN 0x80). */
#define ZS_LEAN_NONFINITE(x) _mm512_fpclass_ps_mask((x), 0x99)

/* 32 bf16 values split into two registers of fp32 (exact), lanes as in the file comment. */
ZS_AVX512_INLINE __m512 zs_lean_wlo(__m512i x) {
  return _mm512_castsi512_ps(_mm512_unpacklo_epi16(_mm512_setzero_si512(), x));
}
ZS_AVX512_INLINE __m512 zs_lean_whi(__m512i x) {
  return _mm512_castsi512_ps(_mm512_unpackhi_epi16(_mm512_setzero_si512(), x));
}

/* 16 bf16 values widened to fp32 in memory order (exact). */
ZS_AVX512_INLINE __m512 zs_lean_ld16(const uint16_t *p) {
  const __m256i h = _mm256_loadu_si256((const __m256i *)p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Elements i .. i + 31 with bf16 moments (pair key pk, first pair q); 0 when the iteration
   must be redone by the scalar loop (nothing stored then). Asks for the lines ZS_PREFETCH_ELEMS
   ahead (one 64-byte line of each bf16 array per iteration). */
ZS_AVX512_INLINE int zs_lean_step32_m16(const zs_lean16 *k, uint32_t pk, uint64_t q, uint16_t *p,
                                        uint16_t *m, uint16_t *v, const uint16_t *grad, size_t i) {
  zs_prefetch_ahead(grad, i, 2);
  zs_prefetch_ahead(p, i, 2);
  zs_prefetch_ahead(m, i, 2);
  zs_prefetch_ahead(v, i, 2);
  const __m512i G = _mm512_loadu_si512(grad + i), P = _mm512_loadu_si512(p + i);
  const __m512i M = _mm512_loadu_si512(m + i), V = _mm512_loadu_si512(v + i);
  __m512 ma, va, mb, vb;
  const __m512 pa =
      zs_lean_adam16(k, zs_lean_wlo(G), zs_lean_wlo(P), zs_lean_wlo(M), zs_lean_wlo(V), &ma, &va);
  const __m512 pb =
      zs_lean_adam16(k, zs_lean_whi(G), zs_lean_whi(P), zs_lean_whi(M), zs_lean_whi(V), &mb, &vb);
  if (ZS_LEAN_NONFINITE(pa) | ZS_LEAN_NONFINITE(pb)) return 0;
  const __m512i h = zs_lean_hash16(pk, q);
  const __m512i ra = _mm512_unpacklo_epi16(h, _mm512_setzero_si512());
  const __m512i rb = _mm512_unpackhi_epi16(h, _mm512_setzero_si512());
  _mm512_storeu_si512(p + i, _mm512_packus_epi32(zs_lean_sr16(pa, ra), zs_lean_sr16(pb, rb)));
  _mm512_storeu_si512(m + i, _mm512_packus_epi32(zs_lean_rne16(ma), zs_lean_rne16(mb)));
  _mm512_storeu_si512(v + i, _mm512_packus_epi32(zs_lean_rne16(va), zs_lean_rne16(vb)));
  return 1;
}

/* Elements i .. i + 31 with fp32 moments, lanes in memory order; 0 as above. */
ZS_AVX512_INLINE int zs_lean_step32_m32(const zs_lean16 *k, uint32_t pk, uint64_t q, uint16_t *p,
                                        float *m, float *v, const uint16_t *grad, size_t i) {
  zs_prefetch_ahead(grad, i, 2);
  zs_prefetch_ahead(p, i, 2);
  zs_prefetch_ahead(m, i, 4);
  zs_prefetch_ahead(m, i + 16, 4);
  zs_prefetch_ahead(v, i, 4);
  zs_prefetch_ahead(v, i + 16, 4);
  __m512 ma, va, mb, vb;
  const __m512 pa = zs_lean_adam16(k, zs_lean_ld16(grad + i), zs_lean_ld16(p + i),
                                   _mm512_loadu_ps(m + i), _mm512_loadu_ps(v + i), &ma, &va);
  const __m512 pb =
      zs_lean_adam16(k, zs_lean_ld16(grad + i + 16), zs_lean_ld16(p + i + 16),
                     _mm512_loadu_ps(m + i + 16), _mm512_loadu_ps(v + i + 16), &mb, &vb);
  if (ZS_LEAN_NONFINITE(pa) | ZS_LEAN_NONFINITE(pb)) return 0;
  const __m512i h = zs_lean_hash16(pk, q);
  const __m512i ra = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(h));
  const __m512i rb = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1));
  /* both halves' bf16 bits (each <= 0xffff) in memory order: the pack interleaves 128-bit
     blocks (a0 b0 a1 b1 ...), the qword permutation puts a's four before b's */
  const __m512i packed = _mm512_packus_epi32(zs_lean_sr16(pa, ra), zs_lean_sr16(pb, rb));
  _mm512_storeu_si512(p + i,
                      _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), packed));
  _mm512_storeu_ps(m + i, ma);
  _mm512_storeu_ps(v + i, va);
  _mm512_storeu_ps(m + i + 16, mb);
  _mm512_storeu_ps(v + i + 16, vb);
  return 1;
}

/* The loop for one moment dtype (mbf16 constant at each call). */
ZS_AVX512_INLINE void zs_lean_body32(const zs_adamw_coef *c, const zs_lean_key *key, uint16_t *p,
                                     void *m, void *v, const uint16_t *grad, int mbf16, size_t n) {
  const zs_lean16 k = {_mm512_set1_ps(c->gscale), _mm512_set1_ps(c->beta1), _mm512_set1_ps(c->omb1),
                       _mm512_set1_ps(c->beta2),  _mm512_set1_ps(c->omb2),  _mm512_set1_ps(c->bc1),
                       _mm512_set1_ps(c->bc2),    _mm512_set1_ps(c->eps),   _mm512_set1_ps(c->wd),
                       _mm512_set1_ps(c->neg_lr)};
  size_t i = 0;
  if (n && (key->elem0 & 1u)) { /* pairs start at even offsets */
    zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, 0, 1);
    i = 1;
  }
  for (; i + 32 <= n; i += 32) {
    const uint64_t q = (key->elem0 + i) >> 1;
    int done = 0;
    if ((uint32_t)q <= 0xfffffff0u) { /* q + 15 stays in q's high word */
      /* one scalar fmix32 per 32 elements: cheaper to recompute than to cache */
      const uint32_t pk = zs_lean_pair_key(key->k0, key->k1, (uint32_t)(q >> 32));
      done = mbf16 ? zs_lean_step32_m16(&k, pk, q, p, (uint16_t *)m, (uint16_t *)v, grad, i)
                   : zs_lean_step32_m32(&k, pk, q, p, (float *)m, (float *)v, grad, i);
    }
    if (!done) zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, i, 32);
  }
  if (i < n) zs_cpu_adamw_lean_scalar_at(c, key, p, m, v, mbf16, grad, i, n - i);
}

ZS_AVX512 void zs_cpu_adamw_lean_avx512(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p,
                                        void *m, void *v, int mbf16, const uint16_t *grad,
                                        size_t n) {
  if (mbf16)
    zs_lean_body32(c, k, p, m, v, grad, 1, n);
  else
    zs_lean_body32(c, k, p, m, v, grad, 0, n);
}

#else /* not x86: never selected by the dispatcher, kept so the symbol exists everywhere */

/* Non-x86 build: the scalar reference. */
void zs_cpu_adamw_lean_avx512(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                              void *v, int mbf16, const uint16_t *grad, size_t n) {
  zs_cpu_adamw_lean_scalar(c, k, p, m, v, mbf16, grad, n);
}

#endif
