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
#include "shard/master_rem.h"
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
   gathered twice in one forward (a tied embedding used again by the head) counts as the turn. */
static int traversal_dir(zs_shard_ctx *x, zs_unit *u) {
  if (!x->in_step) return 1;
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

/* The values of a unit whose master is its params (zs_unit_master_in_params: frozen, or lean
   mode): its params, all-gathered in param_dtype when they are sharded (collective over the shard
   group), converted to fp32 into full. */
static zs_status gather_params_as_master(zs_unit *u, float *full) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  const zs_dtype pd = x->cfg->param_dtype;
  const size_t P = u->lay.padded, ps = zs_dtype_size(pd);
  if (zs_state_is(&u->st, ZS_ST_PARAM_FULL, ZS_LIFE_PERSISTENT)) {
    ZS_CHECK(zs_dev_convert(d, full, ZS_F32, u->param_full, pd, P, d->compute_stream));
    return zs_dev_sync(d, d->compute_stream);
  }
  /* bf16 params are gathered into a buffer of their own, then converted. */
  void *tmp = full;
  if (pd != ZS_F32) ZS_CHECK(zs_sh_alloc(x, ZS_MEM_BUFFERS, P * ps, &tmp, NULL));
  zs_status rc = zs_dev_order(d, d->comm_stream, d->compute_stream);
  void *mine = zs_ptr_add(tmp, u->lay.shard_off, pd);
  if (rc == ZS_OK) rc = zs_dev_copy(d, mine, u->param_shard, u->lay.shard * ps, d->comm_stream);
  if (rc == ZS_OK)
    rc = zs_coll_all_gather(x->shard, mine, tmp, u->lay.shard, zs_cdt_of(pd), d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(x->shard, d->comm_stream);
  if (rc != ZS_OK)
    rc = zs_err_wrap(rc, "gather of %s unit '%s' params", u->frozen ? "frozen" : "lean", u->name);
  if (rc == ZS_OK && pd != ZS_F32) rc = zs_dev_convert(d, full, ZS_F32, tmp, pd, P, d->comm_stream);
  if (rc == ZS_OK) rc = zs_dev_sync(d, d->comm_stream);
  if (pd != ZS_F32) zs_sh_free_after(x, rc, ZS_MEM_BUFFERS, tmp, P * ps, NULL);
  return rc;
}

/* The remainder master (master_rem.h): this rank's range joined on the host, copied into its
   slot of `full`, then gathered in place when the optimizer is sharded. */
static zs_status gather_rem(zs_unit *u, float *full) {
  zs_dev *d = u->ctx->dev;
  float *h = malloc(u->opt_n * 4 + 4);
  if (!h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "gather of unit '%s' master: out of host memory", u->name);
  zs_status rc = zs_dev_sync(d, d->compute_stream); /* the update's writes */
  if (rc == ZS_OK) rc = zs_rem_master_get(u, h, u->opt_off, u->opt_n);
  if (rc == ZS_OK) rc = zs_dev_from_host(d, full + u->opt_off, h, u->opt_n * 4);
  free(h);
  if (rc != ZS_OK || !u->st.s[ZS_ST_MASTER_REM].sharded) return rc;
  rc = zs_coll_all_gather(u->ctx->shard, full + u->lay.shard_off, full, u->lay.shard, ZS_CDT_F32,
                          d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(u->ctx->shard, d->comm_stream);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' master", u->name);
  return zs_dev_sync(d, d->comm_stream);
}

/* This rank's master range of a unit on the NVMe tier into its place in full (full + opt_off),
   ZS_NVME_GATHER_PIECE elements at a time: the fp32 master read from its file, or (remainder
   master) the params joined with the remainders read from theirs (zs_rem_master_get). Straight
   into full on the CPU device (host memory); on CUDA through a host buffer, each piece copied up
   after the compute stream's earlier work. Bounded host memory whatever the unit's size. */
#define ZS_NVME_GATHER_PIECE ((size_t)1 << 20)
static zs_status read_nvme_range(zs_unit *u, float *full) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  const int cuda = d->kind == ZS_DEVICE_CUDA, rem = zs_unit_has_rem(u);
  const size_t cap = u->opt_n < ZS_NVME_GATHER_PIECE ? u->opt_n : ZS_NVME_GATHER_PIECE;
  float *h = cuda ? malloc(cap * 4 + 4) : NULL;
  if (cuda && !h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "gather of unit '%s' master: no host memory", u->name);
  zs_status rc = cuda ? zs_dev_sync(d, d->compute_stream) : ZS_OK;
  for (size_t i = 0; i < u->opt_n && rc == ZS_OK; i += cap) {
    const size_t n = u->opt_n - i < cap ? u->opt_n - i : cap;
    float *to = cuda ? h : full + u->opt_off + i;
    rc = rem ? zs_rem_master_get(u, to, u->opt_off + i, n) : x->nvme_read(x->owner, u, 0, i, n, to);
    if (rc == ZS_OK && cuda) rc = zs_dev_from_host(d, full + u->opt_off + i, h, n * 4);
  }
  free(h);
  return rc;
}

/* The shard group's all-gather of one status word per rank (mine), before a gather that a rank's
   failed read must not enter alone: *bad is the first rank whose word is not ZS_OK (-1: none),
   *theirs its status. The words travel in host memory on the CPU device and through the context's
   kept device words on CUDA (its collectives move device memory; x->status_dev, made here once).
   Collective over the shard group; its own failure is returned. */
static zs_status agree_status(zs_unit *u, zs_status mine, int *bad, zs_status *theirs) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  const size_t S = (size_t)x->shard_size;
  uint64_t *w = calloc(S + 1, sizeof *w);
  if (!w)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "gather of unit '%s' master: no host memory", u->name);
  w[S] = (uint64_t)(unsigned)mine;
  const int cuda = d->kind == ZS_DEVICE_CUDA;
  zs_status rc = zs_dev_order(d, d->comm_stream, d->compute_stream);
  if (rc == ZS_OK && cuda && !x->status_dev)
    rc = zs_dev_alloc(d, (S + 1) * sizeof(uint64_t), (void **)&x->status_dev, NULL);
  uint64_t *words = cuda ? x->status_dev : w;
  if (rc == ZS_OK && cuda) rc = zs_dev_from_host(d, words + S, w + S, sizeof(uint64_t));
  if (rc == ZS_OK)
    rc = zs_coll_all_gather(x->shard, words + S, words, 1, ZS_CDT_U64, d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(x->shard, d->comm_stream);
  if (rc == ZS_OK && cuda) rc = zs_dev_to_host(d, w, words, S * sizeof(uint64_t));
  *bad = -1;
  for (size_t r = 0; r < S && rc == ZS_OK && *bad < 0; r++)
    if (w[r]) *bad = (int)r;
  *theirs = *bad >= 0 ? (zs_status)w[*bad] : ZS_OK;
  free(w);
  return rc;
}

