/* AdamW, AVX2 + FMA path: 8 lanes, adamw.h's operation order with explicit fused multiply-adds.
 *
 * Bit-identity with the scalar path rests on: every vector op here is the IEEE single-precision op
 * the scalar code performs (mul, add, div and sqrt are correctly rounded; _mm256_fmadd_ps rounds
 * once like fmaf), the build uses -ffp-contract=off so nothing else is fused, and the bf16
 * conversion below is zs_f32_to_bf16 written with integer lanes. The tail (< 8 elements) runs
 * the scalar reference. The function is compiled for AVX2 through a target attribute, so the rest
 * of the library stays baseline x86-64; adamw_dispatch.c calls it only when cpuid says so. */
#include "optim/adamw/cpu/adamw.h"

#include <stdint.h>

#include "base/bf16.h"
#include "optim/adamw/cpu/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ZS_AVX2 __attribute__((target("avx2,fma")))
#define ZS_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

typedef struct {
  __m256 gscale, beta1, omb1, beta2, omb2, bc1, bc2, eps, wd, neg_lr;
} zs_coef8;

/* 8 gradients as floats: fp32 loaded directly, bf16 widened (bf16 is the high half of a float). */
ZS_AVX2_INLINE __m256 zs_load_grad8(const void *g, size_t i, int bf16) {
  if (bf16) {
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)g + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  return _mm256_loadu_ps((const float *)g + i);
}

/* zs_f32_to_bf16 on 8 lanes: NaN -> quiet NaN with the same top bits, otherwise round to nearest
   even by adding 0x7fff + lsb and keeping the high 16 bits. */
ZS_AVX2_INLINE __m128i zs_to_bf16x8(__m256 x) {
  __m256i u = _mm256_castps_si256(x);
  __m256i hi = _mm256_srli_epi32(u, 16);
  __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7f800000)); /* signed is fine: >= 0 */
  __m256i bias =
      _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
  /* Every lane is <= 0xffff, so the unsigned saturating pack is exact. It packs within 128-bit
     halves (r0-3 r0-3 | r4-7 r4-7); qwords 0 and 2 hold r0..r7 in order. */
  __m256i packed = _mm256_packus_epi32(r, r);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

/* The vector loop for one (grad dtype, output kind, moment dtype) combination; out_kind 0 none,
   1 f32, 2 bf16; mbf16: m and v are bf16 (widened exactly on load, rounded to nearest even on
   store, as zs_adamw_elem_m16). Always inlined with constant flags, so each combination gets a
   branch-free loop. */
ZS_AVX2_INLINE size_t zs_adamw_avx2_body(const zs_coef8 *k, float *master, void *m, void *v,
                                         const void *grad, int gbf16, void *out, int out_kind,
                                         int mbf16, size_t n) {
  const size_t gsz = gbf16 ? 2 : 4, msz = mbf16 ? 2 : 4, osz = out_kind == 2 ? 2 : 4;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (i % 16 == 0) { /* a line of each array every 16 elements (32 B of fp32 per vector) */
      zs_prefetch_ahead(master, i, 4);
      zs_prefetch_ahead(master, i + 8, 4);
      zs_prefetch_ahead(m, i, msz);
      zs_prefetch_ahead(m, i + 8, msz);
      zs_prefetch_ahead(v, i, msz);
      zs_prefetch_ahead(v, i + 8, msz);
      zs_prefetch_ahead(grad, i, gsz);
      if (out_kind) zs_prefetch_ahead(out, i, osz);
    }
    __m256 g = _mm256_mul_ps(zs_load_grad8(grad, i, gbf16), k->gscale);
    __m256 p = _mm256_loadu_ps(master + i);
    __m256 mn = _mm256_fmadd_ps(k->beta1, zs_load_grad8(m, i, mbf16), _mm256_mul_ps(k->omb1, g));
    __m256 vn = _mm256_fmadd_ps(k->beta2, zs_load_grad8(v, i, mbf16),
                                _mm256_mul_ps(_mm256_mul_ps(k->omb2, g), g));
    __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vn, k->bc2)), k->eps);
    __m256 upd = _mm256_div_ps(_mm256_mul_ps(mn, k->bc1), den);
    p = _mm256_fmadd_ps(k->neg_lr, _mm256_fmadd_ps(k->wd, p, upd), p);
    _mm256_storeu_ps(master + i, p);
    if (mbf16) {
      _mm_storeu_si128((__m128i *)((uint16_t *)m + i), zs_to_bf16x8(mn));
      _mm_storeu_si128((__m128i *)((uint16_t *)v + i), zs_to_bf16x8(vn));
    } else {
      _mm256_storeu_ps((float *)m + i, mn);
      _mm256_storeu_ps((float *)v + i, vn);
    }
    if (out_kind == 1) _mm256_storeu_ps((float *)out + i, p);
    if (out_kind == 2) _mm_storeu_si128((__m128i *)((uint16_t *)out + i), zs_to_bf16x8(p));
  }
  return i;
}

