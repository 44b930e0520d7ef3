/* AdamW as an optimizer module (optim/optimizer.h): torch.optim.AdamW's update in every precision
 * mode, with fused kernels per mode (cpu/, cuda/; the exact operation order is cpu/adamw.h). */
#include "optim/adamw/adamw.h"

#include <math.h>

#include "base/error.h"
#include "optim/adamw/adamw_dev.h"
#include "optim/adamw/host_update.h"

static void prepare(void *coef, const zs_config *c, int64_t t, double gscale, int decay) {
  zs_adamw_coef_make(coef, c->adamw.lr, c->adamw.beta1, c->adamw.beta2, c->adamw.eps,
                     decay ? c->adamw.weight_decay : 0.0f, t, gscale);
}

static zs_status host_fn(const zs_opt_mode *m, zs_opt_host_fn *out) {
  return zs_host_update_for(m->master, m->state_dt, out);
}

/* The mode's fused kernel on the device: in place on the bf16 params (and remainders) in the
   lean and remainder modes, else from the fp32 master to param (NULL: nowhere). */
static zs_status dev_update(zs_dev *d, const zs_opt_mode *m, const void *coef,
                            const zs_opt_state *s, const void *grad, zs_dtype gdt, void *param,
                            zs_dtype pdt, size_t n, void *stream) {
  const zs_adamw_coef *c = coef;
  if (m->master == ZS_MASTER_LEAN)
    return zs_adamw_dev_lean(d, c, &s->key, param, s->state[0], s->state[1], m->state_dt == ZS_BF16,
                             grad, n, stream);
  if (m->master == ZS_MASTER_REMAINDER)
    return zs_adamw_dev_rem(d, c, param, s->rem, s->state[0], s->state[1], m->state_dt, grad, n,
                            stream);
  if (m->state_dt == ZS_BF16)
    return zs_adamw_dev_m16(d, c, s->master, s->state[0], s->state[1], grad, gdt, param, pdt, n,
                            stream);
  return zs_adamw_dev(d, c, s->master, s->state[0], s->state[1], grad, gdt, param, pdt, n, stream);
}

static const zs_optimizer adamw = {
    .prepare = prepare, .host_fn = host_fn, .dev_update = dev_update};

static const zs_opt_shape adamw_shape = {1, 1, 2, {"exp_avg", "exp_avg_sq"}, {"m", "v"}};

static const zs_opt_shape *shape(const zs_config *c) {
  (void)c;
  return &adamw_shape;
}

/* eps > 0; fp32 gradients only where the fused kernels read them (not the lean and remainder
   modes, whose kernels take the bf16 gradients beside the bf16 params). */
static zs_status check(const zs_config *c) {
  if (!(c->optim.eps > 0) || !isfinite(c->optim.eps))
    return zs_err(ZS_ERR_INVALID_ARG, "optim.eps %g must be > 0", (double)c->optim.eps);
  if (c->grad_accum_fp32 && (c->master == ZS_MASTER_REMAINDER || c->master == ZS_MASTER_LEAN))
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "grad_accum_fp32 with AdamW in the %s mode: its fused kernels read bf16 "
                  "gradients; use master = ZS_MASTER_FP32, or grad_accum_fp32 = 0",
                  c->master == ZS_MASTER_LEAN ? "lean" : "remainder");
  return ZS_OK;
}

const zs_opt_entry zs_opt_adamw = {"adamw", shape, check, &adamw};
