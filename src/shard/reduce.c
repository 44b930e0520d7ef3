/* Gradient reduction after a unit's backward: all-reduce (stage 0), reduce-scatter into the
 * shard (stages 1-3), in reduce_dtype. deterministic: every micro-step is reduced on its own and
 * folded onto the accumulated gradient in global micro-batch order (micro-step m of world rank r
 * is micro-batch m * world + r): an all-to-all of blocks, then acc = (acc + g[m][0]) + g[m][1] ...
 * in world-rank order, each partial sum rounded to the accumulator's dtype, which is what one
 * rank's += of every micro-batch in turn computes. So any split of a global batch into ranks x
 * micro-steps gives the same bits. All work runs on the comm stream. */
#include "shard/shard.h"
#include "base/error.h"

/* Scratch buffer booked as `buffers`, freed on the comm stream (scratch_put: after the operation
   that used it returned rc, so that a failed collective's buffer is deferred). */
typedef struct {
  void *p;
  size_t bytes;
} scratch;

static zs_status scratch_get(zs_shard_ctx *x, scratch *s, size_t bytes) {
  s->bytes = bytes;
  return zs_sh_alloc(x, ZS_MEM_BUFFERS, bytes, &s->p, x->dev->comm_stream);
}

static void scratch_put(zs_shard_ctx *x, scratch *s, zs_status rc) {
  zs_sh_free_after(x, rc, ZS_MEM_BUFFERS, s->p, s->bytes, x->dev->comm_stream);
  s->p = NULL;
}

/* Elements per rank-block of one reduction piece: the whole block, or fewer so that a piece's
   packed buffer of nblocks blocks stays within bucket_bytes. Without a bucket the packed buffer
   is still held to one unit (S blocks): deterministic hybrid sharding packs world/S copies of
   every block, which would otherwise need 2 * world/S units of scratch. Reductions are
   elementwise in a fixed order, so cutting them into pieces never changes the bits. */
static size_t piece_len(const zs_shard_ctx *x, size_t s, size_t nblocks) {
  return zs_plan_piece_len(x->cfg, x->shard_size, s, nblocks); /* shared with the planner */
}

/* Copies piece [j, j + len) of every shard block of red into dst as nblocks blocks of len
   elements; block q takes shard (q mod S) (hybrid: every replica group needs the same shards). */
static zs_status pack_piece(zs_shard_ctx *x, void *dst, const void *red, size_t s, size_t j,
                            size_t len, size_t nblocks) {
  const zs_dtype rd = x->cfg->reduce_dtype;
  const size_t S = (size_t)x->shard_size;
  for (size_t q = 0; q < nblocks; q++)
    ZS_CHECK(zs_dev_copy(x->dev, zs_ptr_add(dst, q * len, rd),
                         zs_ptr_add((void *)red, (q % S) * s + j, rd), len * zs_dtype_size(rd),
                         x->dev->comm_stream));
  return ZS_OK;
}

/* Reduces red (P = S*s elements in rd; block k belongs to shard k) into this rank's shard dst
   (s elements in dst_dt), adding to dst when accumulate. deterministic: all-to-all over the world
   and one sum in world-rank order; else reduce-scatter in the shard group, then all-reduce across
   replicas (hybrid). */
