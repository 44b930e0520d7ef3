/* Lion on the CUDA device: lion.c's element, operation for operation (lion_cuda.h). */
#include "optim/codec_cuda.cuh"
#include "optim/lion/lion_cuda.h"

struct lion_op {
  zs_lion_coef k;
  template <typename TS>
  __device__ void operator()(float &p, TS *const *st, size_t i, float g) const {
    const float gi = __fmul_rn(g, k.gscale), m = zs_ld(&st[0][i]);
    const float c = __fmaf_rn(k.beta1, m, __fmul_rn(k.omb1, gi));
    const float sg = c > 0 ? 1.0f : c < 0 ? -1.0f : 0.0f;
    const float pd = __fmaf_rn(k.neg_lr_wd, p, p);
    p = __fmaf_rn(k.neg_lr, sg, pd);
    zs_st(&st[0][i], __fmaf_rn(k.beta2, m, __fmul_rn(k.omb2, gi)));
  }
};

extern "C" zs_status zs_lion_cuda(const void *coef, const zs_codec_dev *a) {
  const zs_lion_coef *c = (const zs_lion_coef *)coef;
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "zs_lion_cuda: coefficients are NULL");
  if (a && a->n && !a->state[0])
    return zs_err(ZS_ERR_INVALID_ARG, "zs_lion_cuda: no exp_avg array");
  return zs_codec_cuda(lion_op{*c}, a, "zs_lion_cuda");
}
