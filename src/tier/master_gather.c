/* The whole master of a unit, gathered (master_io.h: zs_master_gather): from the params (lean,
 * frozen), the remainders joined with the params, the NVMe tier's file, or the fp32 array, each in
 * its way; and any other optimizer array, in canonical fp32 (zs_array_gather). */
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "tier/master_io.h"
#include "tier/master_rem.h"

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
static zs_status gather_rem(zs_tiers *t, zs_unit *u, float *full) {
  zs_dev *d = u->ctx->dev;
  float *h = malloc(u->opt_n * 4 + 4);
  if (!h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "gather of unit '%s' master: out of host memory", u->name);
  zs_status rc = zs_dev_sync(d, d->compute_stream); /* the update's writes */
  if (rc == ZS_OK) rc = zs_rem_master_get(t, u, h, u->opt_off, u->opt_n);
  if (rc == ZS_OK) rc = zs_dev_from_host(d, full + u->opt_off, h, u->opt_n * 4);
  free(h);
  if (rc != ZS_OK || !u->st.s[ZS_ST_MASTER_REM].sharded) return rc;
  rc = zs_coll_all_gather(u->ctx->shard, full + u->lay.shard_off, full, u->lay.shard, ZS_CDT_F32,
                          d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(u->ctx->shard, d->comm_stream);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' master", u->name);
  return zs_dev_sync(d, d->comm_stream);
}

/* Elements of a range read per piece: the host staging stays bounded whatever the unit's size. */
#define ZS_GATHER_PIECE ((size_t)1 << 20)

/* This rank's canonical values of array a over its optimizer range into full + opt_off (device
   memory), ZS_GATHER_PIECE elements at a time through the codec (zs_state_read: a master on the
   NVMe tier from its file, or the params joined with the remainders read from theirs): straight
   into full on the CPU device, through a host buffer on CUDA (after the compute stream's earlier
   work). */
static zs_status read_own_range(zs_tiers *t, zs_unit *u, zs_arr a, float *full) {
  zs_dev *d = u->ctx->dev;
  const int cuda = d->kind == ZS_DEVICE_CUDA;
  const size_t cap = u->opt_n < ZS_GATHER_PIECE ? u->opt_n : ZS_GATHER_PIECE;
  float *h = cuda ? malloc(cap * 4 + 4) : NULL;
  if (cuda && !h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "gather of unit '%s' %s: no host memory", u->name,
                  zs_arr_name(u->ctx->cfg, a));
  zs_status rc = cuda ? zs_dev_sync(d, d->compute_stream) : ZS_OK;
  for (size_t i = 0; i < u->opt_n && rc == ZS_OK; i += cap) {
    const size_t n = u->opt_n - i < cap ? u->opt_n - i : cap;
    float *to = cuda ? h : full + u->opt_off + i;
    rc = zs_state_read(t, u, a, u->opt_off + i, n, to, NULL);
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

/* After this rank read its range into full + opt_off (status mine): with a sharded optimizer
   range the group learns first whether a rank's read failed (each rank's status word), so that
   all return an error together rather than gather what one rank could not read; then the
   all-gather in place. `what` names the array in messages. */
static zs_status gather_agreed(zs_unit *u, zs_status mine, float *full, int sharded,
                               const char *what) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  if (!sharded) return mine;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", mine == ZS_OK ? "" : zs_last_error());
  int bad = -1;
  zs_status theirs = ZS_OK;
  zs_status rc = agree_status(u, mine, &bad, &theirs);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' %s", u->name, what);
  if (mine != ZS_OK) return zs_err(mine, "%s", msg);
  if (bad >= 0)
    return zs_err(theirs,
                  "gather of unit '%s' %s: rank %d of its shard group could not read its part "
                  "(its error names the file and the offset)",
                  u->name, what, bad);
  rc = zs_coll_all_gather(x->shard, full + u->lay.shard_off, full, u->lay.shard, ZS_CDT_F32,
                          d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(x->shard, d->comm_stream);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gather of unit '%s' %s", u->name, what);
  return zs_dev_sync(d, d->comm_stream);
}

/* A master on the NVMe tier (the fp32 master's or the remainders' file): this rank's range into
   its own place in full (read_own_range), then (sharded) the agreed all-gather in place. */
static zs_status gather_nvme(zs_tiers *t, zs_unit *u, float *full) {
  const zs_status mine = read_own_range(t, u, ZS_ARR_MASTER, full);
  return gather_agreed(u, mine, full,
                       u->st.s[zs_unit_has_rem(u) ? ZS_ST_MASTER_REM : ZS_ST_MASTER].sharded,
                       "master");
}

zs_status zs_array_gather(zs_tiers *t, zs_unit *u, zs_arr a, float *full) {
  if (a == ZS_ARR_MASTER) return zs_master_gather(t, u, full);
  const zs_status mine = read_own_range(t, u, a, full);
  return gather_agreed(u, mine, full, u->st.s[ZS_ST_MASTER].sharded, zs_arr_name(u->ctx->cfg, a));
}

zs_status zs_master_gather(zs_tiers *t, zs_unit *u, float *full) {
  zs_shard_ctx *x = u->ctx;
  if (zs_unit_master_in_params(u)) return gather_params_as_master(u, full);
  if (u->nv[ZS_ARR_MASTER]) return gather_nvme(t, u, full); /* the master's or the remainders' */
  if (zs_unit_has_rem(u)) return gather_rem(t, u, full);
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
