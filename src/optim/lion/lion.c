/* Lion (lion.h). One element, in this float order (fmaf: one rounding):
 *
 *   g  = grad * gscale
 *   c  = fmaf(beta1, m, omb1 * g)                   (omb1 = 1 - beta1)
 *   p  = fmaf(neg_lr_wd, p, p)                      (neg_lr_wd = -lr * wd: decoupled decay)
 *   p  = fmaf(neg_lr, sign(c), p)                   (sign(0) = 0)
 *   m' = fmaf(beta2, m, omb2 * g)                   (omb2 = 1 - beta2)
 *
 * with m in the state dtype (bf16: rounded to nearest even on store). */
#include "optim/lion/lion.h"

#include <math.h>

#include "base/bf16.h"
#include "optim/codec.h"
#include "optim/lion/lion_coef.h"
#ifdef ZS_HAVE_CUDA
#include "optim/lion/lion_cuda.h"
#endif

typedef zs_lion_coef lion_coef;

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n);

static void prepare(void *coef, const zs_config *c, int64_t t, double gscale, int decay) {
  lion_coef *k = coef;
  k->head.kernel = kernel;
  k->gscale = (float)gscale;
  k->beta1 = c->optim.beta1;
  k->omb1 = (float)(1.0 - (double)c->optim.beta1);
  k->beta2 = c->optim.beta2;
  k->omb2 = (float)(1.0 - (double)c->optim.beta2);
  k->neg_lr = -c->optim.lr;
  k->neg_lr_wd = decay ? (float)(-(double)c->optim.lr * (double)c->optim.weight_decay) : 0.0f;
  (void)t;
}

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n) {
  const lion_coef *k = coef;
  float *m32 = state[0];
  uint16_t *m16 = state[0];
  for (size_t i = 0; i < n; i++) {
    const float gi = g[i] * k->gscale, m = sdt == ZS_BF16 ? zs_bf16_to_f32(m16[i]) : m32[i];
    const float c = fmaf(k->beta1, m, k->omb1 * gi);
    const float sg = c > 0 ? 1.0f : c < 0 ? -1.0f : 0.0f;
    const float pd = fmaf(k->neg_lr_wd, p[i], p[i]);
    p[i] = fmaf(k->neg_lr, sg, pd);
    const float mn = fmaf(k->beta2, m, k->omb2 * gi);
    if (sdt == ZS_BF16)
      m16[i] = zs_f32_to_bf16(mn);
    else
      m32[i] = mn;
  }
}

_Static_assert(sizeof(lion_coef) <= ZS_OPT_COEF_BYTES, "the coefficients fit the driver's room");

/* The host updates: the codec around the kernel, in every precision mode. */
static const zs_optimizer lion = {
    .prepare = prepare, .host_fn = zs_codec_host_fn, .dev_codec = ZS_OPT_CUDA(zs_lion_cuda)};

static const zs_opt_shape lion_shape = {1, 1, 1, {"exp_avg"}, {"m"}};

static const zs_opt_shape *shape(const zs_config *c) {
  (void)c;
  return &lion_shape;
}

const zs_opt_entry zs_opt_lion = {"lion", shape, NULL, &lion};
