/* The remainder-master AdamW (adamw_rem.h): the scalar reference loop and the path choice. */
#include "optim/adamw/cpu/adamw_rem.h"

void zs_cpu_adamw_rem_scalar(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m,
                             void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n) {
  const int mbf16 = moment_dt == ZS_BF16;
  for (size_t i = 0; i < n; i++)
    zs_adamw_elem_rem(c, param, rem, m, v, mbf16, i, grad[i]);
}

zs_adamw_kernel_rem zs_adamw_kernel_rem_for(zs_adamw_isa isa) {
  switch (isa) {
  case ZS_ADAMW_ISA_AVX512:
    return zs_cpu_adamw_rem_avx512;
  case ZS_ADAMW_ISA_AVX2:
    return zs_cpu_adamw_rem_avx2;
  default:
    return zs_cpu_adamw_rem_scalar;
  }
}

void zs_cpu_adamw_rem(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m, void *v,
                      zs_dtype moment_dt, const uint16_t *grad, size_t n) {
  zs_adamw_kernel_rem_for(zs_adamw_isa_active())(c, param, rem, m, v, moment_dt, grad, n);
}
