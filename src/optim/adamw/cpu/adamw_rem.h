/* AdamW with the remainder master (zs_config.master = ZS_MASTER_REMAINDER, bf16 params): the
 * fp32 master p is not stored; each element's bf16 compute copy and 16-bit remainder
 * (base/bf16_rem.h) reconstruct it exactly, adamw.h's update runs on it in the same float order
 * as every other mode, and the new p is split back into compute copy and remainder. m and v are
 * fp32 or bf16 (zs_adamw_elem / zs_adamw_elem_m16). The gradient is bf16 (the param dtype).
 * Every path (scalar, AVX2, AVX-512, CUDA) gives the scalar path's bits. */
#ifndef ZS_OPTIM_ADAMW_CPU_ADAMW_REM_H
#define ZS_OPTIM_ADAMW_CPU_ADAMW_REM_H

#include <stddef.h>
#include <stdint.h>

#include "base/bf16_rem.h"
#include "optim/adamw/cpu/adamw.h"

/* One element: join, the reference update (m and v in moment dtype mbf16 ? bf16 : fp32), split. */
static inline void zs_adamw_elem_rem(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem,
                                     void *m, void *v, int mbf16, size_t i, uint16_t grad) {
  float p = zs_rem_join(param[i], rem[i]);
  if (mbf16)
    zs_adamw_elem_m16(c, &p, (uint16_t *)m + i, (uint16_t *)v + i, zs_bf16_to_f32(grad));
  else
    zs_adamw_elem(c, &p, (float *)m + i, (float *)v + i, zs_bf16_to_f32(grad));
  zs_rem_split(p, &param[i], &rem[i]);
}

/* n elements in place: param (bf16 compute copy) and rem (remainders) are the master; m and v in
   moment_dt (ZS_F32 or ZS_BF16); grad bf16. Host memory, the calling thread. */
typedef void (*zs_adamw_kernel_rem)(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m,
                                    void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n);
/* The remainder kernel behind a resolved path (zs_adamw_isa_resolve). */
zs_adamw_kernel_rem zs_adamw_kernel_rem_for(zs_adamw_isa isa);
/* The active path's remainder kernel on the calling thread (the CPU device's zs_dev_adamw_rem). */
void zs_cpu_adamw_rem(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m, void *v,
                      zs_dtype moment_dt, const uint16_t *grad, size_t n);
/* The single-threaded kernels (adamw_rem.c, adamw_rem_avx2.c, adamw_rem_avx512.c); the AVX ones
   only where zs_adamw_isa_supported says so. */
void zs_cpu_adamw_rem_scalar(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m,
                             void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n);
void zs_cpu_adamw_rem_avx2(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m, void *v,
                           zs_dtype moment_dt, const uint16_t *grad, size_t n);
void zs_cpu_adamw_rem_avx512(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m,
                             void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n);

#endif
