/* Stage-3 parameter gathering: all-gather of shards into a full buffer on the comm stream, freed
 * on release; prefetch of the next units in the direction of traversal.
 *
 * The memory rule (docs/MEMORY.md §1): at every moment the gathered units
 * of a rank are the ones the caller holds (gathered, not yet released) plus at most
 * prefetch_units prefetched ones, and their bytes never exceed max_live_bytes when it is set.
 * Every user gather recomputes the wanted prefetch window from the traversal direction and drops
 * prefetched units outside it, so nothing accumulates whatever the call order (forward-only
 * passes, evaluation after a step, several micro-steps, release before or after grads_ready). */
#include <stdio.h>
#include <stdlib.h>

#include "shard/shard.h"
#include "base/error.h"

static size_t full_bytes(const zs_unit *u) {
  return zs_unit_state_bytes(u, ZS_ST_PARAM_FULL);
}

/* Whether u's full params are a gathered copy (transient), not persistent. */
static int gathers(const zs_unit *u) {
  return zs_state_is(&u->st, ZS_ST_PARAM_FULL, ZS_LIFE_TRANSIENT);
}

/* Starts the all-gather of u into a new full buffer on the comm stream and records u's event.
   Every rank makes the same gather decisions (they depend only on the call sequence, unit sizes
   and max_live_bytes), so every failure here fails the engine: a rank that skipped an all-gather
   its peers issued would pair later collectives out of order. The shard it sends was last written
   by the optimizer or set_param, which both end with the compute stream synchronised, or by the
   host (offloaded params): no stream ordering is needed before the all-gather reads it. Messages
   name the caller's call (`by`, the unit passed to zs_unit_gather), and u when it is a prefetch. */
static zs_status start_gather(zs_unit *u, const zs_unit *by) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  const size_t bytes = full_bytes(u);
  const zs_mem_cat cat = u->st.s[ZS_ST_PARAM_FULL].cat;
  zs_status ar = zs_sh_alloc(x, cat, bytes, &u->param_full, d->comm_stream);
  if (ar != ZS_OK)
    return zs_sh_fail_hard(
        x, zs_err_wrap(ar,
                       "zs_unit_gather('%s'), all-gather of unit '%s'%s (the peers go on with "
                       "it: the engine is failed; lower prefetch_units or set max_live_bytes)",
                       by->name, u->name, u == by ? "" : " (prefetched)"));
  /* Offloaded params: the host shard is copied into its own slot of the full buffer first,
     then gathered in place, so the device never holds a separate shard copy. */
  x->sig_unit = u->index; /* the collective's header names the unit it moves (calls.c) */
  x->sig_prefetch = u != by;
  const void *send = u->param_shard;
  zs_status rc = ZS_OK;
  if (zs_unit_on_host(u, ZS_ST_PARAM_SHARD) && d->kind == ZS_DEVICE_CUDA) {
    void *slot = zs_ptr_add(u->param_full, u->lay.shard_off, x->cfg->param_dtype);
    rc = zs_dev_copy(d, slot, u->param_shard, zs_unit_state_bytes(u, ZS_ST_PARAM_SHARD),
                     d->comm_stream);
    send = slot;
  }
  if (rc == ZS_OK)
    rc = zs_coll_all_gather(x->shard, send, u->param_full, u->lay.shard,
                            zs_cdt_of(x->cfg->param_dtype), d->comm_stream);
  x->sig_unit = -1;
  x->sig_prefetch = 0;
  if (rc == ZS_OK) rc = zs_dev_event_record(d, u->ev_gathered, d->comm_stream);
  if (rc != ZS_OK) {
    zs_sh_fail_hard(x, zs_err_wrap(rc, "zs_unit_gather('%s'), all-gather of unit '%s'%s", by->name,
                                   u->name, u == by ? "" : " (prefetched)"));
    zs_sh_free(x, cat, u->param_full, bytes, d->comm_stream); /* deferred: the owner is broken */
    u->param_full = NULL;
    return rc;
  }
  u->gathered = 1;
  x->live_gathered_bytes += bytes;
  return ZS_OK;
}

/* Frees u's gathered copy. A prefetched copy the compute stream never used is freed on the comm
   stream (after its all-gather); a copy the caller used, on the compute stream (after the
   caller's kernels, which were ordered after the all-gather). */
static void drop(zs_unit *u, int used) {
  zs_shard_ctx *x = u->ctx;
  if (!u->gathered) return;
  const size_t bytes = full_bytes(u);
  zs_sh_free(x, u->st.s[ZS_ST_PARAM_FULL].cat, u->param_full, bytes,
             used ? x->dev->compute_stream : x->dev->comm_stream);
  u->param_full = NULL;
  u->gathered = 0;
  x->live_gathered_bytes -= bytes;
}

