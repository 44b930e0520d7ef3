/* Stage-3 parameter gathering: all-gather of shards into a full buffer on the comm stream, freed
 * on release; prefetch of the next units in the direction of traversal.
 *
 * The memory rule (zshard.h, prefetch_units / max_live_bytes): at every moment the gathered units
 * of a rank are the ones the caller holds (gathered, not yet released) plus at most
 * prefetch_units prefetched ones, and their bytes never exceed max_live_bytes when it is set.
 * Every user gather recomputes the wanted prefetch window from the traversal direction and drops
 * prefetched units outside it, so nothing accumulates whatever the call order (forward-only
 * passes, evaluation after a step, several micro-steps, release before or after grads_ready). */
#include "core/engine_internal.h"
#include "core/error.h"

static size_t full_bytes(const zs_unit *u) {
  return u->lay.padded * zs_dtype_size(u->e->cfg.param_dtype);
}

/* Starts the all-gather of u into a new full buffer on the comm stream and records u's event. */
static zs_status start_gather(zs_unit *u) {
  zs_engine *e = u->e;
  zs_dev *d = &e->dev;
  const size_t bytes = full_bytes(u);
  ZS_CHECK(zs_mem_alloc(e, ZS_MEM_BUFFERS, bytes, &u->param_full, d->comm_stream));
  /* Offloaded params: the host shard is copied into its own slot of the full buffer first,
     then gathered in place, so the device never holds a separate shard copy. */
  const void *send = u->param_shard;
  zs_status rc = ZS_OK;
  if (u->param_on_host && d->kind == ZS_DEVICE_CUDA) {
    void *slot = zs_ptr_add(u->param_full, u->lay.shard_off, e->cfg.param_dtype);
    rc = zs_dev_copy(d, slot, u->param_shard, u->lay.shard * zs_dtype_size(e->cfg.param_dtype),
                     d->comm_stream);
    send = slot;
  }
  if (rc == ZS_OK)
    rc = zs_coll_all_gather(e->shard, send, u->param_full, u->lay.shard,
                            zs_cdt_of(e->cfg.param_dtype), d->comm_stream);
  if (rc == ZS_OK) rc = zs_dev_event_record(d, u->ev_gathered, d->comm_stream);
  if (rc != ZS_OK) {
    zs_engine_fail(e, zs_err_wrap(rc, "gather of unit '%s'", u->name));
    zs_mem_free(e, ZS_MEM_BUFFERS, u->param_full, bytes, d->comm_stream); /* deferred if failed */
    u->param_full = NULL;
    return rc;
  }
  u->gathered = 1;
  e->live_gathered_bytes += bytes;
  return ZS_OK;
}

/* Frees u's gathered copy. A prefetched copy the compute stream never used is freed on the comm
   stream (after its all-gather); a copy the caller used, on the compute stream (after the
   caller's kernels, which were ordered after the all-gather). */
static void drop(zs_unit *u, int used) {
  zs_engine *e = u->e;
  if (!u->gathered) return;
  const size_t bytes = full_bytes(u);
  zs_mem_free(e, ZS_MEM_BUFFERS, u->param_full, bytes,
              used ? e->dev.compute_stream : e->dev.comm_stream);
  u->param_full = NULL;
  u->gathered = 0;
  e->live_gathered_bytes -= bytes;
}

/* Direction of traversal after the caller gathers unit i: towards i's successor in a forward
   pass (+1), its predecessor in a backward pass (-1). Re-gathering the unit gathered last is a
   turn (the forward's last unit is the backward's first; the backward's first unit starts the
   next forward). */
static int traversal_dir(zs_engine *e, int i) {
  int d;
  if (e->last_gather < 0)
    d = (i == e->nunits - 1 && e->nunits > 1) ? -1 : 1;
  else if (i == e->last_gather)
    d = -e->gather_dir;
  else
    d = i > e->last_gather ? 1 : -1;
  e->last_gather = i;
  e->gather_dir = d;
  return d;
}

/* 1 when unit j lies in the prefetch window of i in direction dir. */
static int in_window(const zs_engine *e, int i, int dir, int j) {
  const int k = (j - i) * dir;
  return k >= 1 && k <= e->cfg.prefetch_units;
}

/* Drops prefetched units, outside the window first, then the farthest inside it, until `need`
   more bytes fit under max_live_bytes (need 0 with all = 0: only those outside the window). */
