/* The whole step of a unit (whole.h). */
#include "tier/whole.h"

#include <string.h>

#include "base/error.h"
#include "shard/tp_slice.h"
#include "tier/nvme_tier.h"

/* The most channels u's whole tensors gather and return (the plan's tensors: every rank alike);
   in 0 without whole steps. */
static void unit_channels(const zs_tiers *t, const zs_unit *u, int *in, int *out) {
  *in = *out = 0;
  for (int k = 0; k < u->ntensors; k++) {
    if (u->whole_owner[k] < 0) continue;
    int ci, co;
    zs_optim_whole_channels(t->optim, u->group[k], &ci, &co);
    if (ci > *in) *in = ci;
    if (co > *out) *out = co;
  }
}

/* Channel c of the buffer over the padded unit, at flat element a. */
static float *chan(const zs_unit *u, int c, size_t a) {
  return u->whole_dir + (size_t)c * u->lay.padded + a;
}

/* rows x cols of tensor k's whole step: the whole tensor's (a tp-split one's joined). */
static void dims(const zs_tiers *t, const zs_unit *u, int k, int64_t *rows, int64_t *cols) {
  zs_tp_whole_dims(&u->t[k], u->tp[k], t->sh->tp_size, rows, cols);
}

/* Tensor k's input channels (ci), split over the tp group, joined over it into whole channels
   (T * n floats each, at w; recv: ZS_TP_SPLIT_DIM1's receive buffer). */
static zs_status join(zs_tiers *t, zs_unit *u, int k, int ci, float *w, float *recv) {
  const zs_shard_ctx *x = t->sh;
  const size_t n = u->lay.numel[k], T = (size_t)x->tp_size;
  const int dim1 = u->tp[k] == ZS_TP_SPLIT_DIM1;
  for (int c = 0; c < ci; c++) {
    float *wc = w + (size_t)c * T * n; /* dim 0: the slices in rank order are the whole */
    ZS_CHECK(zs_coll_all_gather(x->tp, chan(u, c, u->lay.off[k]), dim1 ? recv : wc, n, ZS_CDT_F32,
                                NULL));
    for (size_t q = 0; dim1 && q < T; q++)
      zs_tp_slice_copy(u->tp[k], u->t[k].shape[0], n, (int)q, (int)T, wc, recv + q * n, 0);
  }
  return ZS_OK;
}

/* The results (co channels of the whole tensor at w, valid on the rank that computed them:
   mine) back to every rank's slice in the channels: a reduce-scatter over the tp group in which
   the other ranks give zeros, so each element's sum has one nonzero term (-0 made +0 first) and
   is exact in any order. ZS_TP_SPLIT_DIM1's slices are put in rank order in recv first. */
static zs_status spread(zs_tiers *t, zs_unit *u, int k, int co, int mine, float *w, float *recv) {
  const zs_shard_ctx *x = t->sh;
  const size_t n = u->lay.numel[k], T = (size_t)x->tp_size;
  const int dim1 = u->tp[k] == ZS_TP_SPLIT_DIM1;
  for (int c = 0; c < co; c++) {
    float *wc = w + (size_t)c * T * n, *send = dim1 ? recv : wc;
    if (!mine) {
      memset(send, 0, T * n * sizeof *send);
    } else {
      for (size_t i = 0; i < T * n; i++)
        wc[i] += 0.0f;
      for (size_t q = 0; dim1 && q < T; q++)
        zs_tp_slice_copy(u->tp[k], u->t[k].shape[0], n, (int)q, (int)T, wc, recv + q * n, 1);
    }
    ZS_CHECK(zs_coll_reduce_scatter(x->tp, send, chan(u, c, u->lay.off[k]), n, ZS_CDT_F32, NULL));
  }
  return ZS_OK;
}

/* Tensor k, split over the tp group, on its owner's tp group (a tp group's ranks share their
   shard rank, so all of it or none of it owns k): its input channels joined, the whole step on
   the whole tensor by the group's rank that computes it (zs_unit.whole_tp) in the scratch past
   the join's buffers, and each rank's slice of the results back in its channels: the bits of the
   same tensor unsplit. The other tp groups make no such calls, so these stay out of the running
   hash that the step's agreement compares over every rank, in one it compares within the tp
   group (zs_coll_hash_pause). */
