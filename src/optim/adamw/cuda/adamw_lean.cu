/* Lean-mode AdamW on the device (zs_config.master = ZS_MASTER_LEAN), bit-identical to the CPU
   paths (src/optim/adamw/cpu/adamw_lean.h): the float operations of adamw.cu's adamw_elem, written
   with the round-to-nearest intrinsics so nothing is contracted, and the random bits and the
   rounding of src/optim/lean.h, the very integer functions the CPU runs (host-and-device inline).
 */
#include "device/cuda/cuda_check.cuh"
#include "device/cuda/cuda_common.cuh"
#include "optim/adamw/cuda/adamw_cuda.h"
#include "optim/lean.h"

#define LEAN_THREADS 256

/* One element in adamw.h's order (adamw.cu's adamw_elem, the same operations); p, m, v in place. */
__device__ __forceinline__ void lean_adamw_elem(const zs_adamw_coef &c, float &p, float &m,
                                                float &v, float grad) {
  float g = __fmul_rn(grad, c.gscale);
  float mn = __fmaf_rn(c.beta1, m, __fmul_rn(c.omb1, g));
  float vn = __fmaf_rn(c.beta2, v, __fmul_rn(__fmul_rn(c.omb2, g), g));
  float den = __fadd_rn(__fsqrt_rn(__fmul_rn(vn, c.bc2)), c.eps);
  float upd = __fdiv_rn(__fmul_rn(mn, c.bc1), den);
  p = __fmaf_rn(c.neg_lr, __fmaf_rn(c.wd, p, upd), p);
  m = mn;
  v = vn;
}

/* TM: the moments' type (float, or zs_bf16 widened by zs_ld and rounded to nearest even by zs_st).
   Element i draws zs_lean_bits(k0, k1, elem0 + i). */
template <typename TM>
__global__ void lean_kernel(zs_adamw_coef c, zs_lean_key k, uint16_t *p, TM *m, TM *v,
                            const zs_bf16 *grad, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float pf = __uint_as_float((uint32_t)p[i] << 16), mi = zs_ld(&m[i]), vi = zs_ld(&v[i]);
    lean_adamw_elem(c, pf, mi, vi, zs_ld(&grad[i]));
    p[i] = zs_lean_round(__float_as_uint(pf), zs_lean_bits(k.k0, k.k1, k.elem0 + i));
    zs_st(&m[i], mi);
    zs_st(&v[i], vi);
  }
}

extern "C" zs_status zs_cuda_adamw_lean(const zs_adamw_coef *c, const zs_lean_key *k, uint16_t *p,
                                        void *m, void *v, int mbf16, const uint16_t *grad, size_t n,
                                        void *stream) {
  if (!c || !k) return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_adamw_lean: coefficients/key NULL");
  if (!n) return ZS_OK;
  if (!p || !m || !v || !grad)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_cuda_adamw_lean: NULL p/m/v/grad with n = %zu", n);
  cudaStream_t s = (cudaStream_t)stream;
  const zs_bf16 *g = (const zs_bf16 *)grad;
  if (mbf16)
    lean_kernel<zs_bf16><<<zs_grid(n, LEAN_THREADS), LEAN_THREADS, 0, s>>>(*c, *k, p, (zs_bf16 *)m,
                                                                           (zs_bf16 *)v, g, n);
  else
    lean_kernel<float>
        <<<zs_grid(n, LEAN_THREADS), LEAN_THREADS, 0, s>>>(*c, *k, p, (float *)m, (float *)v, g, n);
  return zs_cu_launched("zs_cuda_adamw_lean");
}