/* A master on the NVMe tier (the fp32 master's or the remainders' file): this rank's range into
   its own place in full (read_nvme_range), then (sharded) the all-gather in place. */
static zs_status gather_nvme(zs_unit *u, float *full) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  const zs_status mine = read_nvme_range(u, full);
  if (!u->st.s[zs_unit_has_rem(u) ? ZS_ST_MASTER_REM : ZS_ST_MASTER].sharded) return mine;
  /* The group learns first whether a rank's read failed (each rank's status word), so that all
     return an error together rather than gather what one rank could not read. */
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", mine == ZS_OK ? "" : zs_last_error());
  int bad = -1;
  zs_status theirs = ZS_OK;
  zs_status rc = agree_status(u, mine, &bad, &theirs);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' master", u->name);
  if (mine != ZS_OK) return zs_err(mine, "%s", msg);
  if (bad >= 0)
    return zs_err(theirs,
                  "gather of unit '%s' master: rank %d of its shard group could not read its part "
                  "from the NVMe tier (its error names the file and the offset)",
                  u->name, bad);
  rc = zs_coll_all_gather(x->shard, full + u->lay.shard_off, full, u->lay.shard, ZS_CDT_F32,
                          d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(x->shard, d->comm_stream);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' master", u->name);
  return zs_dev_sync(d, d->comm_stream);
}

zs_status zs_shard_gather_master(zs_unit *u, float *full) {
  zs_shard_ctx *x = u->ctx;
  if (zs_unit_master_in_params(u)) return gather_params_as_master(u, full);
  if (u->nv[0]) return gather_nvme(u, full); /* the master's or the remainders' file */
  if (zs_unit_has_rem(u)) return gather_rem(u, full);
  if (!u->st.s[ZS_ST_MASTER].sharded) {
    /* On the compute stream, then waited for: the caller reads `full` from the host next. */
    ZS_CHECK(zs_dev_copy(x->dev, full, u->master, u->lay.padded * 4, x->dev->compute_stream));
    return zs_dev_sync(x->dev, x->dev->compute_stream);
  }
  zs_dev *d = x->dev;
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
  const void *send = u->master;
  if (zs_unit_on_host(u, ZS_ST_MASTER) && d->kind == ZS_DEVICE_CUDA) {
    /* Host-resident master: stage it into its own slot of the (device) output, gather in place. */
    send = full + u->lay.shard_off;
    ZS_CHECK(zs_dev_copy(d, full + u->lay.shard_off, u->master, u->lay.shard * 4, d->comm_stream));
  }
  zs_status rc = zs_coll_all_gather(x->shard, send, full, u->lay.shard, ZS_CDT_F32, d->comm_stream);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' master", u->name);
  rc = zs_coll_sync(x->shard, d->comm_stream);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' master", u->name);
  return zs_dev_sync(d, d->comm_stream);
}
