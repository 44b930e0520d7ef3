/* Gradient reduction after a unit's backward: all-reduce (stage 0), reduce-scatter into the
 * shard (stages 1-3), in reduce_dtype. deterministic: every sum runs in world-rank order
 * (all-to-all of blocks, then one ordered local sum), so N ranks x 1 micro-step give the same bits
 * as 1 rank accumulating N micro-steps. All work runs on the comm stream. */
#include "core/engine_internal.h"
#include "core/error.h"

/* Scratch buffer booked as `buffers`, freed on the comm stream. */
typedef struct {
  void *p;
  size_t bytes;
} scratch;

static zs_status scratch_get(zs_engine *e, scratch *s, size_t bytes) {
  s->bytes = bytes;
  return zs_mem_alloc(e, ZS_MEM_BUFFERS, bytes, &s->p, e->dev.comm_stream);
}

static void scratch_put(zs_engine *e, scratch *s) {
  zs_mem_free(e, ZS_MEM_BUFFERS, s->p, s->bytes, e->dev.comm_stream);
  s->p = NULL;
}

/* Elements per rank-block of one reduction piece: the whole block, or fewer so that a piece's
   packed buffer of nblocks blocks stays within bucket_bytes. Without a bucket the packed buffer
   is still held to one unit (S blocks): deterministic hybrid sharding packs world/S copies of
   every block, which would otherwise need 2 * world/S units of scratch. Reductions are
   elementwise in a fixed order, so cutting them into pieces never changes the bits. */
static size_t piece_len(const zs_engine *e, size_t s, size_t nblocks) {
  const size_t es = zs_dtype_size(e->cfg.reduce_dtype), S = (size_t)e->shard_size;
  size_t c = s;
  if (e->cfg.bucket_bytes) c = e->cfg.bucket_bytes / (es * nblocks);
  if (nblocks > S && c > s * S / nblocks) c = s * S / nblocks;
  if (c < 1) c = 1;
  return c < s ? c : s;
}

/* Copies piece [j, j + len) of every shard block of red into dst as nblocks blocks of len
   elements; block q takes shard (q mod S) (hybrid: every replica group needs the same shards). */
static zs_status pack_piece(zs_engine *e, void *dst, const void *red, size_t s, size_t j,
                            size_t len, size_t nblocks) {
  const zs_dtype rd = e->cfg.reduce_dtype;
  const size_t S = (size_t)e->shard_size;
  for (size_t q = 0; q < nblocks; q++)
    ZS_CHECK(zs_dev_copy(&e->dev, zs_ptr_add(dst, q * len, rd),
                         zs_ptr_add((void *)red, (q % S) * s + j, rd), len * zs_dtype_size(rd),
                         e->dev.comm_stream));
  return ZS_OK;
}

/* Reduces red (P = S*s elements in rd; block k belongs to shard k) into this rank's shard dst
   (s elements in dst_dt), adding to dst when accumulate. deterministic: all-to-all over the world
   and one sum in world-rank order; else reduce-scatter in the shard group, then all-reduce across
   replicas (hybrid). */
