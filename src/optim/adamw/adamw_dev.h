/* AdamW on device memory, on the device's own path: the CUDA kernels (cuda/adamw_cuda.h) on a CUDA
 * device, the calling thread's CPU kernels (cpu/adamw.h) on the CPU device. Every pair gives the
 * same bits. Work is queued on `stream` (CUDA) or done on return (CPU). */
#ifndef ZS_OPTIM_ADAMW_ADAMW_DEV_H
#define ZS_OPTIM_ADAMW_ADAMW_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "optim/adamw/coef.h"
#include "optim/lean.h"

/* master/m/v (fp32) updated in place from grad; the new master written to param_out in param_dt
   (NULL: nowhere). */
zs_status zs_adamw_dev(zs_dev *d, const zs_adamw_coef *c, float *master, float *m, float *v,
                       const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                       size_t n, void *stream);
/* zs_adamw_dev with m and v in bf16 (zs_cpu_adamw_m16 / zs_cuda_adamw_m16: the same bits). */
zs_status zs_adamw_dev_m16(zs_dev *d, const zs_adamw_coef *c, float *master, uint16_t *m,
                           uint16_t *v, const void *grad, zs_dtype grad_dt, void *param_out,
                           zs_dtype param_dt, size_t n, void *stream);
/* Lean mode (zs_cpu_adamw_lean / zs_cuda_adamw_lean: the same bits): p (bf16, the master), m and
   v (bf16 when mbf16, else fp32) updated in place from grad (bf16) under key k. */
zs_status zs_adamw_dev_lean(zs_dev *d, const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p,
                            void *m, void *v, int mbf16, const uint16_t *grad, size_t n,
                            void *stream);
/* The remainder-master update (zs_cpu_adamw_rem / zs_cuda_adamw_rem: the same bits): param and
   rem are the master, updated in place; m and v in moment_dt; grad bf16. */
zs_status zs_adamw_dev_rem(zs_dev *d, const zs_adamw_coef *c, uint16_t *param, uint16_t *rem,
                           void *m, void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n,
                           void *stream);

#endif