static zs_status split_step(zs_tiers *t, zs_unit *u, int k, int ci, int co, float *work) {
  zs_shard_ctx *x = t->sh;
  const size_t n = u->lay.numel[k], T = (size_t)x->tp_size;
  const int mine = u->whole_tp[k] == x->tp_rank;
  float *recv = work + (size_t)ci * T * n, *ws = work + zs_tp_join_floats(u->tp[k], (int)T, n, ci);
  zs_coll_hash_pause(x->tp, 1);
  zs_status rc = join(t, u, k, ci, work, recv);
  if (rc == ZS_OK && mine) {
    float *ch[ZS_OPT_MAX_CHANNELS];
    for (int c = 0; c < ci; c++)
      ch[c] = work + (size_t)c * T * n;
    int64_t rows, cols;
    dims(t, u, k, &rows, &cols);
    zs_optim_whole(t->optim, u->group[k], !u->t[k].no_weight_decay, ch, rows, cols, ws);
  }
  if (rc == ZS_OK) rc = spread(t, u, k, co, mine, work, recv);
  zs_coll_hash_pause(x->tp, 0);
  return rc;
}

/* The whole steps of the tensors this rank computes (its own where the state is sharded, all of
   them where not: every = 1), in place in the channels; the first cout channels of the others'
   zeroed (a computed one's past its own count too). A tensor split over the tp group goes
   through split_step (the CPU device only). On CUDA (cs: the compute stream) the module's device
   step, whose outputs have -0 made +0 already. */
static zs_status run_owned(zs_tiers *t, zs_unit *u, int cout, int every, float *work, void *blas,
                           void *cs) {
  const int cuda = t->sh->dev->kind == ZS_DEVICE_CUDA;
  const int T = t->sh->tp_size;
  for (int k = 0; k < u->ntensors; k++) {
    if (u->whole_owner[k] < 0) continue;
    const size_t off = u->lay.off[k], n = u->lay.numel[k];
    int ci, co = 0;
    zs_optim_whole_channels(t->optim, u->group[k], &ci, &co);
    if (!every && u->whole_owner[k] != t->sh->shard_rank) {
      co = 0;
    } else if (zs_tp_is_split(u->tp[k], T)) {
      ZS_CHECK(split_step(t, u, k, ci, co, work));
    } else {
      float *ch[ZS_OPT_MAX_CHANNELS];
      for (int c = 0; c < ci; c++)
        ch[c] = chan(u, c, off);
      int64_t rows, cols;
      dims(t, u, k, &rows, &cols);
      if (cuda) {
        ZS_CHECK(zs_optim_whole_dev(t->optim, u->group[k], !u->t[k].no_weight_decay, ch, rows, cols,
                                    work, blas, cs));
      } else {
        zs_optim_whole(t->optim, u->group[k], !u->t[k].no_weight_decay, ch, rows, cols, work);
        for (int c = 0; c < co; c++) {
          float *o = chan(u, c, off);
          for (size_t i = 0; i < n; i++)
            o[i] += 0.0f; /* -0 -> +0: the sum below then gives it exactly */
        }
      }
    }
    for (int c = co; c < cout; c++)
      ZS_CHECK(zs_dev_zero(t->sh->dev, chan(u, c, off), n * sizeof(float), cs));
  }
  return ZS_OK;
}

/* Whether one of u's whole steps needs the device's cuBLAS handle (Muon's GEMMs). */
static int unit_blas(const zs_tiers *t, const zs_unit *u) {
  for (int k = 0; k < u->ntensors; k++)
    if (u->whole_owner[k] >= 0 && zs_optim_whole_blas(t->optim, u->group[k])) return 1;
  return 0;
}

/* Whether u's whole steps join a tensor over the tp group (a collective of their own). */
static int unit_joins(const zs_tiers *t, const zs_unit *u) {
  for (int k = 0; k < u->ntensors; k++)
    if (u->whole_owner[k] >= 0 && zs_tp_is_split(u->tp[k], t->sh->tp_size)) return 1;
  return 0;
}

