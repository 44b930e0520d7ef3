/* Stage-3 parameter gathering: all-gather of shards into a full buffer on the comm stream, freed
 * on release; prefetch of the next units in the direction of traversal. */
#include "core/engine_internal.h"
#include "core/error.h"

zs_status zs_shard_gather(zs_unit *u, int for_user) {
  zs_engine *e = u->e;
  zs_dev *d = &e->dev;
  if (e->cfg.stage == 3 && !u->gathered) {
    const size_t ps = zs_dtype_size(e->cfg.param_dtype);
    const size_t bytes = u->lay.padded * ps;
    /* The shard was last written on the compute stream (AdamW, set_param). */
    ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
    ZS_CHECK(zs_mem_alloc(e, ZS_MEM_BUFFERS, bytes, &u->param_full, d->comm_stream));
    /* Offloaded params: the host shard is copied into its own slot of the full buffer first,
       then gathered in place, so the device never holds a separate shard copy. */
    const void *send = u->param_shard;
    if (u->param_on_host && d->kind == ZS_DEVICE_CUDA) {
      void *slot = zs_ptr_add(u->param_full, u->lay.shard_off, e->cfg.param_dtype);
      zs_status cr = zs_dev_copy(d, slot, u->param_shard,
                                 u->lay.shard * zs_dtype_size(e->cfg.param_dtype), d->comm_stream);
      if (cr != ZS_OK) {
        zs_mem_free(e, ZS_MEM_BUFFERS, u->param_full, bytes, d->comm_stream);
        u->param_full = NULL;
        return cr;
      }
      send = slot;
    }
    zs_status rc = zs_coll_all_gather(e->shard, send, u->param_full, u->lay.shard,
                                      zs_cdt_of(e->cfg.param_dtype), d->comm_stream);
    if (rc != ZS_OK) {
      zs_engine_fail(e, zs_err_wrap(rc, "gather of unit '%s'", u->name));
      zs_mem_free(e, ZS_MEM_BUFFERS, u->param_full, bytes, d->comm_stream); /* deferred if failed */
      u->param_full = NULL;
      return rc;
    }
    u->gathered = 1;
    e->live_gathered_bytes += bytes;
  }
  if (for_user) ZS_CHECK(zs_dev_order(d, d->compute_stream, d->comm_stream));
  return ZS_OK;
}

zs_status zs_shard_release(zs_unit *u) {
  zs_engine *e = u->e;
  if (e->cfg.stage != 3 || !u->gathered) return ZS_OK;
  const size_t bytes = u->lay.padded * zs_dtype_size(e->cfg.param_dtype);
  /* Stream-ordered free: after the user's kernels queued so far on the compute stream. */
  zs_mem_free(e, ZS_MEM_BUFFERS, u->param_full, bytes, e->dev.compute_stream);
  u->param_full = NULL;
  u->gathered = 0;
  e->live_gathered_bytes -= bytes;
  return ZS_OK;
}

zs_status zs_shard_prefetch_after(zs_unit *u) {
  zs_engine *e = u->e;
  if (e->cfg.stage != 3 || e->cfg.prefetch_units <= 0) return ZS_OK;
  /* A unit already released in this micro-step is being gathered for backward: go downwards. */
  const int dir = u->fwd_done ? -1 : 1;
  for (int k = 1; k <= e->cfg.prefetch_units; k++) {
    int j = u->index + dir * k;
    if (j < 0 || j >= e->nunits) break;
    zs_unit *n = e->units[j];
    if (n->gathered) continue;
    size_t bytes = n->lay.padded * zs_dtype_size(e->cfg.param_dtype);
    if (e->cfg.max_live_bytes && e->live_gathered_bytes + bytes > e->cfg.max_live_bytes) break;
    ZS_CHECK(zs_shard_gather(n, 0));
  }
  return ZS_OK;
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