static zs_status reduce_scatter_into(zs_shard_ctx *x, void *red, size_t s, void *dst,
                                     zs_dtype dst_dt, int accumulate) {
  const zs_dtype rd = x->cfg->reduce_dtype;
  const size_t es = zs_dtype_size(rd), S = (size_t)x->shard_size, W = (size_t)x->world_size;
  const int det = x->cfg->deterministic;
  const size_t nblocks = det ? W : S, c = piece_len(x, s, nblocks);
  const int pack = !(c == s && nblocks == S); /* red already is S whole blocks */
  void *cs = x->dev->comm_stream;
  scratch send = {0}, recv = {0};
  zs_status rc = ZS_OK;
  if (pack) ZS_CHECK_GOTO(scratch_get(x, &send, nblocks * c * es), rc, out);
  if (det || pack) ZS_CHECK_GOTO(scratch_get(x, &recv, (det ? W : 1) * c * es), rc, out);
  for (size_t j = 0; j < s; j += c) {
    const size_t len = s - j < c ? s - j : c;
    void *sendp = red;
    if (pack) {
      ZS_CHECK_GOTO(pack_piece(x, send.p, red, s, j, len, nblocks), rc, out);
      sendp = send.p;
    }
    void *out_j = zs_ptr_add(dst, j, dst_dt);
    if (det) {
      /* The fold starts from +0, as a zeroed gradient does (0 + -0 is +0, not -0). */
      if (!accumulate)
        ZS_CHECK_GOTO(zs_dev_zero(x->dev, out_j, len * zs_dtype_size(dst_dt), cs), rc, out);
      ZS_CHECK_GOTO(zs_coll_all_to_all(x->world, sendp, recv.p, len, zs_cdt_of(rd), cs), rc, out);
      ZS_CHECK_GOTO(zs_dev_sum_chunks(x->dev, out_j, dst_dt, recv.p, rd, (int)W, len, len, 1, cs),
                    rc, out);
      continue;
    }
    /* In place when unpacked: this rank's block of red receives the sum. */
    void *block = pack ? recv.p : zs_ptr_add(red, (size_t)x->shard_rank * s, rd);
    ZS_CHECK_GOTO(zs_coll_reduce_scatter(x->shard, sendp, block, len, zs_cdt_of(rd), cs), rc, out);
    if (x->replica)
      ZS_CHECK_GOTO(zs_coll_all_reduce(x->replica, block, block, len, zs_cdt_of(rd), cs), rc, out);
    if (accumulate)
      ZS_CHECK_GOTO(zs_dev_add_into(x->dev, out_j, dst_dt, block, rd, len, cs), rc, out);
    else
      ZS_CHECK_GOTO(zs_dev_convert(x->dev, out_j, dst_dt, block, rd, len, cs), rc, out);
  }
out:
  scratch_put(x, &recv, rc);
  scratch_put(x, &send, rc);
  return rc;
}

/* Ordered fold over the world (deterministic, stage 0): acc (P elements in pd, the accumulator's
   dtype, equal on every rank) += every rank's src (P elements in rd) in world-rank order, on every
   rank. An all-to-all of W chunks, this rank's chunk of acc folded with the W received ones,
   all-gather. Scratch: a (send, then the folded chunks in pd) and b (receive), W * ceil(P/W)
   each. */