static zs_status reduce_scatter_into(zs_engine *e, void *red, size_t s, void *dst, zs_dtype dst_dt,
                                     int accumulate) {
  const zs_dtype rd = e->cfg.reduce_dtype;
  const size_t es = zs_dtype_size(rd), S = (size_t)e->shard_size, W = (size_t)e->world_size;
  const int det = e->cfg.deterministic;
  const size_t nblocks = det ? W : S, c = piece_len(e, s, nblocks);
  const int pack = !(c == s && nblocks == S); /* red already is S whole blocks */
  void *cs = e->dev.comm_stream;
  scratch send = {0}, recv = {0};
  zs_status rc = ZS_OK;
  if (pack) ZS_CHECK_GOTO(scratch_get(e, &send, nblocks * c * es), rc, out);
  if (det || pack) ZS_CHECK_GOTO(scratch_get(e, &recv, (det ? W : 1) * c * es), rc, out);
  for (size_t j = 0; j < s; j += c) {
    const size_t len = s - j < c ? s - j : c;
    void *sendp = red;
    if (pack) {
      ZS_CHECK_GOTO(pack_piece(e, send.p, red, s, j, len, nblocks), rc, out);
      sendp = send.p;
    }
    void *out_j = zs_ptr_add(dst, j, dst_dt);
    if (det) {
      ZS_CHECK_GOTO(zs_coll_all_to_all(e->world, sendp, recv.p, len, zs_cdt_of(rd), cs), rc, out);
      ZS_CHECK_GOTO(
          zs_dev_sum_chunks(&e->dev, out_j, dst_dt, recv.p, rd, (int)W, len, len, accumulate, cs),
          rc, out);
      continue;
    }
    /* In place when unpacked: this rank's block of red receives the sum. */
    void *block = pack ? recv.p : zs_ptr_add(red, (size_t)e->shard_rank * s, rd);
    ZS_CHECK_GOTO(zs_coll_reduce_scatter(e->shard, sendp, block, len, zs_cdt_of(rd), cs), rc, out);
    if (e->replica)
      ZS_CHECK_GOTO(zs_coll_all_reduce(e->replica, block, block, len, zs_cdt_of(rd), cs), rc, out);
    if (accumulate)
      ZS_CHECK_GOTO(zs_dev_add_into(&e->dev, out_j, dst_dt, block, rd, len, cs), rc, out);
    else
      ZS_CHECK_GOTO(zs_dev_convert(&e->dev, out_j, dst_dt, block, rd, len, cs), rc, out);
  }
out:
  if (rc != ZS_OK) zs_engine_fail(e, rc); /* before freeing: see zs_mem_free */
  scratch_put(e, &recv);
  scratch_put(e, &send);
  return rc;
}

/* Ordered all-reduce of P elements of buf (rd) over the world, in place: all-to-all of W chunks,
   one ordered sum of this rank's chunk, all-gather. */
