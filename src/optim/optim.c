/* The optimizer of one engine (see optim.h): norm, clipping, and the choice of AdamW path. */
#include "optim/optim.h"

#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "device/cpu/engine_ops.h" /* zs_sq_bins_value */
#include "base/bf16_rem.h"
#include "base/round_hook.h"
#include "offload/pipeline.h"
#include "offload/worker_pool.h"
#include "optim/adamw/adamw_dev.h"
#include "optim/adamw/adamw_mt.h"
#include "optim/adamw/host_update.h"

struct zs_optim {
  zs_optim_cfg cfg;
  zs_pool *offload_pool;         /* workers bound to the arena's node: offloaded updates */
  zs_pool *cpu_pool;             /* CPU device: workers of the device-resident updates, or NULL */
  zs_offload_pipe pipe;          /* CUDA with offloaded state: the copy pipeline's staging */
  zs_host_update_fn host_update; /* the mode's AdamW of host-resident state (chosen at create) */
  zs_adamw_coef decay, nodecay;
  int lean;      /* zs_optim_prepare's config: master = ZS_MASTER_LEAN */
  uint64_t seed; /* ... its rounding_seed */
  int64_t t;     /* ... and the step */
};

zs_status zs_optim_create(const zs_optim_cfg *cfg, zs_optim **out) {
  if (!cfg || !cfg->dev || !out) return zs_err(ZS_ERR_INVALID_ARG, "zs_optim_create: NULL");
  if (cfg->offload_optimizer && !cfg->arena)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_optim_create: offloaded optimizer without an arena");
  zs_host_update_fn hu = NULL; /* the mode's AdamW of host-resident state, every mode */
  ZS_CHECK(zs_host_update_for(cfg->master, cfg->moment_dtype, &hu));
  zs_optim *o = calloc(1, sizeof *o);
  if (!o) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the optimizer");
  o->cfg = *cfg;
  o->host_update = hu;
  zs_status rc = ZS_OK;
  if (cfg->offload_optimizer) {
    ZS_CHECK_GOTO(zs_pool_create_shared(cfg->offload_threads, zs_host_arena_node(cfg->arena),
                                        cfg->share_idx, cfg->share_cnt, &o->offload_pool),
                  rc, fail);
    ZS_CHECK_GOTO(zs_offload_pipe_init(&o->pipe, cfg->dev, cfg->arena, cfg->offload_chunk), rc,
                  fail);
  }
  if (cfg->dev->kind == ZS_DEVICE_CPU) {
    const int n = zs_cpu_adamw_env_threads();
    if (n > 1 && zs_pool_create(n, ZS_POOL_UNBOUND, &o->cpu_pool) != ZS_OK)
      o->cpu_pool = NULL; /* as without ZS_ADAMW_THREADS: the calling thread */
  }
  *out = o;
  return ZS_OK;
fail:
  zs_optim_destroy(o);
  return rc;
}

void zs_optim_destroy(zs_optim *o) {
  if (!o) return;
  if (o->cfg.arena) zs_offload_pipe_free(&o->pipe, o->cfg.dev, o->cfg.arena);
  zs_pool_destroy(o->offload_pool);
  zs_pool_destroy(o->cpu_pool);
  free(o);
}

const char *zs_optim_info(const zs_optim *o) {
  return o && o->offload_pool ? zs_pool_info(o->offload_pool) : "";
}

void zs_optim_workers(const zs_optim *o, int *offload, int *cpu) {
  if (offload) *offload = o && o->offload_pool ? zs_pool_size(o->offload_pool) : 0;
  if (cpu) *cpu = o && o->cpu_pool ? zs_pool_size(o->cpu_pool) : 0;
}

zs_status zs_optim_norm_start(zs_optim *o, uint64_t *bins) {
  zs_dev *d = o->cfg.dev;
  return zs_dev_zero(d, bins, ZS_OPTIM_NORM_BYTES, d->compute_stream);
}

zs_status zs_optim_norm_add(zs_optim *o, uint64_t *bins, const void *grad, size_t n) {
  zs_dev *d = o->cfg.dev;
  return zs_dev_sq_bins(d, bins, grad, o->cfg.param_dtype, n, d->compute_stream);
}

zs_status zs_optim_norm_finish(zs_optim *o, uint64_t *bins, zs_coll *group, double scale,
                               zs_optim_norm *out) {
  zs_dev *d = o->cfg.dev;
  uint64_t host[ZS_SQ_NWORDS];
  if (group) {
    ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
    zs_status rc = zs_coll_all_reduce(group, bins, bins, ZS_SQ_NWORDS, ZS_CDT_U64, d->comm_stream);
    if (rc == ZS_OK) rc = zs_coll_sync(group, d->comm_stream);
    if (rc != ZS_OK) return zs_err_wrap(rc, "gradient-norm all-reduce");
  }
  ZS_CHECK(zs_dev_to_host(d, host, bins, ZS_OPTIM_NORM_BYTES));
  out->norm = sqrt(zs_sq_bins_value(host)) * scale;
  out->nonfinite = host[ZS_SQ_NBINS];
  return ZS_OK;
}

