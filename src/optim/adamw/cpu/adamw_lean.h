/* Lean-mode AdamW on the CPU (zs_config.master = ZS_MASTER_LEAN): the bf16 params are the master.
 *
 * Per element: p (bf16) widened to fp32 (exact), adamw.h's float operations in adamw.h's order on
 * p and the moments (fp32, or bf16 widened exactly and rounded to nearest even on store, as
 * zs_adamw_elem_m16), then the new p rounded to bf16 stochastically with the element's 16 random
 * bits (src/optim/lean.h: the generator, the rounding). Every path (scalar, AVX2, AVX-512, and
 * the CUDA twin) gives the scalar path's bits: the float part is adamw.h's argument, the integer
 * part is lean.h's functions, lane for lane. Gradients are bf16 (lean mode needs bf16 params, and
 * gradients have the params' dtype). */
#ifndef ZS_OPTIM_ADAMW_CPU_ADAMW_LEAN_H
#define ZS_OPTIM_ADAMW_CPU_ADAMW_LEAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "optim/adamw/cpu/adamw.h"
#include "optim/lean.h"

/* One element with fp32 moments; r: its random bits (zs_lean_bits). */
static inline void zs_adamw_elem_lean(const zs_adamw_coef *c, uint16_t *p, float *m, float *v,
                                      float grad, uint32_t r) {
  float pf = zs_bf16_to_f32(*p);
  zs_adamw_elem(c, &pf, m, v, grad);
  uint32_t u;
  memcpy(&u, &pf, sizeof u);
  *p = zs_lean_round(u, r);
}

/* One element with bf16 moments (widened, updated in fp32, rounded to nearest even on store; p
   uses this step's unrounded m and v). */
static inline void zs_adamw_elem_lean_m16(const zs_adamw_coef *c, uint16_t *p, uint16_t *m,
                                          uint16_t *v, float grad, uint32_t r) {
  float mf = zs_bf16_to_f32(*m), vf = zs_bf16_to_f32(*v);
  zs_adamw_elem_lean(c, p, &mf, &vf, grad, r);
  *m = zs_f32_to_bf16(mf);
  *v = zs_f32_to_bf16(vf);
}

/* n elements, in place: p (bf16 params, the master), m and v (fp32, or bf16 when mbf16), from
   grad (bf16); element i draws zs_lean_bits(k->k0, k->k1, k->elem0 + i). Host memory only. */
typedef void (*zs_adamw_kernel_lean)(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p,
                                     void *m, void *v, int mbf16, const uint16_t *grad, size_t n);
/* The lean kernel behind a resolved path (zs_adamw_isa_resolve). */
zs_adamw_kernel_lean zs_adamw_kernel_lean_for(zs_adamw_isa isa);
/* The active path's lean kernel on the calling thread (the CPU device's twin of
   zs_cuda_adamw_lean). */
void zs_cpu_adamw_lean(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m, void *v,
                       int mbf16, const uint16_t *grad, size_t n);
/* The kernels behind the paths (adamw_lean.c, adamw_lean_avx2.c, adamw_lean_avx512.c); the
   AVX ones only where zs_adamw_isa_supported says so. */
void zs_cpu_adamw_lean_scalar(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                              void *v, int mbf16, const uint16_t *grad, size_t n);
void zs_cpu_adamw_lean_avx2(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                            void *v, int mbf16, const uint16_t *grad, size_t n);
void zs_cpu_adamw_lean_avx512(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                              void *v, int mbf16, const uint16_t *grad, size_t n);

/* Elements [i, i + len) of a lean call as a call of its own (the key and pointers advanced), on
   the scalar path: the vector paths' tails and the vectors whose offsets cross 2^32. */
static inline void zs_cpu_adamw_lean_scalar_at(const zs_adamw_coef *c, const zs_lean_key *k,
                                               uint16_t *p, void *m, void *v, int mbf16,
                                               const uint16_t *grad, size_t i, size_t len) {
  const zs_lean_key sub = {k->k0, k->k1, k->elem0 + i};
  const size_t msz = mbf16 ? 2 : 4;
  zs_cpu_adamw_lean_scalar(c, &sub, p + i, (char *)m + i * msz, (char *)v + i * msz, mbf16,
                           grad + i, len);
}

#endif
