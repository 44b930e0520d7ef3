/* zs_plan_model and zs_plan_placement: the public face of the planner (shard/plan.c,
 * shard/plan_fit.c) for bare unit sizes; plan_units_api.c is the one for units of tensors. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "engine/engine_internal.h"
#include "optim/optimizer.h"
#include "shard/plan_fit.h"
#include "shard/tp_slice.h"

zs_status zs_plan_dp_ranks(const char *fn, const zs_config *c, int world_size, int *dp) {
  if (world_size % c->tp_size)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "%s: tp_size %d does not divide the world size %d (zs_engine_create refuses it)",
                  fn, c->tp_size, world_size);
  *dp = world_size / c->tp_size;
  return ZS_OK;
}

/* The checks zs_plan_model and zs_plan_placement share, the completed config into c and the
   data-parallel ranks into *world_size. */
static zs_status check_args(const char *fn, const zs_config *cfg, int *world_size,
                            const int64_t *unit_numel, int nunits, const void *out, zs_config *c) {
  if (!cfg || !unit_numel || !out)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: cfg, unit_numel or out is NULL", fn);
  if (nunits < 1 || *world_size < 1)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: %d units on %d ranks: both must be at least 1", fn,
                  nunits, *world_size);
  for (int i = 0; i < nunits; i++)
    if (unit_numel[i] < 0)
      return zs_err(ZS_ERR_INVALID_ARG, "%s: unit %d has %lld elements: must be >= 0", fn, i,
                    (long long)unit_numel[i]);
  ZS_CHECK(zs_config_complete(cfg, c));
  ZS_CHECK(zs_config_validate(c));
  return zs_plan_dp_ranks(fn, c, *world_size, world_size);
}

/* What whole_bound needs: the configuration's optimizer and the tp size. */
typedef struct {
  const zs_optimizer *m;
  int T;
} whole_arg;

/* The planner's whole-tensor buffers of a unit (plan_units.h) when the configuration's optimizer
   needs tensors whole: the unit as one tensor, every input channel over the padded unit, and the
   largest scratch of any shape of its size; with tp_size T > 1 of the whole matrix a slice of
   that size may be, with its join's floats (tp_slice.h: a dim-1 split's, the larger). Exact for a
   unit of one square matrix (the engine's zs_engine_whole_plan) without tp, a bound otherwise. */
static size_t whole_bound(const void *arg, int i, size_t numel, size_t padded) {
  const whole_arg *w = arg;
  (void)i;
  if (!numel) return 0;
  const size_t T = (size_t)w->T,
               join = zs_tp_join_floats(ZS_TP_SPLIT_DIM1, w->T, numel, w->m->whole_in);
  return padded * (size_t)w->m->whole_in + zs_optimizer_work_bound(w->m, numel * T) + join;
}

/* With ckpt_async, a bound on the bytes one rank stages in a save (ckpt_common.c's writer ranges:
   each unit's optimizer range, split among the ranks that hold it; the largest piece of each
   unit, times the arrays its segments hold, summed), capped by ckpt_staging_bytes. */
static size_t staging_bound(const zs_config *c, int world, const zs_plan_units *us) {
  if (!c->ckpt_async) return 0;
  zs_plan p;
  const int g = c->shard_group_size ? c->shard_group_size : world;
  if (zs_plan_make(c, g, &p) != ZS_OK) return 0;
  const int sharded = p.table.s[ZS_ST_MASTER].sharded;
  const uint64_t cnt = (uint64_t)(sharded ? world / g : world);
  const int ns = zs_opt_shape_of(c)->nstate;
  uint64_t floats = 0;
  for (int i = 0; i < us->n; i++) {
    const uint64_t n = zs_plan_unit_numel(us, i), P = zs_plan_padded(&p, n);
    const uint64_t len = sharded ? (P / (uint64_t)g < n ? P / (uint64_t)g : n) : n;
    const int kept = zs_plan_unit_nstate(us, i) < ns ? zs_plan_unit_nstate(us, i) : ns;
    floats += (len + cnt - 1) / cnt * (uint64_t)(1 + (zs_plan_unit_frozen(us, i) ? 0 : kept));
  }
  const uint64_t bytes = floats * 4;
  return c->ckpt_staging_bytes && c->ckpt_staging_bytes < bytes ? c->ckpt_staging_bytes
                                                                : (size_t)bytes;
}

/* The units of the planner's calls: bare counts, with the whole-step bound where it applies
   (its argument in *w, which must outlive them). */
static zs_plan_units bare_units(const zs_config *c, const int64_t *numel, int n, const int *frozen,
                                whole_arg *w) {
  *w = (whole_arg){zs_optimizer_for(c), c->tp_size};
  const zs_plan_units us = {NULL, numel, n,   frozen, w->m->whole ? whole_bound : NULL,
                            w,    NULL,  NULL};
  return us;
}