static zs_status ordered_fold_all(zs_shard_ctx *x, void *acc, zs_dtype pd, const void *src,
                                  size_t P) {
  const zs_dtype rd = x->cfg->reduce_dtype;
  const size_t es = zs_dtype_size(rd), ps = zs_dtype_size(pd);
  const int W = x->world_size, r = x->world_rank;
  const size_t c = (P + (size_t)W - 1) / (size_t)W, lo = (size_t)r * c;
  const size_t mine_n = lo < P ? (P - lo < c ? P - lo : c) : 0; /* acc's elements in my chunk */
  void *cs = x->dev->comm_stream;
  scratch a = {0}, b = {0};
  zs_status rc = ZS_OK;
  ZS_CHECK_GOTO(scratch_get(x, &a, (size_t)W * c * (es > ps ? es : ps)), rc, out);
  ZS_CHECK_GOTO(scratch_get(x, &b, (size_t)W * c * es), rc, out);
  ZS_CHECK_GOTO(zs_dev_zero(x->dev, a.p, (size_t)W * c * es, cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_copy(x->dev, a.p, src, P * es, cs), rc, out);
  ZS_CHECK_GOTO(zs_coll_all_to_all(x->world, a.p, b.p, c, zs_cdt_of(rd), cs), rc, out);
  /* a was sent (stream order): it now holds the folded chunks, in the accumulator's pd. */
  void *mine = (char *)a.p + lo * ps;
  ZS_CHECK_GOTO(zs_dev_zero(x->dev, mine, c * ps, cs), rc, out);
  if (mine_n)
    ZS_CHECK_GOTO(zs_dev_copy(x->dev, mine, (char *)acc + lo * ps, mine_n * ps, cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_sum_chunks(x->dev, mine, pd, b.p, rd, W, c, c, 1, cs), rc, out);
  ZS_CHECK_GOTO(zs_coll_all_gather(x->world, mine, a.p, c, zs_cdt_of(pd), cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_copy(x->dev, acc, a.p, P * ps, cs), rc, out);
out:
  scratch_put(x, &b, rc);
  scratch_put(x, &a, rc);
  return rc;
}

/* Stage 0, deterministic: red (this micro-step's gradient, P elements in rd) folded onto acc (in
   pd) in world-rank order, in pieces whose scratch is about twice bucket_bytes. One rank: the same
   fold of one chunk (a rounded add). */
static zs_status fold_all_pieces(zs_shard_ctx *x, void *acc, zs_dtype pd, const void *red,
                                 size_t P) {
  const zs_dtype rd = x->cfg->reduce_dtype;
  if (x->world_size == 1) return zs_dev_add_into(x->dev, acc, pd, red, rd, P, x->dev->comm_stream);
  size_t c = P;
  if (x->cfg->bucket_bytes) c = x->cfg->bucket_bytes / (zs_dtype_size(rd) * 2);
  if (c < 1) c = 1;
  for (size_t j = 0; j < P; j += c) {
    const size_t len = P - j < c ? P - j : c;
    ZS_CHECK(ordered_fold_all(x, zs_ptr_add(acc, j, pd), pd, zs_ptr_add((void *)red, j, rd), len));
  }
  return ZS_OK;
}

/* Stage 0: all-reduce of red (P elements) in place, in pieces of at most bucket_bytes. */
static zs_status all_reduce_pieces(zs_shard_ctx *x, void *red, size_t P) {
  const zs_dtype rd = x->cfg->reduce_dtype;
  size_t c = P;
  if (x->cfg->bucket_bytes) c = x->cfg->bucket_bytes / zs_dtype_size(rd);
  if (c < 1) c = 1;
  for (size_t j = 0; j < P; j += c) {
    const size_t len = P - j < c ? P - j : c;
    void *p = zs_ptr_add(red, j, rd);
    ZS_CHECK(zs_coll_all_reduce(x->world, p, p, len, zs_cdt_of(rd), x->dev->comm_stream));
  }
  return ZS_OK;
}

/* Allocates and zeroes transient state k of u (its table entry's size and category) unless it
   exists; never leaves a buffer that was not zeroed. */
static zs_status zeroed_state(zs_unit *u, zs_state k) {
  zs_shard_ctx *x = u->ctx;
  void **buf = zs_unit_slot(u, k);
  if (*buf) return ZS_OK;
  const size_t bytes = zs_unit_state_bytes(u, k);
  const zs_mem_cat cat = u->st.s[k].cat;
  void *cs = x->dev->compute_stream;
  ZS_CHECK(zs_sh_alloc(x, cat, bytes, buf, cs));
  zs_status rc = zs_dev_zero(x->dev, *buf, bytes, cs);
  if (rc != ZS_OK) {
    zs_sh_free(x, cat, *buf, bytes, cs);
    *buf = NULL;
  }
  return rc;
}

zs_status zs_shard_grad_buffer(zs_unit *u) {
  return zeroed_state(u, ZS_ST_GRAD_FULL);
}

zs_status zs_shard_grad_stage(zs_unit *u) {
  return zeroed_state(u, ZS_ST_GRAD_STAGE);
}

void zs_shard_grad_drop(zs_unit *u) {
  static const zs_state transient[] = {ZS_ST_GRAD_FULL, ZS_ST_GRAD_STAGE};
  for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++) {
    const zs_state k = transient[i];
    void **buf = zs_unit_slot(u, k);
    if (!zs_state_is(&u->st, k, ZS_LIFE_TRANSIENT) || !*buf) continue;
    zs_sh_free(u->ctx, u->st.s[k].cat, *buf, zs_unit_state_bytes(u, k),
               u->ctx->dev->compute_stream);
    *buf = NULL;
  }
}

/* The reduction itself; `red` holds the local gradient in reduce_dtype, the micro-step's own when
   staged (ZS_ST_GRAD_STAGE: folded onto the persistent gradient), else the accumulated one. */
static zs_status reduce_unit(zs_unit *u, void *red, int staged) {
  zs_shard_ctx *x = u->ctx;
  const zs_dtype rd = x->cfg->reduce_dtype;
  const zs_dtype ad = u->st.s[zs_state_home(&u->st, ZS_ST_GRAD_FULL)].dtype; /* accumulator's */
  const size_t P = u->lay.padded;
  const zs_reduce_kind kind = x->plan->reduce;
  if (kind == ZS_REDUCE_ALL) {
    if (x->cfg->deterministic) return fold_all_pieces(x, u->grad_full, ad, red, P);
    if (x->world_size > 1) ZS_CHECK(all_reduce_pieces(x, red, P));
    if (staged) return zs_dev_add_into(x->dev, u->grad_full, ad, red, rd, P, x->dev->comm_stream);
    return red == u->grad_full
               ? ZS_OK
               : zs_dev_convert(x->dev, u->grad_full, ad, red, rd, P, x->dev->comm_stream);
  }
  /* Destination: this rank's slot of the full gradient (staged: accumulating over micro-steps
     from the zeros of begin_step; else written once, at the last micro-step), or the gradient
     shard (accumulating over micro-steps). */
  const int to_shard = kind == ZS_REDUCE_TO_SHARD;
  void *dst = to_shard ? u->grad_shard : zs_ptr_add(u->grad_full, u->lay.shard_off, ad);
  return reduce_scatter_into(x, red, u->lay.shard, dst, ad,
                             to_shard ? u->grad_shard_valid : staged);
}

/* A staged full gradient outside deterministic mode (grad_accum_fp32): the micro-step's buffer is
   added to the persistent gradient (its dtype) here, with no communication, and freed; the sum is
   reduced once, at the last micro-step, as an unstaged full gradient is. */
static zs_status fold_local(zs_unit *u) {
  zs_shard_ctx *x = u->ctx;
  zs_dev *d = x->dev;
  const zs_state sk = ZS_ST_GRAD_STAGE;
  if (!u->grad_stage) return ZS_OK; /* no backward wrote it this micro-step: zeros add nothing */
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream)); /* the user's backward is done */
  const zs_status rc =
      zs_dev_add_into(d, u->grad_full, u->st.s[ZS_ST_GRAD_FULL].dtype, u->grad_stage,
                      u->st.s[sk].dtype, u->lay.padded, d->comm_stream);
  if (rc != ZS_OK) return rc;
  zs_sh_free(x, u->st.s[sk].cat, u->grad_stage, zs_unit_state_bytes(u, sk), d->comm_stream);
  u->grad_stage = NULL;
  return ZS_OK;
}

