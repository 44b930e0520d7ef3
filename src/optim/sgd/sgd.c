/* SGD (sgd.h). One element of step t, in this float order (fmaf: one rounding):
 *
 *   g  = grad * gscale
 *   g  = fmaf(wd, p, g)                          (weight decay; wd = 0 for no-decay tensors)
 *   b' = t == 1 ? g : fmaf(momentum, b, omd * g) (omd = 1 - dampening; momentum > 0 only)
 *   g  = nesterov ? fmaf(momentum, b', g) : b'   (momentum > 0 only)
 *   p' = fmaf(neg_lr, g, p)
 *
 * with b the momentum buffer in the state dtype (bf16: rounded to nearest even on store, and b'
 * as stored is what the step uses, as torch does with a bf16 buffer). */
#include "optim/sgd/sgd.h"

#include <math.h>

#include "base/bf16.h"
#include "base/error.h"
#include "optim/codec.h"
#include "optim/sgd/sgd_coef.h"
#ifdef ZS_HAVE_CUDA
#include "optim/sgd/sgd_cuda.h"
#endif

typedef zs_sgd_coef sgd_coef;

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n);

static void prepare(void *coef, const zs_config *c, int64_t t, double gscale, int decay) {
  sgd_coef *k = coef;
  k->head.kernel = kernel;
  k->gscale = (float)gscale;
  k->wd = decay ? c->optim.weight_decay : 0.0f;
  k->momentum = c->sgd.momentum;
  k->omd = (float)(1.0 - (double)c->sgd.dampening);
  k->neg_lr = -c->optim.lr;
  k->first = t == 1;
  k->nesterov = c->sgd.nesterov != 0;
}

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n) {
  const sgd_coef *k = coef;
  float *b32 = state[0];
  uint16_t *b16 = state[0];
  for (size_t i = 0; i < n; i++) {
    float d = fmaf(k->wd, p[i], g[i] * k->gscale);
    if (k->momentum != 0) {
      float b = k->first ? d
                         : fmaf(k->momentum, sdt == ZS_BF16 ? zs_bf16_to_f32(b16[i]) : b32[i],
                                k->omd * d);
      if (sdt == ZS_BF16) {
        b16[i] = zs_f32_to_bf16(b);
        b = zs_bf16_to_f32(b16[i]);
      } else {
        b32[i] = b;
      }
      d = k->nesterov ? fmaf(k->momentum, b, d) : b;
    }
    p[i] = fmaf(k->neg_lr, d, p[i]);
  }
}

_Static_assert(sizeof(sgd_coef) <= ZS_OPT_COEF_BYTES, "the coefficients fit the driver's room");

/* The host updates: the codec around the kernel, in every precision mode. */
static const zs_optimizer sgd = {
    .prepare = prepare, .host_fn = zs_codec_host_fn, .dev_codec = ZS_OPT_CUDA(zs_sgd_cuda)};

/* torch keeps the momentum_buffer only with momentum. */
static const zs_opt_shape with_momentum = {0, 1, 1, {"momentum_buffer"}, {"buf"}};
static const zs_opt_shape plain = {0, 1, 0, {NULL}, {NULL}};

static const zs_opt_shape *shape(const zs_config *c) {
  return c->sgd.momentum != 0 ? &with_momentum : &plain;
}

/* torch.optim.SGD's rules: momentum >= 0, dampening finite, nesterov only with momentum and no
   dampening. */
static zs_status check(const zs_config *c) {
  if (!(c->sgd.momentum >= 0) || !isfinite(c->sgd.momentum))
    return zs_err(ZS_ERR_INVALID_ARG, "sgd.momentum %g must be finite and >= 0",
                  (double)c->sgd.momentum);
  if (!isfinite(c->sgd.dampening))
    return zs_err(ZS_ERR_INVALID_ARG, "sgd.dampening %g must be finite", (double)c->sgd.dampening);
  if (c->sgd.nesterov && (c->sgd.momentum <= 0 || c->sgd.dampening != 0))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "sgd.nesterov needs momentum > 0 and dampening 0 (momentum %g, dampening %g), "
                  "as torch.optim.SGD",
                  (double)c->sgd.momentum, (double)c->sgd.dampening);
  return ZS_OK;
}

const zs_opt_entry zs_opt_sgd = {"sgd", shape, check, &sgd};