/* The multiple-of-8 prefix for the dtypes (mbf16 constant at each call); returns its length. */
ZS_AVX2_INLINE size_t zs_adamw_avx2_run(const zs_adamw_coef *c, float *master, void *m, void *v,
                                        const void *grad, zs_dtype grad_dt, void *param_out,
                                        zs_dtype param_dt, int mbf16, size_t n) {
  zs_coef8 k = {_mm256_set1_ps(c->gscale), _mm256_set1_ps(c->beta1), _mm256_set1_ps(c->omb1),
                _mm256_set1_ps(c->beta2),  _mm256_set1_ps(c->omb2),  _mm256_set1_ps(c->bc1),
                _mm256_set1_ps(c->bc2),    _mm256_set1_ps(c->eps),   _mm256_set1_ps(c->wd),
                _mm256_set1_ps(c->neg_lr)};
  int gbf = grad_dt == ZS_BF16;
  int ok = param_out == NULL ? 0 : param_dt == ZS_BF16 ? 2 : 1;
  if (gbf)
    return ok == 0   ? zs_adamw_avx2_body(&k, master, m, v, grad, 1, param_out, 0, mbf16, n)
           : ok == 1 ? zs_adamw_avx2_body(&k, master, m, v, grad, 1, param_out, 1, mbf16, n)
                     : zs_adamw_avx2_body(&k, master, m, v, grad, 1, param_out, 2, mbf16, n);
  return ok == 0   ? zs_adamw_avx2_body(&k, master, m, v, grad, 0, param_out, 0, mbf16, n)
         : ok == 1 ? zs_adamw_avx2_body(&k, master, m, v, grad, 0, param_out, 1, mbf16, n)
                   : zs_adamw_avx2_body(&k, master, m, v, grad, 0, param_out, 2, mbf16, n);
}

/* Vector loop over the multiple-of-8 prefix, scalar reference for the rest. */
ZS_AVX2 void zs_cpu_adamw_avx2(const zs_adamw_coef *c, float *master, float *m, float *v,
                               const void *grad, zs_dtype grad_dt, void *param_out,
                               zs_dtype param_dt, size_t n) {
  size_t done = zs_adamw_avx2_run(c, master, m, v, grad, grad_dt, param_out, param_dt, 0, n);
  if (done == n) return;
  size_t gsz = zs_dtype_size(grad_dt);
  size_t osz = zs_dtype_size(param_dt);
  zs_cpu_adamw_scalar(c, master + done, m + done, v + done, (const char *)grad + done * gsz,
                      grad_dt, param_out ? (char *)param_out + done * osz : NULL, param_dt,
                      n - done);
}

/* The same with bf16 moments. */
ZS_AVX2 void zs_cpu_adamw_m16_avx2(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                                   const void *grad, zs_dtype grad_dt, void *param_out,
                                   zs_dtype param_dt, size_t n) {
  size_t done = zs_adamw_avx2_run(c, master, m, v, grad, grad_dt, param_out, param_dt, 1, n);
  if (done == n) return;
  size_t gsz = zs_dtype_size(grad_dt);
  size_t osz = zs_dtype_size(param_dt);
  zs_cpu_adamw_m16_scalar(c, master + done, m + done, v + done, (const char *)grad + done * gsz,
                          grad_dt, param_out ? (char *)param_out + done * osz : NULL, param_dt,
                          n - done);
}

#else /* not x86: never selected by the dispatcher, kept so the symbol exists everywhere */

/* Non-x86 build: the scalar reference. */
void zs_cpu_adamw_avx2(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                       zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n) {
  zs_cpu_adamw_scalar(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
}
void zs_cpu_adamw_m16_avx2(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                           const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                           size_t n) {
  zs_cpu_adamw_m16_scalar(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
}

#endif
