/* AdamW's CUDA kernels (adamw.cu, adamw_lean.cu, adamw_rem.cu), each bit-identical to its CPU twin
 * (cpu/adamw.h). Pointers are device pointers; `stream` is a cudaStream_t; work is only queued.
 * Every call returns ZS_OK, ZS_ERR_INVALID_ARG (bad dtype / NULL with n > 0) or ZS_ERR_DEVICE
 * (launch failure, named in zs_last_error()). n == 0 is a no-op. */
#ifndef ZS_OPTIM_ADAMW_CUDA_ADAMW_CUDA_H
#define ZS_OPTIM_ADAMW_CUDA_ADAMW_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "optim/adamw/coef.h"
#include "optim/lean.h" /* zs_lean_key */
#include "zshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* AdamW, bit-identical to zs_cpu_adamw (src/optim/adamw/cpu/adamw.h): master/m/v (fp32, device)
   updated in place from grad (grad_dt); the updated master written to param_out in param_dt
   (NULL to skip). */
zs_status zs_cuda_adamw(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                        zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n,
                        void *stream);
/* The same with m and v in bf16 (device), bit-identical to zs_cpu_adamw_m16: widened on load,
   rounded to nearest even on store. */
zs_status zs_cuda_adamw_m16(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                            const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                            size_t n, void *stream);
/* Lean mode, bit-identical to zs_cpu_adamw_lean (src/optim/adamw/cpu/adamw_lean.h): p (bf16 params,
   the master), m and v (fp32, or bf16 when mbf16) updated in place from grad (bf16); the new p
   rounded stochastically with the bits of src/optim/lean.h under key k (adamw_lean.cu). */
zs_status zs_cuda_adamw_lean(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p, void *m,
                             void *v, int mbf16, const uint16_t *grad, size_t n, void *stream);
/* The remainder-master update (adamw_rem.cu), bit-identical to zs_cpu_adamw_rem: param (bf16
   compute copy) and rem (16-bit remainders) are the fp32 master, updated in place; m and v in
   moment_dt; grad bf16. All device memory. */
zs_status zs_cuda_adamw_rem(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem, void *m,
                            void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n,
                            void *stream);

#ifdef __cplusplus
}
#endif
#endif
