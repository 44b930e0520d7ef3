/* SGD on the CUDA device: sgd.c's element, operation for operation (sgd_cuda.h). */
#include "optim/codec_cuda.cuh"
#include "optim/sgd/sgd_cuda.h"

struct sgd_op {
  zs_sgd_coef k;
  /* The buffer as stored (bf16: rounded) is what the step goes on with, as on the CPU. */
  template <typename TS>
  __device__ void operator()(float &p, TS *const *st, size_t i, float g) const {
    float d = __fmaf_rn(k.wd, p, __fmul_rn(g, k.gscale));
    if (k.momentum != 0) {
      const float b = k.first ? d : __fmaf_rn(k.momentum, zs_ld(&st[0][i]), __fmul_rn(k.omd, d));
      zs_st(&st[0][i], b);
      const float bs = zs_ld(&st[0][i]);
      d = k.nesterov ? __fmaf_rn(k.momentum, bs, d) : bs;
    }
    p = __fmaf_rn(k.neg_lr, d, p);
  }
};

extern "C" zs_status zs_sgd_cuda(const void *coef, const zs_codec_dev *a) {
  const zs_sgd_coef *c = (const zs_sgd_coef *)coef;
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "zs_sgd_cuda: coefficients are NULL");
  if (c->momentum != 0 && a && a->n && !a->state[0])
    return zs_err(ZS_ERR_INVALID_ARG, "zs_sgd_cuda: momentum without its buffer");
  return zs_codec_cuda(sgd_op{*c}, a, "zs_sgd_cuda");
}
