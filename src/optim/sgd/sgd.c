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

typedef struct {
  float gscale, wd, momentum, omd, neg_lr;
  int first, nesterov;
} sgd_coef;

static void prepare(void *coef, const zs_config *c, int64_t t, double gscale, int decay) {
  sgd_coef *k = coef;
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

/* One host update per mode: the codec around the kernel. */
#define SGD_HOST(name, mode)                                                                       \
  static void name(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,     \
                   const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {                      \
    zs_codec_host_update(pool, kernel, mode, c, s, lo, len, grad, gdt, out, pdt);                  \
  }
static const zs_opt_mode modes[] = {{ZS_MASTER_FP32, ZS_F32},      {ZS_MASTER_FP32, ZS_BF16},
                                    {ZS_MASTER_PARAMS, ZS_F32},    {ZS_MASTER_PARAMS, ZS_BF16},
                                    {ZS_MASTER_REMAINDER, ZS_F32}, {ZS_MASTER_REMAINDER, ZS_BF16},
                                    {ZS_MASTER_LEAN, ZS_F32},      {ZS_MASTER_LEAN, ZS_BF16}};
SGD_HOST(h0, &modes[0])
SGD_HOST(h1, &modes[1])
SGD_HOST(h2, &modes[2])
SGD_HOST(h3, &modes[3])
SGD_HOST(h4, &modes[4])
SGD_HOST(h5, &modes[5])
SGD_HOST(h6, &modes[6])
SGD_HOST(h7, &modes[7])

static zs_status host_fn(const zs_opt_mode *m, zs_opt_host_fn *out) {
  static const zs_opt_host_fn fns[] = {h0, h1, h2, h3, h4, h5, h6, h7};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
    if (modes[i].master == m->master && modes[i].state_dt == m->state_dt) {
      *out = fns[i];
      return ZS_OK;
    }
  return zs_err(ZS_ERR_INVALID_ARG, "sgd: master mode %d with state dtype %d is not supported",
                m->master, (int)m->state_dt);
}

_Static_assert(sizeof(sgd_coef) <= ZS_OPT_COEF_BYTES, "the coefficients fit the driver's room");

static const zs_optimizer sgd = {"sgd", prepare, host_fn, NULL};

const zs_optimizer *zs_optimizer_sgd(void) {
  return &sgd;
}
