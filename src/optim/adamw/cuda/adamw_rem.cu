/* The remainder-master AdamW on the device (zs_cuda_adamw_rem), bit-identical to the CPU reference
   (src/optim/adamw/cpu/adamw_rem.h): join the bf16 compute copy and the 16-bit remainder into the
   fp32 master (integer ops, exact), adamw.cu's float operations in the same order with the
   round-to-nearest intrinsics, split back (base/bf16_rem.h). */
#include "device/cuda/cuda_check.cuh"
#include "device/cuda/cuda_common.cuh"
#include "optim/adamw/cuda/adamw_cuda.h"

#define ADAMW_REM_THREADS 256

/* One element in the reference order (adamw.cu's adamw_elem, op for op); p, m, v in place. */
__device__ __forceinline__ void adamw_rem_elem(const zs_adamw_coef &c, float &p, float &m, float &v,
                                               float grad) {
  float g = __fmul_rn(grad, c.gscale);
  float mn = __fmaf_rn(c.beta1, m, __fmul_rn(c.omb1, g));
  float vn = __fmaf_rn(c.beta2, v, __fmul_rn(__fmul_rn(c.omb2, g), g));
  float den = __fadd_rn(__fsqrt_rn(__fmul_rn(vn, c.bc2)), c.eps);
  float upd = __fdiv_rn(__fmul_rn(mn, c.bc1), den);
  p = __fmaf_rn(c.neg_lr, __fmaf_rn(c.wd, p, upd), p);
  m = mn;
  v = vn;
}

/* TM: the moments' type (float, or zs_bf16 widened by zs_ld and rounded to nearest even by
   zs_st). param and rem are the master: b = (param << 16) + (int16)rem; back as
   param = (b + 0x8000) >> 16, rem = b & 0xffff. */
template <typename TM>
__global__ void adamw_rem_kernel(zs_adamw_coef c, uint16_t *param, uint16_t *rem, TM *m, TM *v,
                                 const zs_bf16 *grad, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const unsigned b0 = ((unsigned)param[i] << 16) + (unsigned)(int)(short)rem[i];
    float p = __uint_as_float(b0), mi = zs_ld(&m[i]), vi = zs_ld(&v[i]);
    adamw_rem_elem(c, p, mi, vi, zs_ld(&grad[i]));
    const unsigned b = __float_as_uint(p);
    param[i] = (uint16_t)((b + 0x8000u) >> 16);
    rem[i] = (uint16_t)(b & 0xffffu);
    zs_st(&m[i], mi);
    zs_st(&v[i], vi);
  }
}

extern "C" zs_status zs_cuda_adamw_rem(const zs_adamw_coef *c, uint16_t *param, uint16_t *rem,
                                       void *m, void *v, zs_dtype moment_dt, const uint16_t *grad,
                                       size_t n, void *stream) {
  if (!zs_dt_ok(moment_dt))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_adamw_rem: moment dtype %d: use ZS_F32 or ZS_BF16",
                  (int)moment_dt);
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_adamw_rem: coefficients are NULL");
  if (!n) return ZS_OK;
  if (!param || !rem || !m || !v || !grad)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_adamw_rem: NULL param/rem/m/v/grad with n = %zu", n);
  cudaStream_t s = (cudaStream_t)stream;
  if (moment_dt == ZS_BF16)
    adamw_rem_kernel<zs_bf16><<<zs_grid(n, ADAMW_REM_THREADS), ADAMW_REM_THREADS, 0, s>>>(
        *c, param, rem, (zs_bf16 *)m, (zs_bf16 *)v, (const zs_bf16 *)grad, n);
  else
    adamw_rem_kernel<float><<<zs_grid(n, ADAMW_REM_THREADS), ADAMW_REM_THREADS, 0, s>>>(
        *c, param, rem, (float *)m, (float *)v, (const zs_bf16 *)grad, n);
  return zs_cu_launched("zs_cuda_adamw_rem");
}
