/* Configuration defaults (with environment overrides) and validation. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shard/plan.h"

/* Reads an integer environment override; leaves *v untouched when unset or malformed. */
static void env_int(const char *name, int *v) {
  const char *s = getenv(name);
  if (!s || !*s) return;
  char *end = NULL;
  long x = strtol(s, &end, 10);
  if (end && *end == '\0') *v = (int)x;
}

size_t zs_env_size(const char *name, size_t dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end = NULL;
  unsigned long long x = strtoull(s, &end, 10);
  return (end && *end == '\0') ? (size_t)x : dflt;
}

void zs_config_default(zs_config *c) {
  if (!c) return;
  memset(c, 0, sizeof *c);
  c->stage = 3;
  c->shard_params = c->shard_grads = c->shard_optimizer = -1; /* as the stage says */
  c->device = ZS_DEVICE_CPU;
  c->device_index = -1;
  c->param_dtype = ZS_F32;
  c->reduce_dtype = ZS_F32;
  c->offload = 0;
  c->deterministic = 0;
  c->prefetch_units = 1;
  c->bucket_bytes = 0;
  c->max_live_bytes = 0;
  c->shard_group_size = 0;
  c->comm_timeout_s = 300.0;
  c->adamw.lr = 1e-3f;
  c->adamw.beta1 = 0.9f;
  c->adamw.beta2 = 0.999f;
  c->adamw.eps = 1e-8f;
  c->adamw.weight_decay = 0.01f;
  c->adamw.max_grad_norm = 1.0f;
  env_int("ZS_STAGE", &c->stage);
  env_int("ZS_PREFETCH_UNITS", &c->prefetch_units);
  env_int("ZS_DETERMINISTIC", &c->deterministic);
  const char *t = getenv("ZS_COMM_TIMEOUT_S");
  if (t && *t) {
    char *end = NULL;
    double x = strtod(t, &end);
    if (end && *end == '\0') c->comm_timeout_s = x;
  }
}

zs_status zs_config_validate(const zs_config *c) {
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "config is NULL: fill one with zs_config_default()");
  if (c->stage < 0 || c->stage > 3)
    return zs_err(ZS_ERR_INVALID_ARG, "stage %d is not a stage: use 0..3", c->stage);
  if (c->device != ZS_DEVICE_CPU && c->device != ZS_DEVICE_CUDA)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "device %d is not a device: use ZS_DEVICE_CPU or ZS_DEVICE_CUDA", (int)c->device);
  if (c->param_dtype != ZS_F32 && c->param_dtype != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG, "param_dtype %d is not a dtype: use ZS_F32 or ZS_BF16",
                  (int)c->param_dtype);
  if (c->reduce_dtype != ZS_F32 && c->reduce_dtype != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG, "reduce_dtype %d is not a dtype: use ZS_F32 or ZS_BF16",
                  (int)c->reduce_dtype);
  if (c->offload & ~(unsigned)(ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "offload 0x%x has unknown bits: use ZS_OFFLOAD_OPTIMIZER | "
                  "ZS_OFFLOAD_PARAMS",
                  c->offload);
  const int sw[3] = {c->shard_params, c->shard_grads, c->shard_optimizer};
  static const char *const swn[3] = {"shard_params", "shard_grads", "shard_optimizer"};
  for (int i = 0; i < 3; i++)
    if (sw[i] < -1 || sw[i] > 1)
      return zs_err(ZS_ERR_INVALID_ARG, "%s %d: use 1 (sharded), 0 (full) or -1 (as the stage)",
                    swn[i], sw[i]);
  zs_plan plan; /* the combination of switches and offload bits must make a plan */
  ZS_CHECK(zs_plan_make(c, 1, &plan));
  if (c->prefetch_units < 0)
    return zs_err(ZS_ERR_INVALID_ARG, "prefetch_units %d is negative: use 0 (none) or more",
                  c->prefetch_units);
  if (c->shard_group_size < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "shard_group_size %d is negative: use 0 (the world) or a "
                  "divisor of the world size",
                  c->shard_group_size);
  if (!(c->comm_timeout_s > 0) || !isfinite(c->comm_timeout_s))
    return zs_err(ZS_ERR_INVALID_ARG, "comm_timeout_s %g must be a positive number of seconds",
                  c->comm_timeout_s);
  if (!isfinite(c->adamw.lr) || c->adamw.lr < 0)
    return zs_err(ZS_ERR_INVALID_ARG, "adamw.lr %g must be finite and >= 0", (double)c->adamw.lr);
  if (!(c->adamw.beta1 >= 0 && c->adamw.beta1 < 1) || !(c->adamw.beta2 >= 0 && c->adamw.beta2 < 1))
    return zs_err(ZS_ERR_INVALID_ARG, "adamw betas (%g, %g) must lie in [0, 1)",
                  (double)c->adamw.beta1, (double)c->adamw.beta2);
  if (!(c->adamw.eps > 0) || !isfinite(c->adamw.eps))
    return zs_err(ZS_ERR_INVALID_ARG, "adamw.eps %g must be > 0", (double)c->adamw.eps);
  if (!(c->adamw.weight_decay >= 0) || !isfinite(c->adamw.weight_decay))
    return zs_err(ZS_ERR_INVALID_ARG, "adamw.weight_decay %g must be finite and >= 0",
                  (double)c->adamw.weight_decay);
  if (isnan(c->adamw.max_grad_norm))
    return zs_err(ZS_ERR_INVALID_ARG, "adamw.max_grad_norm is NaN: use > 0 to clip, <= 0 for none");
  return ZS_OK;
}