/* Direction of traversal of the caller's gather of u: backward (-1) inside a step when u was
   already gathered for this micro-step's forward (its grads_ready for the micro-step not seen
   yet), else forward (+1). Outside a step every pass is a forward (evaluation, sampling). A unit
   gathered twice in one forward (a tied embedding used again by the head) counts as the turn.
   A unit without a gradient (frozen, zs_unit_no_grad) has no grads_ready count to tell: the
   order of the caller's gathers does (toward the higher index: forward), and a gather of the unit
   gathered last (the turn between passes) goes toward the units that are there. */
static int traversal_dir(zs_shard_ctx *x, zs_unit *u) {
  if (!x->in_step) return 1;
  const int last = x->last_gather;
  x->last_gather = u->index;
  if (u->frozen || u->no_grad) {
    if (last < 0) return 1;
    if (u->index != last) return u->index > last ? 1 : -1;
    return u->index == x->nunits - 1 && x->nunits > 1 ? -1 : 1;
  }
  if (u->fwd_micro == u->grads_ready_count) return -1;
  u->fwd_micro = u->grads_ready_count;
  return 1;
}

/* 1 when unit j lies in the prefetch window of i in direction dir. */
static int in_window(const zs_shard_ctx *x, int i, int dir, int j) {
  const int k = (j - i) * dir;
  return k >= 1 && k <= x->cfg->prefetch_units;
}

/* Drops prefetched units, outside the window first, then the farthest inside it, until `need`
   more bytes fit under max_live_bytes (need 0 with all = 0: only those outside the window). */
static void make_room(zs_shard_ctx *x, int i, int dir, size_t need, int all) {
  for (int j = 0; j < x->nunits; j++) {
    zs_unit *n = x->units[j];
    if (j != i && n->gathered && !n->held && !in_window(x, i, dir, j)) drop(n, 0);
  }
  const size_t max = x->cfg->max_live_bytes;
  if (!all || !max) return;
  for (int k = x->cfg->prefetch_units; k >= 1 && x->live_gathered_bytes + need > max; k--) {
    const int j = i + dir * k;
    if (j >= 0 && j < x->nunits && x->units[j]->gathered && !x->units[j]->held)
      drop(x->units[j], 0);
  }
}

/* Gathers the window after i that is not gathered yet, while it fits under max_live_bytes. */
static zs_status prefetch(zs_shard_ctx *x, int i, int dir) {
  const zs_unit *by = x->units[i];
  for (int k = 1; k <= x->cfg->prefetch_units; k++) {
    const int j = i + dir * k;
    if (j < 0 || j >= x->nunits) break;
    zs_unit *n = x->units[j];
    if (n->gathered) continue;
    const size_t max = x->cfg->max_live_bytes;
    if (max && x->live_gathered_bytes + full_bytes(n) > max) break;
    ZS_CHECK(start_gather(n, by));
  }
  return ZS_OK;
}

zs_status zs_shard_gather_user(zs_unit *u) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  if (!gathers(u)) return ZS_OK; /* full params are persistent */
  if (!u->gathered && x->cfg->max_live_bytes) {
    /* Refused before anything changes: prefetched units could be dropped, but the units the
       caller holds leave no room. The same on every rank. */
    size_t held = 0;
    for (int j = 0; j < x->nunits; j++)
      if (x->units[j]->held) held += full_bytes(x->units[j]);
    const size_t bytes = full_bytes(u), max = x->cfg->max_live_bytes;
    if (held + bytes > max)
      return zs_err(ZS_ERR_OUT_OF_MEMORY,
                    "zs_unit_gather('%s'): its %zu bytes on top of the %zu bytes of units the "
                    "caller holds gathered exceed max_live_bytes (%zu); nothing changed: release "
                    "units you no longer use before gathering more, or raise max_live_bytes",
                    u->name, bytes, held, max);
  }
  const int dir = traversal_dir(x, u);
  if (!u->gathered) {
    make_room(x, u->index, dir, full_bytes(u), 1);
    ZS_CHECK(start_gather(u, u));
  } else {
    make_room(x, u->index, dir, 0, 0);
  }
  /* The caller's kernels wait for this unit's all-gather only, not for reductions queued on the
     comm stream behind it: those keep overlapping the backward. */
  zs_status rc = zs_dev_wait_event(d, d->compute_stream, u->ev_gathered);
  if (rc != ZS_OK) return zs_sh_fail_hard(x, rc);
  return prefetch(x, u->index, dir);
}

void zs_shard_release_user(zs_unit *u) {
  u->held = 0;
  if (gathers(u)) drop(u, 1);
}

void zs_shard_drop_all(zs_shard_ctx *x) {
  for (int i = 0; i < x->nunits; i++) {
    zs_unit *u = x->units[i];
    if (gathers(u)) drop(u, u->held);
    u->held = 0; /* every stage: the step ends every hold (the same protocol at every stage) */
  }
}

int zs_shard_invalidate(zs_unit *u) {
  if (!gathers(u) || !u->gathered) return 0;
  if (u->held) return 1;
  drop(u, 0);
  return 0;
}
