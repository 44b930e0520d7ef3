/* The optimizer driver of one engine (see optim.h): norm, clipping, and the choice of path. */
#include "optim/optim.h"

#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "device/cpu/engine_ops.h" /* zs_sq_bins_value */
#include "base/bf16_rem.h"
#include "base/round_hook.h"
#include "offload/pipeline.h"
#include "offload/worker_pool.h"
#include "optim/adamw/adamw_mt.h" /* zs_cpu_adamw_env_threads */
#include "optim/codec.h"          /* zs_codec_dev_of */

struct zs_optim {
  zs_optim_cfg cfg;
  zs_pool *offload_pool; /* workers bound to the arena's node: offloaded updates */
  zs_pool *cpu_pool;     /* CPU device: workers of the device-resident updates, or NULL */
  zs_offload_pipe pipe;  /* CUDA with offloaded state: the copy pipeline's staging */
  /* Per parameter group (zs_optim_prepare): its optimizer module and that module's update of
     host-resident state in the engine's precision mode. */
  const zs_optimizer *mod[ZS_MAX_PARAM_GROUPS];
  zs_opt_host_fn fn[ZS_MAX_PARAM_GROUPS];
  /* The module's coefficients, ZS_OPT_COEF_BYTES each: per parameter group with decay, then
     without (heap: no declared type, so the module's struct may live there). */
  unsigned char *coef;
  int lean;      /* the mode is ZS_MASTER_LEAN */
  uint64_t seed; /* zs_optim_prepare's config: its rounding_seed */
  int64_t t;     /* ... and the step */
};

zs_status zs_optim_create(const zs_optim_cfg *cfg, zs_optim **out) {
  if (!cfg || !cfg->dev || !out) return zs_err(ZS_ERR_INVALID_ARG, "zs_optim_create: NULL");
  if (cfg->offload_optimizer && !cfg->arena)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_optim_create: offloaded optimizer without an arena");
  if (!cfg->ops) return zs_err(ZS_ERR_INVALID_ARG, "zs_optim_create: no optimizer module");
  if (cfg->dev->kind == ZS_DEVICE_CUDA && ((!cfg->ops->dev_update && !cfg->ops->dev_codec) ||
                                           (cfg->ops->whole && !cfg->ops->dev_whole)))
    return zs_err(ZS_ERR_UNSUPPORTED, "zs_optim_create: the optimizer has no CUDA kernels: use "
                                      "it on the CPU device");
  zs_opt_host_fn hu = NULL; /* the module's update of host-resident state in this mode */
  ZS_CHECK(cfg->ops->host_fn(&cfg->mode, &hu));
  zs_optim *o = calloc(1, sizeof *o);
  if (!o) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the optimizer");
  o->cfg = *cfg;
  for (int g = 0; g < ZS_MAX_PARAM_GROUPS; g++)
    o->mod[g] = cfg->ops, o->fn[g] = hu;
  o->coef = calloc(2 * ZS_MAX_PARAM_GROUPS, ZS_OPT_COEF_BYTES);
  if (!o->coef) {
    zs_optim_destroy(o);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the optimizer");
  }
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
  free(o->coef);
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
  return zs_dev_sq_bins(d, bins, grad, o->cfg.grad_dtype, n, d->compute_stream);
}

