/* AdamW on the device, bit-identical to the CPU reference (src/optim/adamw/cpu/adamw.h): the same
   float operations in the same order, written with the round-to-nearest intrinsics so that no
   contraction or approximate math can change a bit. */
#include "device/cuda/cuda_check.cuh"
#include "device/cuda/cuda_common.cuh"
#include "optim/adamw/cuda/adamw_cuda.h"

#define ADAMW_THREADS 256

/* One element in the reference order; p, m, v updated in place. */
__device__ __forceinline__ void adamw_elem(const zs_adamw_coef &c, float &p, float &m, float &v,
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

/* The coefficients arrive by value (kernel parameter space), one launch per shard. TM is the
   moments' type: float, or zs_bf16 (widened by zs_ld, rounded to nearest even by zs_st, as
   zs_adamw_elem_m16 does on the CPU). */
template <typename TG, typename TP, typename TM>
__global__ void adamw_kernel(zs_adamw_coef c, float *master, TM *m, TM *v, const TG *grad,
                             TP *param_out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float p = master[i], mi = zs_ld(&m[i]), vi = zs_ld(&v[i]);
    adamw_elem(c, p, mi, vi, zs_ld(&grad[i]));
    master[i] = p;
    zs_st(&m[i], mi);
    zs_st(&v[i], vi);
    if (param_out) zs_st(&param_out[i], p);
  }
}

/* Launches the kernel for one (grad, param, moment) dtype triple. */
template <typename TG, typename TP, typename TM>
static void adamw_launch(const zs_adamw_coef *c, float *master, void *m, void *v, const void *grad,
                         void *param_out, size_t n, cudaStream_t s) {
  adamw_kernel<TG, TP, TM><<<zs_grid(n, ADAMW_THREADS), ADAMW_THREADS, 0, s>>>(
      *c, master, (TM *)m, (TM *)v, (const TG *)grad, (TP *)param_out, n);
}

/* The launch for the dtypes, with moments of type TM. */
template <typename TM>
static zs_status adamw_any(const zs_adamw_coef *c, float *master, void *m, void *v,
                           const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                           size_t n, void *stream, const char *fn) {
  if (!zs_dt_ok(grad_dt) || (param_out && !zs_dt_ok(param_dt)))
    return zs_err(ZS_ERR_INVALID_ARG, "%s: dtypes %d/%d: use ZS_F32 or ZS_BF16", fn, (int)grad_dt,
                  (int)param_dt);
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "%s: coefficients are NULL", fn);
  if (!n) return ZS_OK;
  if (!master || !m || !v || !grad)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: NULL master/m/v/grad with n = %zu", fn, n);
  cudaStream_t s = (cudaStream_t)stream;
  int gb = grad_dt == ZS_BF16, pb = param_dt == ZS_BF16;
  if (!gb && !pb)
    adamw_launch<float, float, TM>(c, master, m, v, grad, param_out, n, s);
  else if (!gb)
    adamw_launch<float, zs_bf16, TM>(c, master, m, v, grad, param_out, n, s);
  else if (!pb)
    adamw_launch<zs_bf16, float, TM>(c, master, m, v, grad, param_out, n, s);
  else
    adamw_launch<zs_bf16, zs_bf16, TM>(c, master, m, v, grad, param_out, n, s);
  return zs_cu_launched(fn);
}

extern "C" zs_status zs_cuda_adamw(const zs_adamw_coef *c, float *master, float *m, float *v,
                                   const void *grad, zs_dtype grad_dt, void *param_out,
                                   zs_dtype param_dt, size_t n, void *stream) {
  return adamw_any<float>(c, master, m, v, grad, grad_dt, param_out, param_dt, n, stream,
                          "zs_cuda_adamw");
}

extern "C" zs_status zs_cuda_adamw_m16(const zs_adamw_coef *c, float *master, uint16_t *m,
                                       uint16_t *v, const void *grad, zs_dtype grad_dt,
                                       void *param_out, zs_dtype param_dt, size_t n, void *stream) {
  return adamw_any<zs_bf16>(c, master, m, v, grad, grad_dt, param_out, param_dt, n, stream,
                            "zs_cuda_adamw_m16");
}