/* zs_plan_placement with unit_frozen (NULL: none frozen); fn names the public call in errors. */
static zs_status plan_placement(const char *fn, const zs_config *cfg, int world_size,
                                const int64_t *unit_numel, const int *unit_frozen, int nunits,
                                unsigned char *host) {
  zs_config c;
  ZS_CHECK(check_args(fn, cfg, &world_size, unit_numel, nunits, host, &c));
  whole_arg w;
  const zs_plan_units us = bare_units(&c, unit_numel, nunits, unit_frozen, &w);
  return zs_plan_placement_of(&c, world_size, &us, host);
}

zs_status zs_plan_placement_of(const zs_config *c, int world_size, const zs_plan_units *us,
                               unsigned char *host) {
  zs_plan_need n;
  ZS_CHECK(zs_plan_need_of(c, world_size, us, 0, &n));
  zs_plan p;
  ZS_CHECK(zs_plan_make(c, c->shard_group_size ? c->shard_group_size : world_size, &p));
  for (int i = 0; i < us->n; i++)
    host[i] = (unsigned char)zs_placement_host(&n.place, &p, us, i);
  return ZS_OK;
}

zs_status zs_plan_placement(const zs_config *cfg, int world_size, const int64_t *unit_numel,
                            int nunits, unsigned char *host) {
  return plan_placement("zs_plan_placement", cfg, world_size, unit_numel, NULL, nunits, host);
}

zs_status zs_plan_placement_frozen(const zs_config *cfg, int world_size, const int64_t *unit_numel,
                                   const int *unit_frozen, int nunits, unsigned char *host) {
  return plan_placement("zs_plan_placement_frozen", cfg, world_size, unit_numel, unit_frozen,
                        nunits, host);
}

zs_status zs_plan_report_of(const zs_config *c, int world_size, const zs_plan_units *us,
                            size_t activation_bytes, size_t device_bytes, size_t host_bytes,
                            zs_plan_report *out) {
  zs_plan_need n;
  ZS_CHECK(zs_plan_need_of(c, world_size, us, activation_bytes, &n));
  const zs_plan_room room = {c->device, device_bytes, host_bytes};
  memset(out, 0, sizeof *out);
  out->params = n.cat[ZS_MEM_PARAMS];
  out->grads = n.cat[ZS_MEM_GRADS];
  out->optimizer = n.cat[ZS_MEM_OPTIMIZER];
  out->buffers = n.cat[ZS_MEM_BUFFERS];
  out->host_pinned = n.cat[ZS_MEM_HOST_PINNED];
  out->activations = n.activations;
  out->device_total = n.device_total;
  out->host_total = n.host_total;
  out->fits = zs_plan_verdict(c, world_size, us, activation_bytes, &room, out->verdict,
                              sizeof out->verdict) == 1;
  out->host_units = n.place.active ? (size_t)n.place.nhost : 0;
  out->budget_floor = n.place.active ? n.place.floor_bytes : 0;
  out->nvme_units = (size_t)n.place.nnvme;
  out->disk_bytes = n.place.disk_bytes;
  out->nvme_staging = n.place.staging_bytes;
  out->ckpt_staging = staging_bound(c, world_size, us);
  out->struct_version = 4;
  return ZS_OK;
}

/* zs_plan_model with unit_frozen (NULL: none frozen); fn names the public call in errors. */
static zs_status plan_model(const char *fn, const zs_config *cfg, int world_size,
                            const int64_t *unit_numel, const int *unit_frozen, int nunits,
                            size_t activation_bytes, size_t device_bytes, size_t host_bytes,
                            zs_plan_report *out) {
  zs_config c;
  ZS_CHECK(check_args(fn, cfg, &world_size, unit_numel, nunits, out, &c));
  whole_arg w;
  const zs_plan_units us = bare_units(&c, unit_numel, nunits, unit_frozen, &w);
  return zs_plan_report_of(&c, world_size, &us, activation_bytes, device_bytes, host_bytes, out);
}

zs_status zs_plan_model(const zs_config *cfg, int world_size, const int64_t *unit_numel, int nunits,
                        size_t activation_bytes, size_t device_bytes, size_t host_bytes,
                        zs_plan_report *out) {
  return plan_model("zs_plan_model", cfg, world_size, unit_numel, NULL, nunits, activation_bytes,
                    device_bytes, host_bytes, out);
}

zs_status zs_plan_model_frozen(const zs_config *cfg, int world_size, const int64_t *unit_numel,
                               const int *unit_frozen, int nunits, size_t activation_bytes,
                               size_t device_bytes, size_t host_bytes, zs_plan_report *out) {
  return plan_model("zs_plan_model_frozen", cfg, world_size, unit_numel, unit_frozen, nunits,
                    activation_bytes, device_bytes, host_bytes, out);
}