zs_status zs_optim_norm_finish(zs_optim *o, uint64_t *bins, zs_coll *group, zs_coll *group2,
                               double scale, zs_optim_norm *out) {
  zs_dev *d = o->cfg.dev;
  uint64_t host[ZS_SQ_NWORDS];
  zs_coll *gs[2] = {group, group2};
  for (int i = 0; i < 2; i++) { /* integer sums: exact in any order */
    if (!gs[i]) continue;
    ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
    zs_status rc = zs_coll_all_reduce(gs[i], bins, bins, ZS_SQ_NWORDS, ZS_CDT_U64, d->comm_stream);
    if (rc == ZS_OK) rc = zs_coll_sync(gs[i], d->comm_stream);
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

/* Coefficients of group g, with weight decay (decay 1) or without. */
static void *coef_of(const zs_optim *o, int g, int decay) {
  return o->coef + (size_t)(2 * g + !decay) * ZS_OPT_COEF_BYTES;
}

zs_status zs_optim_prepare(zs_optim *o, const zs_config *cfgs, int ngroups, int64_t t,
                           double gscale) {
  for (int g = 0; g < ngroups && g < ZS_MAX_PARAM_GROUPS; g++) {
    const zs_optimizer *m = zs_optimizer_for(&cfgs[g]);
    if (m != o->mod[g]) {
      if (o->cfg.dev->kind == ZS_DEVICE_CUDA &&
          ((!m->dev_update && !m->dev_codec) || (m->whole && !m->dev_whole)))
        return zs_err(ZS_ERR_UNSUPPORTED,
                      "zs_optim_prepare: group %d's optimizer '%s' has no "
                      "CUDA kernels yet",
                      g, zs_opt_name_of(&cfgs[g]));
      ZS_CHECK(m->host_fn(&o->cfg.mode, &o->fn[g]));
      o->mod[g] = m;
    }
    m->prepare(coef_of(o, g, 1), &cfgs[g], t, gscale, 1);
    m->prepare(coef_of(o, g, 0), &cfgs[g], t, gscale, 0);
  }
  o->lean = o->cfg.mode.master == ZS_MASTER_LEAN;
  o->seed = cfgs[0].rounding_seed;
  o->t = t;
  return ZS_OK;
}

/* The state of s as the module's updates read it: in lean mode with the rounding's key of
   (seed, t, unit, element). */
static zs_opt_state seg_state(const zs_optim *o, const zs_optim_seg *s) {
  zs_opt_state st = {s->master, {NULL}, s->rem, {0, 0, 0}};
  for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
    st.state[i] = s->state[i];
  if (o->lean) st.key = zs_lean_key_make(o->seed, o->t, s->unit, (uint64_t)s->elem);
  return st;
}

/* One call of the host update through the copy pipeline (zs_offload_stream's ctx). */
typedef struct {
  zs_pool *pool;
  zs_opt_host_fn fn;
  const void *c;
  const zs_opt_state *s;
  zs_dtype gdt, pdt;
} host_call;

static void host_chunk(void *ctx, size_t lo, size_t len, const void *grad, void *out) {
  const host_call *h = ctx;
  h->fn(h->pool, h->c, h->s, lo, len, grad, h->gdt, out, h->pdt);
}

/* What the update of s reads as its gradient: the whole step's result (fp32) where its group's
   optimizer needs whole tensors, else the reduced gradient. */
static const void *seg_grad(const zs_optim_seg *s) {
  return s->dir ? (const void *)s->dir : s->grad;
}
static zs_dtype seg_gdt(const zs_optim *o, const zs_optim_seg *s) {
  return s->dir ? ZS_F32 : o->cfg.grad_dtype;
}

/* The host update of s's state in the arena, through the copy pipeline. */
static zs_status offload_update(zs_optim *o, const void *c, const zs_opt_state *st,
                                const zs_optim_seg *s, zs_dtype pd, void *out) {
  const zs_dtype gd = seg_gdt(o, s);
  host_call h = {o->offload_pool, o->fn[s->group], c, st, gd, pd};
  return zs_offload_stream(o->cfg.dev, &o->pipe, host_chunk, &h, seg_grad(s), gd, out, pd,
                           s->params_host, zs_opt_reads_params(o->cfg.mode.master), s->n);
}

/* The module's device update on the CUDA device; param: out, or the bf16 params in place. */
static zs_status dev_update(zs_optim *o, const void *c, const zs_opt_state *st,
                            const zs_optim_seg *s, void *param, void *stream) {
  const zs_dtype pd = o->cfg.param_dtype;
  const zs_optimizer *m = o->mod[s->group];
  if (m->dev_codec) {
    const zs_codec_dev a =
        zs_codec_dev_of(&o->cfg.mode, st, seg_grad(s), seg_gdt(o, s), param, pd, s->n, stream);
    return m->dev_codec(c, &a);
  }
  return m->dev_update(o->cfg.dev, &o->cfg.mode, c, st, seg_grad(s), seg_gdt(o, s), param, pd, s->n,
                       stream);
}

/* State on the CUDA device with the params host-resident (ZS_OFFLOAD_PARAMS alone): the params
   go through a device scratch buffer, read first in the modes whose bf16 params are the master,
   then one copy to the host shard. */
static zs_status dev_update_host_params(zs_optim *o, const void *c, const zs_opt_state *st,
                                        const zs_optim_seg *s) {
  zs_dev *d = o->cfg.dev;
  const size_t bytes = s->n * zs_dtype_size(o->cfg.param_dtype);
  void *tmp = NULL, *cs = d->compute_stream;
  ZS_CHECK(o->cfg.scratch.alloc(o->cfg.scratch.ctx, bytes, &tmp, cs));
  zs_status rc = ZS_OK;
  if (zs_opt_reads_params(o->cfg.mode.master)) rc = zs_dev_copy(d, tmp, s->param, bytes, cs);
  if (rc == ZS_OK) rc = dev_update(o, c, st, s, tmp, cs);
  if (rc == ZS_OK) rc = zs_dev_copy(d, s->param, tmp, bytes, cs);
  o->cfg.scratch.free(o->cfg.scratch.ctx, tmp, bytes, cs);
  return rc;
}

/* The test hook (base/round_hook.h) on an fp32 master with bf16 params: the update writes no
   compute copy, then the copy is the new master rounded ties away. CPU device, state and params
   on the device only. */
static zs_status update_hooked(zs_optim *o, const void *c, const zs_opt_state *st,
                               const zs_optim_seg *s) {
  if (o->cfg.dev->kind != ZS_DEVICE_CPU || s->state_host || s->params_host)
    return zs_err(
        ZS_ERR_INVALID_ARG,
        "zs_optim_update: the ties-away test hook runs on the CPU device without offload");
  o->fn[s->group](o->cpu_pool, c, st, 0, s->n, seg_grad(s), seg_gdt(o, s), NULL, ZS_BF16);
  uint16_t *out = s->param;
  for (size_t i = 0; i < s->n; i++)
    out[i] = zs_f32_to_bf16_ta(s->master[i]);
  return ZS_OK;
}

zs_status zs_optim_update(zs_optim *o, const zs_optim_seg *s) {
  zs_dev *d = o->cfg.dev;
  const zs_dtype pd = o->cfg.param_dtype;
  if (s->group < 0 || s->group >= ZS_MAX_PARAM_GROUPS)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_optim_update: parameter group %d", s->group);
  const void *c = coef_of(o, s->group, !s->no_weight_decay);
  const int in_place = zs_opt_reads_params(o->cfg.mode.master);
  if (in_place && (pd != ZS_BF16 || (!o->lean && !s->rem)))
    return zs_err(
        ZS_ERR_INVALID_ARG,
        "zs_optim_update: the remainder and lean modes need bf16 params (and remainders)");
  /* The params are updated in place (remainder, lean), or are the master (ZS_MASTER_PARAMS with
     params and state on one tier: nothing to write after), or receive the new master. */
  void *out = in_place || s->param != (void *)s->master ? s->param : NULL;
  const zs_opt_state st = seg_state(o, s);
  if (!in_place && pd == ZS_BF16 && out && zs_hook_fp32_ties_away())
    return update_hooked(o, c, &st, s);
  if (s->state_host) return offload_update(o, c, &st, s, pd, out);
  if (d->kind == ZS_DEVICE_CUDA) {
    if (s->params_host) return dev_update_host_params(o, c, &st, s);
    return dev_update(o, c, &st, s, out, d->compute_stream);
  }
  o->fn[s->group](o->cpu_pool, c, &st, 0, s->n, seg_grad(s), seg_gdt(o, s), out, pd);
  return ZS_OK;
}

void zs_optim_whole_channels(const zs_optim *o, int g, int *in, int *out) {
  const zs_optimizer *m = g >= 0 && g < ZS_MAX_PARAM_GROUPS ? o->mod[g] : NULL;
  *in = m && m->whole ? m->whole_in : 0;
  *out = m && m->whole ? m->whole_out : 0;
}

void zs_optim_gather(const zs_optim *o, const zs_optim_seg *s, float *const *in) {
  const zs_opt_state st = seg_state(o, s);
  o->mod[s->group]->gather(coef_of(o, s->group, !s->no_weight_decay), &st, o->cfg.mode.state_dt,
                           s->grad, o->cfg.grad_dtype, in, s->n);
}

size_t zs_optim_whole_work(const zs_optim *o, int g, int64_t rows, int64_t cols) {
  return o->mod[g]->work_floats(rows, cols);
}

void zs_optim_whole(const zs_optim *o, int g, int decay, float *const *ch, int64_t rows,
                    int64_t cols, float *work) {
  o->mod[g]->whole(coef_of(o, g, decay), ch, rows, cols, work);
}

void zs_optim_store(const zs_optim *o, const zs_optim_seg *s, const float *const *out) {
  const zs_optimizer *m = o->mod[s->group];
  if (m->store)
    m->store(coef_of(o, s->group, !s->no_weight_decay), s->state, o->cfg.mode.state_dt, out, s->n);
}

zs_status zs_optim_gather_dev(const zs_optim *o, const zs_optim_seg *s, float *const *in,
                              void *stream) {
  const zs_opt_state st = seg_state(o, s);
  return o->mod[s->group]->dev_gather(coef_of(o, s->group, !s->no_weight_decay), &st,
                                      o->cfg.mode.state_dt, s->grad, o->cfg.grad_dtype, in, s->n,
                                      stream);
}

zs_status zs_optim_whole_dev(const zs_optim *o, int g, int decay, float *const *ch, int64_t rows,
                             int64_t cols, float *work, void *blas, void *stream) {
  const zs_optimizer *m = o->mod[g];
  if (m->dev_blas && !blas)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_optim_whole_dev: the module needs a cuBLAS handle");
  return m->dev_whole(coef_of(o, g, decay), ch, rows, cols, work, m->dev_blas ? blas : NULL,
                      stream);
}

int zs_optim_whole_blas(const zs_optim *o, int g) {
  const zs_optimizer *m = o->mod[g];
  return m && m->whole && m->dev_blas;
}

zs_status zs_optim_store_dev(const zs_optim *o, const zs_optim_seg *s, const float *const *out,
                             void *stream) {
  const zs_optimizer *m = o->mod[s->group];
  if (!m->dev_store) return ZS_OK;
  return m->dev_store(coef_of(o, s->group, !s->no_weight_decay), s->state, o->cfg.mode.state_dt,
                      out, s->n, stream);
}
