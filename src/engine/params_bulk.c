/* The whole model's parameters from and to the program's own layout: a callback says where each
 * tensor lives in the caller's arrays, so a model kept as one array per parameter type across all
 * layers (llm.c) loads and reads back without a call, or an index, per tensor. */
#include <stdint.h>
#include <stdlib.h>

#include "engine/engine_internal.h"
#include "engine/fail.h"
#include "tier/master_io.h"
#include "base/error.h"
#include "base/bf16.h"

/* One located tensor: its unit, index and host pointer (NULL: skipped). */
typedef struct {
  zs_unit *u;
  int t;
  float *host;
} located;

/* Engine committed and between steps, else ZS_ERR_STATE; nothing is changed. */
static zs_status check_engine(const zs_engine *e, const void *fn, const char *name) {
  if (!e || !fn) return zs_err(ZS_ERR_INVALID_ARG, "%s: engine or callback is NULL", name);
  if (e->state == ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "%s before zs_engine_commit: commit first", name);
  if (e->state == ZS_ENGINE_IN_STEP)
    return zs_err(ZS_ERR_STATE,
                  "%s inside a step: call it before zs_engine_begin_step or after zs_engine_step",
                  name);
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "%s: the engine failed earlier; destroy it", name);
  return ZS_OK;
}

/* Asks the callback for every tensor, in unit then tensor order, before anything is moved, so a
   refusal leaves the engine untouched. *out (caller frees) has one entry per tensor. */
static zs_status locate_all(zs_engine *e, zs_param_locate_fn fn, void *user, const char *name,
                            const char *nothing, located **out) {
  size_t n = 0, k = 0;
  for (int i = 0; i < e->nunits; i++)
    n += (size_t)e->units[i]->ntensors;
  located *v = calloc(n ? n : 1, sizeof *v);
  if (!v) return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    for (int t = 0; t < u->ntensors; t++, k++) {
      v[k].u = u;
      v[k].t = t;
      const size_t n = u->lay.numel[t] * (zs_engine_tp_split(u, t) ? (size_t)e->tp_size : 1);
      int r = fn(user, u, i, t, u->tnames[t], (int64_t)n, &v[k].host);
      if (r != 0) {
        free(v);
        return zs_err(ZS_ERR_INVALID_ARG,
                      "%s: the callback refused unit '%s' tensor '%s' (returned %d); nothing was "
                      "%s",
                      name, u->name, u->tnames[t], r, nothing);
      }
    }
  }
  *out = v;
  return ZS_OK;
}

zs_status zs_engine_set_params(zs_engine *e, zs_param_locate_fn fn, void *user) {
  ZS_CHECK(check_engine(e, (const void *)fn, "zs_engine_set_params"));
  located *v = NULL;
  ZS_CHECK(locate_all(e, fn, user, "zs_engine_set_params", "written", &v));
  zs_status rc = ZS_OK;
  size_t k = 0;
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++)
    for (int t = 0; t < e->units[i]->ntensors && rc == ZS_OK; t++, k++)
      if (v[k].host) rc = zs_unit_set_param_whole(v[k].u, v[k].t, v[k].host);
  free(v);
  return rc;
}

/* Tensor t of u from this rank's fp32 master: from `full` (the unit gathered, device memory) or,
   NULL, from the master array that holds the unit whole; into host. */
static zs_status read_slice(zs_engine *e, zs_unit *u, int t, const float *full, float *host) {
  if (full) return zs_dev_to_host(&e->dev, host, full + u->lay.off[t], u->lay.numel[t] * 4);
  return zs_state_read(&e->tiers, u, ZS_ARR_MASTER, u->lay.off[t], u->lay.numel[t], host, NULL);
}

/* Unit u's full fp32 master into the located tensors (one unit's master gathered at a time): this
   rank's slices, or with whole a split tensor's slices joined over the tp group into the whole
   tensor (every split tensor, located or not: the join is collective). */
static zs_status get_unit(zs_engine *e, zs_unit *u, const located *v, int whole) {
  const size_t P = u->lay.padded;
  float *full = NULL;
  zs_status rc = ZS_OK, local = ZS_OK; /* a collective's failure; this rank's own */
  if (!zs_state_master_whole(u)) {     /* else this rank's master array holds the unit: no gather */
    ZS_CHECK(zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, P * 4, (void **)&full, NULL));
    rc = zs_master_gather(&e->tiers, u, full); /* every rank gathers, skipped tensors or not */
  }
  for (int t = 0; t < u->ntensors && rc == ZS_OK; t++) {
    if (!whole || !zs_engine_tp_split(u, t)) {
      if (v[t].host && local == ZS_OK) local = read_slice(e, u, t, full, v[t].host);
      continue;
    }
    /* Every split tensor joins, whatever failed on this rank before (its peers are in the join):
       a slice this rank could not read goes in as zeros, and nothing is kept after a failure. */
    const size_t n = u->lay.numel[t];
    float *sl = malloc((n ? n : 1) * sizeof *sl);
    zs_status r = sl ? read_slice(e, u, t, full, sl)
                     : zs_err(ZS_ERR_OUT_OF_MEMORY, "unit '%s' tensor '%s': out of host memory",
                              u->name, u->tnames[t]);
    if (local == ZS_OK) local = r;
    zs_engine_call(e, ZS_CALL_ALL_GATHER, u);
    r = zs_engine_tp_join(e, u, t, r == ZS_OK ? sl : NULL, local == ZS_OK ? v[t].host : NULL);
    free(sl);
    if (r == ZS_ERR_OUT_OF_MEMORY) { /* joined, nothing kept: this rank's alone */
      if (local == ZS_OK) local = r;
    } else {
      rc = r;
    }
  }
  if (full) zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, full, P * 4, NULL);
  return rc != ZS_OK ? rc : local; /* zs_engine_get_params marks a failure */
}

