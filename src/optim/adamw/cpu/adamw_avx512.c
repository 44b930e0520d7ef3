/* AdamW, AVX-512F path: 16 lanes, adamw.h's operation order with explicit fused multiply-adds.
 *
 * Same bit-identity argument as adamw_avx2.c (IEEE ops one for one, -ffp-contract=off, the bf16
 * rounding of bf16.h on integer lanes). Only AVX-512F instructions are used here, but the
 * dispatcher selects the AVX-512 path only with BW and DQ too (the lean and remainder kernels use
 * them), so a CPU with AVX-512F alone (Xeon Phi) runs the AVX2 path. The tail (< 16 elements) is
 * done with masked loads and stores of the fp32 arrays; a bf16 gradient tail is staged through a
 * small zero-padded buffer (masked 16-bit loads would need AVX-512BW); bf16 moments load the same
 * way and store narrowed (zs_store_words16; the bf16 param copy of a whole vector non-temporally).
 * Masked-off lanes compute on zeros and are never stored. */
#include "optim/adamw/cpu/adamw.h"

#include <stdint.h>
#include <string.h>

#include "base/bf16.h"
#include "optim/adamw/cpu/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZS_AVX512 __attribute__((target("avx512f")))
#define ZS_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) static inline

typedef struct {
  __m512 gscale, beta1, omb1, beta2, omb2, bc1, bc2, eps, wd, neg_lr;
} zs_coef16;

/* Up to 16 gradients (lanes outside `mask` read as 0) as floats. */
ZS_AVX512_INLINE __m512 zs_load_grad16(const void *g, size_t i, int bf16, __mmask16 mask,
                                       size_t lanes) {
  if (!bf16) return _mm512_maskz_loadu_ps(mask, (const float *)g + i);
  uint16_t tmp[16];
  const uint16_t *src = (const uint16_t *)g + i;
  if (lanes < 16) {
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, src, lanes * sizeof(uint16_t));
    src = tmp;
  }
  __m256i h = _mm256_loadu_si256((const __m256i *)src);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* zs_f32_to_bf16 on 16 lanes, results in the low 16 bits of each 32-bit lane. */
ZS_AVX512_INLINE __m512i zs_to_bf16x16(__m512 x) {
  __m512i u = _mm512_castps_si512(x);
  __m512i hi = _mm512_srli_epi32(u, 16);
  __m512i absu = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  __mmask16 nan = _mm512_cmpgt_epu32_mask(absu, _mm512_set1_epi32(0x7f800000));
  __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
}

/* Stores the low 16 bits of 16 lanes (lanes in mask) as 16-bit words at dst: a full vector
   narrows in a register and stores 32 bytes at once (the masked narrowing store to memory costs
   several more micro-ops on Intel cores), the same words either way. */
ZS_AVX512_INLINE void zs_store_words16(uint16_t *dst, __m512i w, __mmask16 mask) {
  if (mask == (__mmask16)0xffff)
    _mm256_storeu_si256((__m256i *)(void *)dst, _mm512_cvtepi32_epi16(w));
  else
    _mm512_mask_cvtepi32_storeu_epi16(dst, mask, w);
}

/* One vector of up to 16 elements at i (lanes in `mask`); out_kind 0 none, 1 f32, 2 bf16; mbf16:
   m and v are bf16 (loaded as the gradient is, rounded to nearest even on store). */
ZS_AVX512_INLINE void zs_adamw_avx512_step(const zs_coef16 *k, float *master, void *m, void *v,
                                           const void *grad, int gbf16, void *out, int out_kind,
                                           int mbf16, size_t i, __mmask16 mask, size_t lanes) {
  __m512 g = _mm512_mul_ps(zs_load_grad16(grad, i, gbf16, mask, lanes), k->gscale);
  __m512 p = _mm512_maskz_loadu_ps(mask, master + i);
  __m512 mn = _mm512_fmadd_ps(k->beta1, zs_load_grad16(m, i, mbf16, mask, lanes),
                              _mm512_mul_ps(k->omb1, g));
  __m512 vn = _mm512_fmadd_ps(k->beta2, zs_load_grad16(v, i, mbf16, mask, lanes),
                              _mm512_mul_ps(_mm512_mul_ps(k->omb2, g), g));
  __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vn, k->bc2)), k->eps);
  __m512 upd = _mm512_div_ps(_mm512_mul_ps(mn, k->bc1), den);
  p = _mm512_fmadd_ps(k->neg_lr, _mm512_fmadd_ps(k->wd, p, upd), p);
  _mm512_mask_storeu_ps(master + i, mask, p);
  if (mbf16) {
    zs_store_words16((uint16_t *)m + i, zs_to_bf16x16(mn), mask);
    zs_store_words16((uint16_t *)v + i, zs_to_bf16x16(vn), mask);
  } else {
    _mm512_mask_storeu_ps((float *)m + i, mask, mn);
    _mm512_mask_storeu_ps((float *)v + i, mask, vn);
  }
  if (out_kind == 1) _mm512_mask_storeu_ps((float *)out + i, mask, p);
  if (out_kind == 2) { /* written once, read next by a copy or the next forward: bypass the cache */
    if (mask == (__mmask16)0xffff && !((uintptr_t)((uint16_t *)out + i) & 31))
      _mm256_stream_si256((__m256i *)(void *)((uint16_t *)out + i),
                          _mm512_cvtepi32_epi16(zs_to_bf16x16(p)));
    else
      zs_store_words16((uint16_t *)out + i, zs_to_bf16x16(p), mask);
  }
}

