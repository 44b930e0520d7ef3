/* Setting and reading parameter values from host fp32 arrays. */
#include <stdint.h>
#include <stdlib.h>

#include "engine/engine_internal.h"
#include "engine/fail.h"
#include "tier/master_io.h"
#include "base/error.h"
#include "base/bf16.h"
#include "base/bf16_rem.h"

zs_status zs_engine_check_tensor(const zs_unit *u, int t, const void *host, const char *fn) {
  if (!u) return zs_err(ZS_ERR_INVALID_ARG, "%s: unit is NULL", fn);
  if (t < 0 || t >= u->ntensors)
    return zs_err(ZS_ERR_INVALID_ARG, "%s('%s', %d): tensor index out of range 0..%d", fn, u->name,
                  t, u->ntensors - 1);
  if (!host) return zs_err(ZS_ERR_INVALID_ARG, "%s('%s', %d): host buffer is NULL", fn, u->name, t);
  return ZS_OK;
}

/* The refusals of the param calls; in_step: the call is also legal inside a step (a read). */
static zs_status check_param_call(const zs_unit *u, int t, const void *host, const char *fn,
                                  int in_step) {
  ZS_CHECK(zs_engine_check_tensor(u, t, host, fn));
  const zs_engine *e = u->e;
  if (e->state == ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "%s('%s') before zs_engine_commit: commit first", fn, u->name);
  if (e->state == ZS_ENGINE_IN_STEP && !in_step)
    return zs_err(ZS_ERR_STATE,
                  "%s('%s') inside a step: call it before zs_engine_begin_step or "
                  "after zs_engine_step",
                  fn, u->name);
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "%s('%s'): the engine failed earlier; destroy it", fn, u->name);
  return ZS_OK;
}

/* Copies host fp32 values [a, b) of the flat buffer (src points at flat element `base`) into a
   device buffer of dtype dt whose element 0 is flat element `dst0`; bf16 rounded to nearest even,
   or ties away from zero when ta (the unit's compute copy: zs_unit_ties_away). */
static zs_status put_range(zs_engine *e, void *dst, size_t dst0, zs_dtype dt, const float *src,
                           size_t base, size_t a, size_t b, int ta) {
  if (b <= a) return ZS_OK; /* a zero-element tensor */
  void *d = zs_ptr_add(dst, a - dst0, dt);
  if (dt == ZS_F32) return zs_dev_from_host(&e->dev, d, src + (a - base), (b - a) * 4);
  uint16_t *tmp = malloc((b - a) * 2);
  if (!tmp) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory converting params to bf16");
  for (size_t i = a; i < b; i++)
    tmp[i - a] = ta ? zs_f32_to_bf16_ta(src[i - base]) : zs_f32_to_bf16(src[i - base]);
  zs_status rc = zs_dev_from_host(&e->dev, d, tmp, (b - a) * 2);
  free(tmp);
  return rc;
}

static zs_status set_param(zs_unit *u, int t, const float *host_full);

zs_status zs_unit_set_param(zs_unit *u, int t, const float *host_full) {
  ZS_CHECK(check_param_call(u, t, host_full, "zs_unit_set_param", 0));
  /* Its host copies wait for the streams, which may hold prefetch all-gathers: a timeout there
     fails the engine like any wait behind a collective. */
  zs_status rc = set_param(u, t, host_full);
  /* The ranks compare what they set at the next step (calls.c): a per-rank seed is refused. */
  if (rc == ZS_OK) zs_engine_set_record(u, t, 0, host_full, u->lay.numel[t]);
  /* set_param writes the master and the params: an I/O error is the master's file, half written */
  if (rc == ZS_ERR_IO && zs_state_master_on_tier(u)) return zs_engine_fail_hard(u->e, rc);
  return rc == ZS_OK ? rc : zs_engine_fail(u->e, rc);
}

static zs_status set_param(zs_unit *u, int t, const float *host_full) {
  zs_engine *e = u->e;
  const zs_layout *l = &u->lay;
  const size_t base = l->off[t];
  size_t a, b;
  const int ta = zs_unit_ties_away(u);
  /* The master: the fp32 copy, or (remainder master) the remainders, the params below holding
     the ties-away compute copy they complete; none apart from the params (frozen, lean). */
  if (zs_layout_overlap(l, t, u->opt_off, u->opt_off + u->opt_n, &a, &b))
    ZS_CHECK(zs_state_write(&e->tiers, u, ZS_ARR_MASTER, a, b - a, host_full + (a - base), NULL,
                            "zs_unit_set_param"));
  if (zs_state_is(&u->st, ZS_ST_PARAM_FULL, ZS_LIFE_PERSISTENT))
    return put_range(e, u->param_full, 0, e->cfg.param_dtype, host_full, base, base,
                     base + l->numel[t], ta);
  /* Sharded params: a prefetched copy of the old values is dropped; a copy the caller holds
     gathered gets the new values too (every rank writes the same full tensor), so no gather of this
     unit ever hands out stale weights. */
  const int refresh = zs_shard_invalidate(u);
  if (zs_layout_overlap(l, t, l->shard_off, l->shard_off + l->shard, &a, &b))
    ZS_CHECK(
        put_range(e, u->param_shard, l->shard_off, e->cfg.param_dtype, host_full, base, a, b, ta));
  if (refresh)
    ZS_CHECK(put_range(e, u->param_full, 0, e->cfg.param_dtype, host_full, base, base,
                       base + l->numel[t], ta));
  return ZS_OK;
}

zs_status zs_unit_set_param_n(zs_unit *u, int t, const float *host_full, int64_t n) {
  ZS_CHECK(check_param_call(u, t, host_full, "zs_unit_set_param_n", 0));
  if (n != (int64_t)u->lay.numel[t])
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_unit_set_param_n('%s', %d): %lld values given, the tensor has %zu elements",
                  u->name, t, (long long)n, u->lay.numel[t]);
  return zs_unit_set_param(u, t, host_full);
}

zs_status zs_unit_get_param(zs_unit *u, int t, float *host_full) {
  ZS_CHECK(check_param_call(u, t, host_full, "zs_unit_get_param", 1));
  zs_engine *e = u->e;
  zs_engine_call(e, ZS_CALL_GET_PARAM, u);
  const size_t P = u->lay.padded;
  if (zs_state_master_whole(u)) /* no gather: this rank's master array holds the tensor */
    return zs_engine_fail(e, zs_state_read(&e->tiers, u, ZS_ARR_MASTER, u->lay.off[t],
                                           u->lay.numel[t], host_full, NULL));
  float *full = NULL;
  zs_status rc = zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, P * 4, (void **)&full, NULL);
  if (rc != ZS_OK) /* its shard group is entering the gather: failing here fails them too */
    return zs_engine_fail_hard(e, zs_err_wrap(rc, "zs_unit_get_param: the gather's buffer"));
  rc = zs_master_gather(&e->tiers, u, full);
  if (rc == ZS_OK)
    rc = zs_dev_to_host(&e->dev, host_full, full + u->lay.off[t], u->lay.numel[t] * 4);
  zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, full, P * 4, NULL);
  return zs_engine_fail(e, rc);
}