/* The scratch floats of u's largest whole step, with a split tensor's join (every rank allocates
   it, owner or not, before the first collective: an allocation fails on no rank inside the
   exchange). */
static size_t work_floats(const zs_tiers *t, const zs_unit *u) {
  size_t w = 0;
  for (int k = 0; k < u->ntensors; k++)
    if (u->whole_owner[k] >= 0) {
      int64_t rows, cols;
      int ci, co;
      dims(t, u, k, &rows, &cols);
      zs_optim_whole_channels(t->optim, u->group[k], &ci, &co);
      const size_t f = zs_optim_whole_work(t->optim, u->group[k], rows, cols) +
                       zs_tp_join_floats(u->tp[k], t->sh->tp_size, u->lay.numel[k], ci);
      if (f > w) w = f;
    }
  return w;
}

/* Elements per piece of a tensor's stateless tail (below). */
#define TAIL 1024

/* The gather into the channels, or the store from them, of tensor k's elements [a, b); a tail
   whose state the tensor does not keep (zs_optimizer.state_elems) gathers zeros from, and stores
   into, the scratch tail on the CPU; on CUDA the module's device steps on cs, which skip the
   state where the segment has none. */
static zs_status piece(zs_tiers *t, zs_unit *u, int k, size_t a, size_t b, int store, float *tail,
                       void *cs) {
  zs_optim_seg seg = zs_tier_mem_seg(u, k, a, b);
  if (tail)
    for (int j = 0; j < u->keeps[k]; j++)
      seg.state[j] = tail;
  float *ch[ZS_OPT_MAX_CHANNELS] = {NULL};
  for (int c = 0; c < u->whole_channels; c++)
    ch[c] = chan(u, c, a);
  if (t->sh->dev->kind == ZS_DEVICE_CUDA)
    return store ? zs_optim_store_dev(t->optim, &seg, (const float *const *)ch, cs)
                 : zs_optim_gather_dev(t->optim, &seg, ch, cs);
  if (store)
    zs_optim_store(t->optim, &seg, (const float *const *)ch);
  else
    zs_optim_gather(t->optim, &seg, ch);
  return ZS_OK;
}

/* Each piece's gather into the channels (the overlap of its whole tensors with this rank's
   optimizer range), or each piece's store from them: the memory tiers' (the NVMe tier's pieces
   go through its passes: zs_nvme_tier_whole_gather, and its update stores). */
static zs_status pieces(zs_tiers *t, zs_unit *u, int store, void *cs) {
  float tail[TAIL] = {0}; /* any state dtype; a store's values here are dropped */
  const int cuda = t->sh->dev->kind == ZS_DEVICE_CUDA;
  for (int k = 0; k < u->ntensors; k++) {
    size_t a, b, x, m;
    if (u->whole_owner[k] < 0 ||
        !zs_layout_overlap(&u->lay, k, u->opt_off, u->opt_off + u->opt_n, &a, &b))
      continue;
    if (!u->keeps[k]) /* no state: nothing to split */
      m = b;
    else if (!zs_unit_kept_overlap(u, k, 0, a, b, &x, &m)) /* kept: a prefix [a, m) */
      m = a;
    if (a < m) ZS_CHECK(piece(t, u, k, a, m, store, NULL, cs));
    if (m < b && cuda) /* the segment's state is NULL past what it keeps: the device steps skip */
      ZS_CHECK(piece(t, u, k, m, b, store, NULL, cs));
    for (size_t y = m; y < b && !cuda; y += TAIL) /* a gather never writes the tail: zeros */
      ZS_CHECK(piece(t, u, k, y, b - y < TAIL ? b : y + TAIL, store, tail, cs));
  }
  return ZS_OK;
}