double zs_optim_clip_coef(double norm, double max_grad_norm) {
  return (max_grad_norm > 0 && norm > max_grad_norm) ? max_grad_norm / (norm + 1e-6) : 1.0;
}

void zs_optim_prepare(zs_optim *o, const zs_config *c, int64_t t, double gscale) {
  zs_adamw_coef_make(&o->decay, c->adamw.lr, c->adamw.beta1, c->adamw.beta2, c->adamw.eps,
                     c->adamw.weight_decay, t, gscale);
  zs_adamw_coef_make(&o->nodecay, c->adamw.lr, c->adamw.beta1, c->adamw.beta2, c->adamw.eps, 0.0f,
                     t, gscale);
  o->lean = c->master == ZS_MASTER_LEAN;
  o->seed = c->rounding_seed;
  o->t = t;
}

/* One call of the host tier's update through the copy pipeline (zs_offload_stream's ctx). */
typedef struct {
  zs_pool *pool;
  zs_host_update_fn fn;
  const zs_adamw_coef *c;
  const zs_host_state *s;
  zs_dtype gdt, pdt;
} host_call;

static void host_chunk(void *ctx, size_t lo, size_t len, const void *grad, void *out) {
  const host_call *h = ctx;
  h->fn(h->pool, h->c, h->s, lo, len, grad, h->gdt, out, h->pdt);
}

/* The host tier's update of s's state in the arena, through the copy pipeline. */
static zs_status offload_update(zs_optim *o, const zs_adamw_coef *c, const zs_host_state *hs,
                                const zs_optim_seg *s, zs_dtype gdt, void *out, zs_dtype pdt,
                                int params_in) {
  host_call h = {o->offload_pool, o->host_update, c, hs, gdt, pdt};
  return zs_offload_stream(o->cfg.dev, &o->pipe, host_chunk, &h, s->grad, gdt, out, pdt,
                           s->params_host, params_in, s->n);
}

/* The state of s as the host tier's update reads it: in lean mode with the rounding's key of
   (seed, t, unit, element). */
static zs_host_state host_state(const zs_optim *o, const zs_optim_seg *s) {
  zs_host_state hs = {s->master, s->m, s->v, s->rem, {0, 0, 0}};
  if (o->lean) hs.key = zs_lean_key_make(o->seed, o->t, s->unit, (uint64_t)s->elem);
  return hs;
}

/* The remainder and lean modes on the CUDA device with the state there: the mode's kernel, in
   place on the params (and remainders). */
static zs_status dev_update_inplace(zs_optim *o, const zs_adamw_coef *c, const zs_optim_seg *s,
                                    void *param, void *stream) {
  zs_dev *d = o->cfg.dev;
  if (o->lean) {
    const zs_lean_key k = zs_lean_key_make(o->seed, o->t, s->unit, (uint64_t)s->elem);
    return zs_adamw_dev_lean(d, c, &k, param, s->m, s->v, o->cfg.moment_dtype == ZS_BF16, s->grad,
                             s->n, stream);
  }
  return zs_adamw_dev_rem(d, c, param, s->rem, s->m, s->v, o->cfg.moment_dtype, s->grad, s->n,
                          stream);
}

/* The modes whose bf16 params are the master (ZS_MASTER_REMAINDER: with the remainders s->rem;
   ZS_MASTER_LEAN: stochastic rounding), updated in place: state in the host arena -> the copy
   pipeline with the mode's host update (on CUDA the params come down and go back up with each
   chunk, pipeline.h); state on the CUDA device -> its kernel, on params that are host-resident
   (ZS_OFFLOAD_PARAMS alone) through a device scratch copy; the CPU device -> the host update. */