zs_status zs_shard_reduce(zs_unit *u, int last_micro) {
  zs_shard_ctx *x = u->ctx;
  if (!x->plan->reduce_every_micro && !last_micro) return ZS_OK; /* still accumulating */
  /* The local gradient: the full one, or (deterministic, full gradients) the micro-step's staging
     buffer. Transient buffers live only until this reduction. */
  int staged = zs_state_is(&u->st, ZS_ST_GRAD_STAGE, ZS_LIFE_TRANSIENT);
  if (staged && !x->cfg->deterministic) {
    const zs_status fr = fold_local(u);
    if (fr != ZS_OK) return zs_err_wrap(fr, "gradient accumulation of unit '%s'", u->name);
    if (!last_micro) return ZS_OK;
    staged = 0; /* the sum, in the persistent full gradient, is reduced as it stands */
  }
  const zs_state lk = staged ? ZS_ST_GRAD_STAGE : ZS_ST_GRAD_FULL;
  const int transient = zs_state_is(&u->st, lk, ZS_LIFE_TRANSIENT);
  void **local = zs_unit_slot(u, lk);
  const zs_dtype pd = u->st.s[lk].dtype, rd = x->cfg->reduce_dtype; /* the backward's buffer */
  const size_t P = u->lay.padded;
  zs_dev *d = x->dev;
  zs_status rc = ZS_OK;
  if (transient) ZS_CHECK(zeroed_state(u, lk)); /* no backward wrote it: zeros reduce */
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream)); /* the user's backward is done */
  if (x->pre_reduce) ZS_CHECK(x->pre_reduce(x->owner, u, *local, pd, d->comm_stream));
  scratch conv = {0};
  void *red = *local;
  if (rd != pd) {
    ZS_CHECK_GOTO(scratch_get(x, &conv, P * zs_dtype_size(rd)), rc, out);
    ZS_CHECK_GOTO(zs_dev_convert(d, conv.p, rd, *local, pd, P, d->comm_stream), rc, out);
    red = conv.p;
  }
  rc = reduce_unit(u, red, staged);
  if (rc != ZS_OK) goto out; /* the caller's public call marks the failure */
  if (transient) {
    zs_sh_free(x, u->st.s[lk].cat, *local, zs_unit_state_bytes(u, lk), d->comm_stream);
    *local = NULL;
    u->grad_shard_valid = !staged;
  }
out:
  scratch_put(x, &conv, rc);
  if (rc != ZS_OK) return zs_err_wrap(rc, "gradient reduction of unit '%s'", u->name);
  return ZS_OK;
}

zs_status zs_shard_publish(zs_shard_ctx *x) {
  if (!x->plan->publish) return ZS_OK;
  zs_dev *d = x->dev;
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
  const zs_dtype pd = x->cfg->param_dtype;
  for (int i = 0; i < x->nunits; i++) {
    zs_unit *u = x->units[i];
    if (u->frozen || u->no_grad) continue; /* not updated: every rank holds them already */
    void *mine = zs_ptr_add(u->param_full, u->lay.shard_off, pd);
    zs_status rc = zs_coll_all_gather(x->shard, mine, u->param_full, u->lay.shard, zs_cdt_of(pd),
                                      d->comm_stream);
    if (rc != ZS_OK) return zs_err_wrap(rc, "publishing params of unit '%s'", u->name);
  }
  return zs_dev_order(d, d->compute_stream, d->comm_stream);
}