zs_status zs_tier_whole_begin(zs_tiers *t, zs_unit *u) {
  u->whole_dir = NULL;
  int cin, cout;
  unit_channels(t, u, &cin, &cout);
  if (!cin) return ZS_OK;
  zs_shard_ctx *x = t->sh;
  const int cuda = x->dev->kind == ZS_DEVICE_CUDA;
  void *cs = cuda ? x->dev->compute_stream : NULL; /* the update's stream: all of it in order */
  const size_t P = u->lay.padded, sh = u->lay.shard, bytes = (size_t)cin * P * sizeof(float);
  const size_t wn = work_floats(t, u);
  /* Sharded state: gather, one rank per tensor, scatter back; else every rank holds every piece
     and computes every tensor itself (no exchange but the joins of split tensors). A failure
     before the exchange fails the engine where peers are entering it (they would wait in it). */
  const int sharded = u->opt_n != P && x->shard_size > 1, joins = unit_joins(t, u);
  const int nvme = zs_unit_on_nvme(u);
  if (cuda && (nvme || joins || zs_unit_opt_on_host(u))) /* commit refuses these first */
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "the whole-tensor step of unit '%s' on CUDA: its state must "
                  "be on the device and its tensors unsplit",
                  u->name);
  float *work = NULL;
  zs_status rc = zs_sh_alloc(x, ZS_MEM_BUFFERS, bytes, (void **)&u->whole_dir, cs);
  if (rc == ZS_OK) {
    u->whole_channels = cin; /* zs_tier_whole_end frees it whatever happens next */
    rc = zs_sh_alloc(x, ZS_MEM_BUFFERS, wn * sizeof *work, (void **)&work, cs);
  }
  if (rc == ZS_OK) rc = zs_dev_zero(x->dev, u->whole_dir, bytes, cs);
  void *blas = NULL; /* made on every rank before the exchange: none fails alone inside it */
  if (rc == ZS_OK && cuda && unit_blas(t, u)) rc = zs_dev_blas(x->dev, cs, &blas);
  if (rc != ZS_OK) { /* its shard group is entering the exchange: failing here fails them too */
    rc = zs_err_wrap(rc, "the whole-tensor step of unit '%s': its buffers", u->name);
    if (work) zs_sh_free_after(x, rc, ZS_MEM_BUFFERS, work, wn * sizeof *work, cs);
    return sharded || joins ? zs_sh_fail_hard(x, rc) : rc;
  }
  rc = nvme ? zs_nvme_tier_whole_gather(t, u) : pieces(t, u, 0, cs);
  if (rc != ZS_OK) {
    zs_sh_free_after(x, rc, ZS_MEM_BUFFERS, work, wn * sizeof *work, cs);
    return sharded || joins ? zs_sh_fail_hard(x, rc) : rc;
  }
  for (int c = 0; sharded && c < cin && rc == ZS_OK; c++)
    rc = zs_coll_all_gather(x->shard, chan(u, c, u->lay.shard_off), chan(u, c, 0), sh, ZS_CDT_F32,
                            cs);
  if (rc == ZS_OK) rc = run_owned(t, u, cout, !sharded, work, blas, cs);
  zs_sh_free_after(x, rc, ZS_MEM_BUFFERS, work, wn * sizeof *work, cs); /* a join's buffer */
  for (int c = 0; sharded && c < cout && rc == ZS_OK; c++)
    rc = zs_coll_reduce_scatter(x->shard, chan(u, c, 0), chan(u, c, u->lay.shard_off), sh,
                                ZS_CDT_F32, cs);
  if (rc == ZS_OK && !nvme) rc = pieces(t, u, 1, cs);
  if (rc == ZS_OK) return ZS_OK;
  rc = zs_err_wrap(rc, "the whole-tensor step of unit '%s'", u->name);
  /* A step that failed on this rank alone (a device launch) leaves its peers in the exchange. */
  return sharded || joins ? zs_sh_fail_hard(x, rc) : rc;
}

void zs_tier_whole_end(zs_tiers *t, zs_unit *u, zs_status rc) {
  if (!u->whole_dir) return;
  const size_t bytes = (size_t)u->whole_channels * u->lay.padded * sizeof(float);
  void *cs = t->sh->dev->kind == ZS_DEVICE_CUDA ? t->sh->dev->compute_stream : NULL;
  zs_sh_free_after(t->sh, rc, ZS_MEM_BUFFERS, u->whole_dir, bytes, cs);
  u->whole_dir = NULL;
}