static zs_status ordered_all_reduce(zs_engine *e, void *buf, size_t P) {
  const zs_dtype rd = e->cfg.reduce_dtype;
  const size_t es = zs_dtype_size(rd);
  const int W = e->world_size, r = e->world_rank;
  const size_t c = (P + (size_t)W - 1) / (size_t)W;
  void *cs = e->dev.comm_stream;
  scratch a = {0}, b = {0};
  zs_status rc = ZS_OK;
  ZS_CHECK_GOTO(scratch_get(e, &a, (size_t)W * c * es), rc, out);
  ZS_CHECK_GOTO(scratch_get(e, &b, (size_t)W * c * es), rc, out);
  ZS_CHECK_GOTO(zs_dev_zero(&e->dev, a.p, (size_t)W * c * es, cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_copy(&e->dev, a.p, buf, P * es, cs), rc, out);
  ZS_CHECK_GOTO(zs_coll_all_to_all(e->world, a.p, b.p, c, zs_cdt_of(rd), cs), rc, out);
  void *mine = (char *)a.p + (size_t)r * c * es;
  ZS_CHECK_GOTO(zs_dev_sum_chunks(&e->dev, mine, rd, b.p, rd, W, c, c, 0, cs), rc, out);
  ZS_CHECK_GOTO(zs_coll_all_gather(e->world, mine, a.p, c, zs_cdt_of(rd), cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_copy(&e->dev, buf, a.p, P * es, cs), rc, out);
out:
  if (rc != ZS_OK) zs_engine_fail(e, rc);
  scratch_put(e, &b);
  scratch_put(e, &a);
  return rc;
}

/* Stage 0: all-reduce of red (P elements) in place, in pieces of at most bucket_bytes
   (deterministic: ordered, its scratch is about twice a piece). */
static zs_status all_reduce_pieces(zs_engine *e, void *red, size_t P) {
  const zs_dtype rd = e->cfg.reduce_dtype;
  const size_t es = zs_dtype_size(rd);
  size_t c = P;
  if (e->cfg.bucket_bytes) c = e->cfg.bucket_bytes / (es * (e->cfg.deterministic ? 2 : 1));
  if (c < 1) c = 1;
  for (size_t j = 0; j < P; j += c) {
    const size_t len = P - j < c ? P - j : c;
    void *p = zs_ptr_add(red, j, rd);
    if (e->cfg.deterministic)
      ZS_CHECK(ordered_all_reduce(e, p, len));
    else
      ZS_CHECK(zs_coll_all_reduce(e->world, p, p, len, zs_cdt_of(rd), e->dev.comm_stream));
  }
  return ZS_OK;
}

zs_status zs_shard_grad_buffer(zs_unit *u) {
  zs_engine *e = u->e;
  if (u->grad_full) return ZS_OK;
  const size_t bytes = u->lay.padded * zs_dtype_size(e->cfg.param_dtype);
  ZS_CHECK(zs_mem_alloc(e, ZS_MEM_BUFFERS, bytes, &u->grad_full, e->dev.compute_stream));
  return zs_dev_zero(&e->dev, u->grad_full, bytes, e->dev.compute_stream);
}

/* The reduction itself; `red` holds the local gradient in reduce_dtype. */
static zs_status reduce_unit(zs_unit *u, void *red) {
  zs_engine *e = u->e;
  const zs_dtype pd = e->cfg.param_dtype, rd = e->cfg.reduce_dtype;
  const size_t P = u->lay.padded;
  const zs_reduce_kind kind = e->plan.reduce;
  if (kind == ZS_REDUCE_ALL) {
    if (e->world_size > 1) ZS_CHECK(all_reduce_pieces(e, red, P));
    return red == u->grad_full
               ? ZS_OK
               : zs_dev_convert(&e->dev, u->grad_full, pd, red, rd, P, e->dev.comm_stream);
  }
  /* Destination: this rank's slot of the full gradient, or the gradient shard (accumulating
     over micro-steps). */
  const int to_shard = kind == ZS_REDUCE_TO_SHARD;
  void *dst = to_shard ? u->grad_shard : zs_ptr_add(u->grad_full, u->lay.shard_off, pd);
  return reduce_scatter_into(e, red, u->lay.shard, dst, pd, to_shard && u->grad_shard_valid);
}

zs_status zs_shard_reduce(zs_unit *u, int last_micro) {
  zs_engine *e = u->e;
  const int transient = !e->plan.grads_full; /* grad_full lives only until this reduction */
  if (!e->plan.reduce_every_micro && !last_micro) return ZS_OK; /* still accumulating */
  const zs_dtype pd = e->cfg.param_dtype, rd = e->cfg.reduce_dtype;
  const size_t P = u->lay.padded;
  zs_dev *d = &e->dev;
  zs_status rc = ZS_OK;
  if (transient) ZS_CHECK(zs_shard_grad_buffer(u)); /* no backward wrote it: zeros reduce */
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream)); /* the user's backward is done */
  scratch conv = {0};
  void *red = u->grad_full;
  if (rd != pd) {
    ZS_CHECK_GOTO(scratch_get(e, &conv, P * zs_dtype_size(rd)), rc, out);
    ZS_CHECK_GOTO(zs_dev_convert(d, conv.p, rd, u->grad_full, pd, P, d->comm_stream), rc, out);
    red = conv.p;
  }
  rc = reduce_unit(u, red);
  if (rc != ZS_OK) {
    zs_engine_fail(e, rc);
    goto out;
  }
  if (transient) {
    zs_mem_free(e, ZS_MEM_BUFFERS, u->grad_full, P * zs_dtype_size(pd), d->comm_stream);
    u->grad_full = NULL;
    u->grad_shard_valid = 1;
  }
out:
  scratch_put(e, &conv);
  if (rc != ZS_OK)
    return zs_engine_fail(e, zs_err_wrap(rc, "gradient reduction of unit '%s'", u->name));
  return ZS_OK;
}

zs_status zs_shard_publish(zs_engine *e) {
  if (!e->plan.publish) return ZS_OK;
  zs_dev *d = &e->dev;
  ZS_CHECK(zs_dev_order(d, d->comm_stream, d->compute_stream));
  const zs_dtype pd = e->cfg.param_dtype;
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    void *mine = zs_ptr_add(u->param_full, u->lay.shard_off, pd);
    zs_status rc = zs_coll_all_gather(e->shard, mine, u->param_full, u->lay.shard, zs_cdt_of(pd),
                                      d->comm_stream);
    if (rc != ZS_OK)
      return zs_engine_fail(e, zs_err_wrap(rc, "publishing params of unit '%s'", u->name));
  }
  return zs_dev_order(d, d->compute_stream, d->comm_stream);
}