static void make_room(zs_engine *e, int i, int dir, size_t need, int all) {
  for (int j = 0; j < e->nunits; j++) {
    zs_unit *n = e->units[j];
    if (j != i && n->gathered && !n->held && !in_window(e, i, dir, j)) drop(n, 0);
  }
  const size_t max = e->cfg.max_live_bytes;
  if (!all || !max) return;
  for (int k = e->cfg.prefetch_units; k >= 1 && e->live_gathered_bytes + need > max; k--) {
    const int j = i + dir * k;
    if (j >= 0 && j < e->nunits && e->units[j]->gathered && !e->units[j]->held)
      drop(e->units[j], 0);
  }
}

/* Gathers the window after i that is not gathered yet, while it fits under max_live_bytes.
   Prefetching is opportunistic: a device that cannot hold one more unit ends it quietly (the
   unit is gathered when the caller asks for it); a failed collective fails the engine. */
static zs_status prefetch(zs_engine *e, int i, int dir) {
  for (int k = 1; k <= e->cfg.prefetch_units; k++) {
    const int j = i + dir * k;
    if (j < 0 || j >= e->nunits) break;
    zs_unit *n = e->units[j];
    if (n->gathered) continue;
    const size_t max = e->cfg.max_live_bytes;
    if (max && e->live_gathered_bytes + full_bytes(n) > max) break;
    const zs_status rc = start_gather(n);
    if (rc == ZS_ERR_OUT_OF_MEMORY && e->state != ZS_ENGINE_FAILED) break;
    ZS_CHECK(rc);
  }
  return ZS_OK;
}

zs_status zs_shard_gather_user(zs_unit *u) {
  zs_engine *e = u->e;
  zs_dev *d = &e->dev;
  if (e->cfg.stage != 3) return ZS_OK; /* full params are persistent */
  const int dir = traversal_dir(e, u->index);
  if (!u->gathered) {
    const size_t bytes = full_bytes(u), max = e->cfg.max_live_bytes;
    make_room(e, u->index, dir, bytes, 1);
    if (max && e->live_gathered_bytes + bytes > max)
      return zs_err(ZS_ERR_OUT_OF_MEMORY,
                    "zs_unit_gather('%s'): its %zu bytes on top of the %zu bytes of units still "
                    "gathered exceed max_live_bytes (%zu): release units you no longer use before "
                    "gathering more, or raise max_live_bytes",
                    u->name, bytes, e->live_gathered_bytes, max);
    ZS_CHECK(start_gather(u));
  } else {
    make_room(e, u->index, dir, 0, 0);
  }
  /* The caller's kernels wait for this unit's all-gather only, not for reductions queued on the
     comm stream behind it: those keep overlapping the backward. */
  zs_status rc = zs_dev_wait_event(d, d->compute_stream, u->ev_gathered);
  if (rc != ZS_OK) return zs_engine_fail(e, rc);
  return prefetch(e, u->index, dir);
}

void zs_shard_release_user(zs_unit *u) {
  u->held = 0;
  if (u->e->cfg.stage == 3) drop(u, 1);
}

void zs_shard_drop_all(zs_engine *e) {
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    if (e->cfg.stage == 3) drop(u, u->held);
    u->held = 0; /* every stage: the step ends every hold (the same protocol at every stage) */
  }
  e->last_gather = -1;
  e->gather_dir = 1;
}

int zs_shard_invalidate(zs_unit *u) {
  if (u->e->cfg.stage != 3 || !u->gathered) return 0;
  if (u->held) return 1;
  drop(u, 0);
  return 0;
}

zs_status zs_shard_gather_master(zs_unit *u, float *full) {
  zs_engine *e = u->e;
  if (e->cfg.stage == 0) return zs_dev_copy(&e->dev, full, u->master, u->lay.padded * 4, NULL);
  zs_dev *d = &e->dev;
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
  const void *send = u->master;
  if (u->opt_on_host && d->kind == ZS_DEVICE_CUDA) {
    /* Host-resident master: stage it into its own slot of the (device) output, gather in place. */
    send = full + u->lay.shard_off;
    ZS_CHECK(zs_dev_copy(d, full + u->lay.shard_off, u->master, u->lay.shard * 4, d->comm_stream));
  }
  zs_status rc = zs_coll_all_gather(e->shard, send, full, u->lay.shard, ZS_CDT_F32, d->comm_stream);
  if (rc != ZS_OK) return zs_engine_fail(e, zs_err_wrap(rc, "gather of unit '%s' master", u->name));
  rc = zs_coll_sync(e->shard, d->comm_stream);
  if (rc != ZS_OK) return zs_engine_fail(e, zs_err_wrap(rc, "gather of unit '%s' master", u->name));
  return zs_dev_sync(d, d->comm_stream);
}
