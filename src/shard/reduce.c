/* Gradient reduction after a unit's backward: all-reduce (stage 0), reduce-scatter into the
 * shard (stages 1-3), in reduce_dtype. deterministic: every sum runs in world-rank order
 * (all-to-all of blocks, then one ordered local sum), so N ranks x 1 micro-step give the same bits
 * as 1 rank accumulating N micro-steps. All work runs on the comm stream. */
#include "shard/shard.h"
#include "base/error.h"

/* Scratch buffer booked as `buffers`, freed on the comm stream. */
typedef struct {
  void *p;
  size_t bytes;
} scratch;

static zs_status scratch_get(zs_shard_ctx *x, scratch *s, size_t bytes) {
  s->bytes = bytes;
  return zs_sh_alloc(x, ZS_MEM_BUFFERS, bytes, &s->p, x->dev->comm_stream);
}

static void scratch_put(zs_shard_ctx *x, scratch *s) {
  zs_sh_free(x, ZS_MEM_BUFFERS, s->p, s->bytes, x->dev->comm_stream);
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
      ZS_CHECK_GOTO(zs_coll_all_to_all(x->world, sendp, recv.p, len, zs_cdt_of(rd), cs), rc, out);
      ZS_CHECK_GOTO(
          zs_dev_sum_chunks(x->dev, out_j, dst_dt, recv.p, rd, (int)W, len, len, accumulate, cs),
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
  if (rc != ZS_OK) zs_sh_fail(x, rc); /* before freeing: frees are deferred once failed */
  scratch_put(x, &recv);
  scratch_put(x, &send);
  return rc;
}

/* Ordered all-reduce of P elements of buf (rd) over the world, in place: all-to-all of W chunks,
   one ordered sum of this rank's chunk, all-gather. */
static zs_status ordered_all_reduce(zs_shard_ctx *x, void *buf, size_t P) {
  const zs_dtype rd = x->cfg->reduce_dtype;
  const size_t es = zs_dtype_size(rd);
  const int W = x->world_size, r = x->world_rank;
  const size_t c = (P + (size_t)W - 1) / (size_t)W;
  void *cs = x->dev->comm_stream;
  scratch a = {0}, b = {0};
  zs_status rc = ZS_OK;
  ZS_CHECK_GOTO(scratch_get(x, &a, (size_t)W * c * es), rc, out);
  ZS_CHECK_GOTO(scratch_get(x, &b, (size_t)W * c * es), rc, out);
  ZS_CHECK_GOTO(zs_dev_zero(x->dev, a.p, (size_t)W * c * es, cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_copy(x->dev, a.p, buf, P * es, cs), rc, out);
  ZS_CHECK_GOTO(zs_coll_all_to_all(x->world, a.p, b.p, c, zs_cdt_of(rd), cs), rc, out);
  void *mine = (char *)a.p + (size_t)r * c * es;
  ZS_CHECK_GOTO(zs_dev_sum_chunks(x->dev, mine, rd, b.p, rd, W, c, c, 0, cs), rc, out);
  ZS_CHECK_GOTO(zs_coll_all_gather(x->world, mine, a.p, c, zs_cdt_of(rd), cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_copy(x->dev, buf, a.p, P * es, cs), rc, out);
out:
  if (rc != ZS_OK) zs_sh_fail(x, rc);
  scratch_put(x, &b);
  scratch_put(x, &a);
  return rc;
}

/* Stage 0: all-reduce of red (P elements) in place, in pieces of at most bucket_bytes
   (deterministic: ordered, its scratch is about twice a piece). */
static zs_status all_reduce_pieces(zs_shard_ctx *x, void *red, size_t P) {
  const zs_dtype rd = x->cfg->reduce_dtype;
  const size_t es = zs_dtype_size(rd);
  size_t c = P;
  if (x->cfg->bucket_bytes) c = x->cfg->bucket_bytes / (es * (x->cfg->deterministic ? 2 : 1));
  if (c < 1) c = 1;
  for (size_t j = 0; j < P; j += c) {
    const size_t len = P - j < c ? P - j : c;
    void *p = zs_ptr_add(red, j, rd);
    if (x->cfg->deterministic)
      ZS_CHECK(ordered_all_reduce(x, p, len));
    else
      ZS_CHECK(zs_coll_all_reduce(x->world, p, p, len, zs_cdt_of(rd), x->dev->comm_stream));
  }
  return ZS_OK;
}

zs_status zs_shard_grad_buffer(zs_unit *u) {
  zs_shard_ctx *x = u->ctx;
  if (u->grad_full) return ZS_OK;
  const size_t bytes = u->lay.padded * zs_dtype_size(x->cfg->param_dtype);
  ZS_CHECK(zs_sh_alloc(x, ZS_MEM_BUFFERS, bytes, &u->grad_full, x->dev->compute_stream));
  return zs_dev_zero(x->dev, u->grad_full, bytes, x->dev->compute_stream);
}

/* The reduction itself; `red` holds the local gradient in reduce_dtype. */
static zs_status reduce_unit(zs_unit *u, void *red) {
  zs_shard_ctx *x = u->ctx;
  const zs_dtype pd = x->cfg->param_dtype, rd = x->cfg->reduce_dtype;
  const size_t P = u->lay.padded;
  const zs_reduce_kind kind = x->plan->reduce;
  if (kind == ZS_REDUCE_ALL) {
    if (x->world_size > 1) ZS_CHECK(all_reduce_pieces(x, red, P));
    return red == u->grad_full
               ? ZS_OK
               : zs_dev_convert(x->dev, u->grad_full, pd, red, rd, P, x->dev->comm_stream);
  }
  /* Destination: this rank's slot of the full gradient, or the gradient shard (accumulating
     over micro-steps). */
  const int to_shard = kind == ZS_REDUCE_TO_SHARD;
  void *dst = to_shard ? u->grad_shard : zs_ptr_add(u->grad_full, u->lay.shard_off, pd);
  return reduce_scatter_into(x, red, u->lay.shard, dst, pd, to_shard && u->grad_shard_valid);
}

zs_status zs_shard_reduce(zs_unit *u, int last_micro) {
  zs_shard_ctx *x = u->ctx;
  const int transient = !x->plan->grads_full; /* grad_full lives only until this reduction */
  if (!x->plan->reduce_every_micro && !last_micro) return ZS_OK; /* still accumulating */
  const zs_dtype pd = x->cfg->param_dtype, rd = x->cfg->reduce_dtype;
  const size_t P = u->lay.padded;
  zs_dev *d = x->dev;
  zs_status rc = ZS_OK;
  if (transient) ZS_CHECK(zs_shard_grad_buffer(u)); /* no backward wrote it: zeros reduce */
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream)); /* the user's backward is done */
  scratch conv = {0};
  void *red = u->grad_full;
  if (rd != pd) {
    ZS_CHECK_GOTO(scratch_get(x, &conv, P * zs_dtype_size(rd)), rc, out);
    ZS_CHECK_GOTO(zs_dev_convert(d, conv.p, rd, u->grad_full, pd, P, d->comm_stream), rc, out);
    red = conv.p;
  }
  rc = reduce_unit(u, red);
  if (rc != ZS_OK) {
    zs_sh_fail(x, rc);
    goto out;
  }
  if (transient) {
    zs_sh_free(x, ZS_MEM_BUFFERS, u->grad_full, P * zs_dtype_size(pd), d->comm_stream);
    u->grad_full = NULL;
    u->grad_shard_valid = 1;
  }
out:
  scratch_put(x, &conv);
  if (rc != ZS_OK)
    return zs_sh_fail(x, zs_err_wrap(rc, "gradient reduction of unit '%s'", u->name));
  return ZS_OK;
}

zs_status zs_shard_publish(zs_shard_ctx *x) {
  if (!x->plan->publish) return ZS_OK;
  zs_dev *d = x->dev;
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
  const zs_dtype pd = x->cfg->param_dtype;
  for (int i = 0; i < x->nunits; i++) {
    zs_unit *u = x->units[i];
    void *mine = zs_ptr_add(u->param_full, u->lay.shard_off, pd);
    zs_status rc = zs_coll_all_gather(x->shard, mine, u->param_full, u->lay.shard, zs_cdt_of(pd),
                                      d->comm_stream);
    if (rc != ZS_OK)
      return zs_sh_fail(x, zs_err_wrap(rc, "publishing params of unit '%s'", u->name));
  }
  return zs_dev_order(d, d->compute_stream, d->comm_stream);
}