zs_status zs_engine_get_params(zs_engine *e, zs_param_locate_fn fn, void *user) {
  ZS_CHECK(check_engine(e, (const void *)fn, "zs_engine_get_params"));
  located *v = NULL;
  ZS_CHECK(locate_all(e, fn, user, "zs_engine_get_params", "read", &v));
  zs_status rc = ZS_OK;
  size_t k = 0;
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++) {
    rc = get_unit(e, e->units[i], v + k, 1);
    k += (size_t)e->units[i]->ntensors;
  }
  free(v);
  return rc == ZS_OK ? rc : zs_engine_fail(e, rc);
}

/* Root's full params of unit u widened to fp32 into host (P elements): its persistent compute
   copy (params full). Local. */
static zs_status read_params(zs_engine *e, zs_unit *u, float *host) {
  const size_t P = u->lay.padded;
  if (e->cfg.param_dtype == ZS_F32) return zs_dev_to_host(&e->dev, host, u->param_full, P * 4);
  uint16_t *tmp = malloc(P * 2);
  if (!tmp) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_broadcast_params: out of host memory");
  zs_status rc = zs_dev_to_host(&e->dev, tmp, u->param_full, P * 2);
  for (size_t i = 0; i < P && rc == ZS_OK; i++)
    host[i] = zs_bf16_to_f32(tmp[i]);
  free(tmp);
  return rc;
}

/* Unit u's values from rank root on every rank: root's full fp32 master where the optimizer state
   is full (read on every rank as zs_engine_get_params reads it), else root's full params (the
   only full copy root has), broadcast over the world (at tp_size > 1 the data-parallel group:
   each tp rank's slices from its root) and written with zs_unit_set_param (master and compute
   copy) on every rank. At tp_size > 1 the tensors that are not split then take tp rank 0's
   values, broadcast over the tp group, so that they are equal on every rank of the mesh.
   Collective over the mesh. */
static zs_status broadcast_unit(zs_engine *e, zs_unit *u, int root) {
  zs_dev *d = &e->dev;
  void *stream = d->kind == ZS_DEVICE_CPU ? NULL : d->comm_stream;
  const size_t P = u->lay.padded;
  float *host = calloc(P ? P : 1, sizeof *host);
  located *v = calloc((size_t)u->ntensors, sizeof *v);
  void *buf = NULL;
  zs_status rc = ZS_OK;
  if (!host || !v)
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_broadcast_params('%s'): out of host memory",
                u->name);
  for (int t = 0; t < u->ntensors && rc == ZS_OK; t++) {
    v[t].u = u;
    v[t].t = t;
    v[t].host = host + u->lay.off[t];
  }
  if (rc == ZS_OK && !e->plan.shard_optimizer) rc = get_unit(e, u, v, 0);
  if (rc == ZS_OK && e->plan.shard_optimizer && e->world_rank == root) rc = read_params(e, u, host);
  if (rc == ZS_OK) rc = zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, P * 4, &buf, NULL);
  if (rc == ZS_OK) rc = zs_dev_from_host(d, buf, host, P * 4);
  if (rc == ZS_OK) rc = zs_coll_broadcast(e->world, buf, P, ZS_CDT_F32, root, stream);
  if (rc == ZS_OK) rc = zs_coll_sync(e->world, stream);
  if (rc == ZS_OK) rc = zs_dev_to_host(d, host, buf, P * 4);
  if (rc == ZS_OK && e->tp_size > 1) { /* the replicated tensors from tp rank 0 */
    rc = zs_coll_broadcast(e->tp, buf, P, ZS_CDT_F32, 0, stream);
    if (rc == ZS_OK) rc = zs_coll_sync(e->tp, stream);
    for (int t = 0; t < u->ntensors && rc == ZS_OK; t++)
      if (!zs_engine_tp_split(u, t))
        rc = zs_dev_to_host(d, v[t].host, (float *)buf + u->lay.off[t],
                            u->lay.numel[t] * sizeof(float));
  }
  if (buf) zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, buf, P * 4, NULL);
  for (int t = 0; t < u->ntensors && rc == ZS_OK; t++)
    rc = zs_unit_set_param(u, t, v[t].host);
  free(v);
  free(host);
  return rc;
}

zs_status zs_engine_broadcast_params(zs_engine *e, int root) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_broadcast_params: engine is NULL");
  ZS_CHECK(check_engine(e, e, "zs_engine_broadcast_params"));
  if (root < 0 || root >= e->world_size)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_broadcast_params: root %d is not a rank of the world (0..%d)", root,
                  e->world_size - 1);
  if (e->all_size > 1 && e->plan.shard_params)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_engine_broadcast_params: with sharded params (stage 3, or shard_params "
                  "ZS_SHARD_YES) each rank keeps only its shard of the values it set, so rank %d "
                  "holds no whole model to broadcast: set the same values on every rank (generate "
                  "them from the same seed); nothing was changed",
                  root);
  zs_status rc = ZS_OK;
  if (e->all_size > 1) {
    zs_engine_call(e, ZS_CALL_BROADCAST_PARAMS, NULL);
    for (int i = 0; i < e->nunits && rc == ZS_OK; i++)
      rc = broadcast_unit(e, e->units[i], root);
    /* Some units may hold root's values and others not, on some ranks only: not retryable. */
    if (rc != ZS_OK)
      return zs_engine_fail_hard(
          e, zs_err_wrap(rc, "zs_engine_broadcast_params: the params are partly broadcast; the "
                             "engine is failed: destroy it"));
  }
  zs_engine_set_clear(e, 1); /* the params are root's on every rank now (not the state) */
  return ZS_OK;
}
