/* AdamW on device memory: the device's path (adamw_dev.h). */
#include "optim/adamw/adamw_dev.h"

#include "optim/adamw/cpu/adamw.h"
#include "optim/adamw/cpu/adamw_lean.h"
#include "optim/adamw/cpu/adamw_rem.h"

#ifdef ZS_HAVE_CUDA
#include "optim/adamw/cuda/adamw_cuda.h"
#define ZS_IS_CUDA(d) ((d)->kind == ZS_DEVICE_CUDA)
#else
#define ZS_IS_CUDA(d) 0
#endif

zs_status zs_adamw_dev(zs_dev *d, const zs_adamw_coef *c, float *master, float *m, float *v,
                       const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                       size_t n, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d))
    return zs_cuda_adamw(c, master, m, v, grad, grad_dt, param_out, param_dt, n, stream);
#endif
  zs_cpu_adamw(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
  return ZS_OK;
}

zs_status zs_adamw_dev_m16(zs_dev *d, const zs_adamw_coef *c, float *master, uint16_t *m,
                           uint16_t *v, const void *grad, zs_dtype grad_dt, void *param_out,
                           zs_dtype param_dt, size_t n, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d))
    return zs_cuda_adamw_m16(c, master, m, v, grad, grad_dt, param_out, param_dt, n, stream);
#endif
  (void)d;
  (void)stream;
  zs_cpu_adamw_m16(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
  return ZS_OK;
}

zs_status zs_adamw_dev_lean(zs_dev *d, const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p,
                            void *m, void *v, int mbf16, const uint16_t *grad, size_t n,
                            void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_adamw_lean(c, k, p, m, v, mbf16, grad, n, stream);
#endif
  (void)d;
  (void)stream;
  zs_cpu_adamw_lean(c, k, p, m, v, mbf16, grad, n);
  return ZS_OK;
}

zs_status zs_adamw_dev_rem(zs_dev *d, const zs_adamw_coef *c, uint16_t *param, uint16_t *rem,
                           void *m, void *v, zs_dtype moment_dt, const uint16_t *grad, size_t n,
                           void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_adamw_rem(c, param, rem, m, v, moment_dt, grad, n, stream);
#endif
  (void)d;
  (void)stream;
  zs_cpu_adamw_rem(c, param, rem, m, v, moment_dt, grad, n);
  return ZS_OK;
}