static zs_status update_params_master(zs_optim *o, const zs_adamw_coef *c, const zs_optim_seg *s) {
  zs_dev *d = o->cfg.dev;
  if (o->cfg.param_dtype != ZS_BF16 || (!o->lean && !s->rem))
    return zs_err(
        ZS_ERR_INVALID_ARG,
        "zs_optim_update: the remainder and lean modes need bf16 params (and remainders)");
  const zs_host_state hs = host_state(o, s);
  if (s->state_host) return offload_update(o, c, &hs, s, ZS_BF16, s->param, ZS_BF16, 1);
  if (d->kind != ZS_DEVICE_CUDA) {
    o->host_update(o->cpu_pool, c, &hs, 0, s->n, s->grad, ZS_BF16, s->param, ZS_BF16);
    return ZS_OK;
  }
  void *cs = d->compute_stream;
  if (!s->params_host) return dev_update_inplace(o, c, s, s->param, cs);
  const size_t bytes = s->n * 2;
  void *tmp = NULL;
  ZS_CHECK(o->cfg.scratch.alloc(o->cfg.scratch.ctx, bytes, &tmp, cs));
  zs_status rc = zs_dev_copy(d, tmp, s->param, bytes, cs);
  if (rc == ZS_OK) rc = dev_update_inplace(o, c, s, tmp, cs);
  if (rc == ZS_OK) rc = zs_dev_copy(d, s->param, tmp, bytes, cs);
  o->cfg.scratch.free(o->cfg.scratch.ctx, tmp, bytes, cs);
  return rc;
}

/* The device's AdamW in the mode's moment dtype (CUDA): out NULL when the master is the params. */
static zs_status dev_adamw(zs_optim *o, const zs_adamw_coef *c, const zs_optim_seg *s, void *out,
                           void *stream) {
  zs_dev *d = o->cfg.dev;
  const zs_dtype pd = o->cfg.param_dtype;
  if (o->cfg.moment_dtype == ZS_BF16)
    return zs_adamw_dev_m16(d, c, s->master, s->m, s->v, s->grad, pd, out, pd, s->n, stream);
  return zs_adamw_dev(d, c, s->master, s->m, s->v, s->grad, pd, out, pd, s->n, stream);
}

/* Device AdamW whose params go to a host-resident shard (ZS_OFFLOAD_PARAMS alone on CUDA): the
   update runs into a device scratch buffer, then one copy to the host shard. */
static zs_status adamw_to_host(zs_optim *o, const zs_adamw_coef *c, const zs_optim_seg *s) {
  zs_dev *d = o->cfg.dev;
  const size_t bytes = s->n * zs_dtype_size(o->cfg.param_dtype);
  void *tmp = NULL, *cs = d->compute_stream;
  ZS_CHECK(o->cfg.scratch.alloc(o->cfg.scratch.ctx, bytes, &tmp, cs));
  zs_status rc = dev_adamw(o, c, s, tmp, cs);
  if (rc == ZS_OK) rc = zs_dev_copy(d, s->param, tmp, bytes, cs);
  o->cfg.scratch.free(o->cfg.scratch.ctx, tmp, bytes, cs);
  return rc;
}

/* The test hook (base/round_hook.h) on an fp32 master with bf16 params: the update writes no
   compute copy, then the copy is the new master rounded ties away. CPU device, state and params
   on the device only. */
static zs_status update_hooked(zs_optim *o, const zs_adamw_coef *c, const zs_optim_seg *s) {
  if (o->cfg.dev->kind != ZS_DEVICE_CPU || s->state_host || s->params_host)
    return zs_err(
        ZS_ERR_INVALID_ARG,
        "zs_optim_update: the ties-away test hook runs on the CPU device without offload");
  if (o->cfg.moment_dtype == ZS_BF16)
    zs_cpu_adamw_m16_ex(o->cpu_pool, ZS_ADAMW_ISA_AUTO, c, s->master, s->m, s->v, s->grad, ZS_BF16,
                        NULL, ZS_BF16, s->n);
  else
    zs_cpu_adamw_mt(o->cpu_pool, c, s->master, s->m, s->v, s->grad, ZS_BF16, NULL, ZS_BF16, s->n);
  uint16_t *out = s->param;
  for (size_t i = 0; i < s->n; i++)
    out[i] = zs_f32_to_bf16_ta(s->master[i]);
  return ZS_OK;
}

zs_status zs_optim_update(zs_optim *o, const zs_optim_seg *s) {
  zs_dev *d = o->cfg.dev;
  const zs_dtype pd = o->cfg.param_dtype;
  const zs_adamw_coef *c = s->no_weight_decay ? &o->nodecay : &o->decay;
  if (o->lean || s->rem) return update_params_master(o, c, s);
  /* ZS_MASTER_PARAMS (params and state on one tier): the params are the master, updated in
     place; nothing to write after. */
  void *out = s->param == (void *)s->master ? NULL : s->param;
  if (pd == ZS_BF16 && out && zs_hook_fp32_ties_away()) return update_hooked(o, c, s);
  const zs_host_state hs = host_state(o, s);
  if (s->state_host) return offload_update(o, c, &hs, s, pd, out, pd, 0);
  if (d->kind == ZS_DEVICE_CUDA) {
    if (s->params_host) return adamw_to_host(o, c, s);
    return dev_adamw(o, c, s, out, d->compute_stream);
  }
  o->host_update(o->cpu_pool, c, &hs, 0, s->n, s->grad, pd, out, pd);
  return ZS_OK;
}
