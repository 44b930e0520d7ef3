/* Lean-mode AdamW, the reference loop (adamw_lean.h), and the choice of path at run time (the same
 * cpuid / ZS_ADAMW_ISA choice as zs_cpu_adamw: adamw_dispatch.c). */
#include "optim/adamw/cpu/adamw_lean.h"

/* One element at a time: zs_adamw_elem_lean(_m16) with the element's random bits. */
void zs_cpu_adamw_lean_scalar(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                              void *v, int mbf16, const uint16_t *grad, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const uint32_t r = zs_lean_bits(k->k0, k->k1, k->elem0 + i);
    const float g = zs_bf16_to_f32(grad[i]);
    if (mbf16)
      zs_adamw_elem_lean_m16(c, &p[i], (uint16_t *)m + i, (uint16_t *)v + i, g, r);
    else
      zs_adamw_elem_lean(c, &p[i], (float *)m + i, (float *)v + i, g, r);
  }
}

zs_adamw_kernel_lean zs_adamw_kernel_lean_for(zs_adamw_isa isa) {
  switch (isa) {
  case ZS_ADAMW_ISA_AVX512:
    return zs_cpu_adamw_lean_avx512;
  case ZS_ADAMW_ISA_AVX2:
    return zs_cpu_adamw_lean_avx2;
  default:
    return zs_cpu_adamw_lean_scalar;
  }
}

void zs_cpu_adamw_lean(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m, void *v,
                       int mbf16, const uint16_t *grad, size_t n) {
  zs_adamw_kernel_lean_for(zs_adamw_isa_active())(c, k, p, m, v, mbf16, grad, n);
}