/* Full vectors, then one masked vector for the tail. Constant flags: one loop per combination. */
ZS_AVX512_INLINE void zs_adamw_avx512_body(const zs_coef16 *k, float *master, void *m, void *v,
                                           const void *grad, int gbf16, void *out, int out_kind,
                                           int mbf16, size_t n) {
  size_t i = 0;
  const size_t gsz = gbf16 ? 2 : 4, msz = mbf16 ? 2 : 4, osz = out_kind == 2 ? 2 : 4;
  for (; i + 16 <= n; i += 16) {
    if (mbf16) { /* fp32 moments: the hardware prefetchers do better alone (prefetch.h) */
      zs_prefetch_ahead(master, i, 4);
      zs_prefetch_ahead(m, i, msz);
      zs_prefetch_ahead(v, i, msz);
      zs_prefetch_ahead(grad, i, gsz);
      if (out_kind == 1) zs_prefetch_ahead(out, i, osz); /* bf16: stored non-temporally */
    }
    zs_adamw_avx512_step(k, master, m, v, grad, gbf16, out, out_kind, mbf16, i, (__mmask16)0xffff,
                         16);
  }
  if (out_kind == 2) _mm_sfence();
  if (i < n) {
    size_t lanes = n - i;
    zs_adamw_avx512_step(k, master, m, v, grad, gbf16, out, out_kind, mbf16, i,
                         (__mmask16)((1u << lanes) - 1u), lanes);
  }
}

/* Picks the specialised loop for the dtypes (mbf16 constant at each call). */
ZS_AVX512_INLINE void zs_adamw_avx512_run(const zs_adamw_coef *c, float *master, void *m, void *v,
                                          const void *grad, zs_dtype grad_dt, void *param_out,
                                          zs_dtype param_dt, int mbf16, size_t n) {
  zs_coef16 k = {_mm512_set1_ps(c->gscale), _mm512_set1_ps(c->beta1), _mm512_set1_ps(c->omb1),
                 _mm512_set1_ps(c->beta2),  _mm512_set1_ps(c->omb2),  _mm512_set1_ps(c->bc1),
                 _mm512_set1_ps(c->bc2),    _mm512_set1_ps(c->eps),   _mm512_set1_ps(c->wd),
                 _mm512_set1_ps(c->neg_lr)};
  int ok = param_out == NULL ? 0 : param_dt == ZS_BF16 ? 2 : 1;
  if (grad_dt == ZS_BF16) {
    if (ok == 0)
      zs_adamw_avx512_body(&k, master, m, v, grad, 1, param_out, 0, mbf16, n);
    else if (ok == 1)
      zs_adamw_avx512_body(&k, master, m, v, grad, 1, param_out, 1, mbf16, n);
    else
      zs_adamw_avx512_body(&k, master, m, v, grad, 1, param_out, 2, mbf16, n);
  } else {
    if (ok == 0)
      zs_adamw_avx512_body(&k, master, m, v, grad, 0, param_out, 0, mbf16, n);
    else if (ok == 1)
      zs_adamw_avx512_body(&k, master, m, v, grad, 0, param_out, 1, mbf16, n);
    else
      zs_adamw_avx512_body(&k, master, m, v, grad, 0, param_out, 2, mbf16, n);
  }
}

ZS_AVX512 void zs_cpu_adamw_avx512(const zs_adamw_coef *c, float *master, float *m, float *v,
                                   const void *grad, zs_dtype grad_dt, void *param_out,
                                   zs_dtype param_dt, size_t n) {
  zs_adamw_avx512_run(c, master, m, v, grad, grad_dt, param_out, param_dt, 0, n);
}

/* The same with bf16 moments. */
ZS_AVX512 void zs_cpu_adamw_m16_avx512(const zs_adamw_coef *c, float *master, uint16_t *m,
                                       uint16_t *v, const void *grad, zs_dtype grad_dt,
                                       void *param_out, zs_dtype param_dt, size_t n) {
  zs_adamw_avx512_run(c, master, m, v, grad, grad_dt, param_out, param_dt, 1, n);
}

#else /* not x86: never selected by the dispatcher, kept so the symbol exists everywhere */

/* Non-x86 build: the scalar reference. */
void zs_cpu_adamw_avx512(const zs_adamw_coef *c, float *master, float *m, float *v,
                         const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                         size_t n) {
  zs_cpu_adamw_scalar(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
}
void zs_cpu_adamw_m16_avx512(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                             const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                             size_t n) {
  zs_cpu_adamw_m16_scalar(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
}

#endif
