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

/* Ordered sum over the world of `src` (P elements in rd, blocks of s per shard index) into dst
   (s elements in dst_dt): rank q contributes block (q mod S). */
static zs_status ordered_reduce_scatter(zs_engine *e, const void *src, size_t P, size_t s,
                                        void *dst, zs_dtype dst_dt, int accumulate) {
  const zs_dtype rd = e->cfg.reduce_dtype;
  const size_t es = zs_dtype_size(rd);
  const int W = e->world_size, R = W / e->shard_size;
  void *cs = e->dev.comm_stream;
  scratch send = {0}, recv = {0};
  zs_status rc = ZS_OK;
  const void *sendp = src;
  if (R > 1) {
    /* Hybrid: world rank q = g*S + k needs block k, so the send buffer is R copies of src. */
    ZS_CHECK_GOTO(scratch_get(e, &send, (size_t)R * P * es), rc, out);
    for (int g = 0; g < R; g++)
      ZS_CHECK_GOTO(zs_dev_copy(&e->dev, (char *)send.p + (size_t)g * P * es, src, P * es, cs), rc,
                    out);
    sendp = send.p;
  }
  ZS_CHECK_GOTO(scratch_get(e, &recv, (size_t)W * s * es), rc, out);
  ZS_CHECK_GOTO(zs_coll_all_to_all(e->world, sendp, recv.p, s, zs_cdt_of(rd), cs), rc, out);
  ZS_CHECK_GOTO(zs_dev_sum_chunks(&e->dev, dst, dst_dt, recv.p, rd, W, s, s, accumulate, cs), rc,
                out);
out:
  if (rc != ZS_OK) zs_engine_fail(e, rc); /* before freeing: see zs_mem_free */
  scratch_put(e, &recv);
  scratch_put(e, &send);
  return rc;
}

/* Ordered all-reduce of P elements of buf (rd) over the world, in place. */
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

/* Non-deterministic reduce-scatter of red (P elements, rd) into its own shard block, then the
   replica all-reduce (hybrid). Returns the pointer to the reduced block. */
static zs_status plain_reduce_scatter(zs_engine *e, void *red, size_t s, void **block) {
  const zs_dtype rd = e->cfg.reduce_dtype;
  void *cs = e->dev.comm_stream;
  void *mine = zs_ptr_add(red, (size_t)e->shard_rank * s, rd);
  ZS_CHECK(zs_coll_reduce_scatter(e->shard, red, mine, s, zs_cdt_of(rd), cs));
  if (e->replica) ZS_CHECK(zs_coll_all_reduce(e->replica, mine, mine, s, zs_cdt_of(rd), cs));
  *block = mine;
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
  const size_t P = u->lay.padded, s = u->lay.shard;
  const int st = e->cfg.stage, det = e->cfg.deterministic;
  void *cs = e->dev.comm_stream;
  if (st == 0) {
    if (det && e->world_size > 1)
      ZS_CHECK(ordered_all_reduce(e, red, P));
    else if (e->world_size > 1)
      ZS_CHECK(zs_coll_all_reduce(e->world, red, red, P, zs_cdt_of(rd), cs));
    return red == u->grad_full ? ZS_OK : zs_dev_convert(&e->dev, u->grad_full, pd, red, rd, P, cs);
  }
  /* Destination: stage 1 keeps the reduced shard inside grad_full; stages 2-3 in grad_shard. */
  void *dst = st == 1 ? zs_ptr_add(u->grad_full, u->lay.shard_off, pd) : u->grad_shard;
  const int acc = st >= 2 && u->grad_shard_valid;
  if (det) return ordered_reduce_scatter(e, red, P, s, dst, pd, acc);
  void *block = NULL;
  ZS_CHECK(plain_reduce_scatter(e, red, s, &block));
  if (acc) return zs_dev_add_into(&e->dev, dst, pd, block, rd, s, cs);
  return zs_dev_convert(&e->dev, dst, pd, block, rd, s, cs);
}

zs_status zs_shard_reduce(zs_unit *u, int last_micro) {
  zs_engine *e = u->e;
  const int st = e->cfg.stage;
  if (st <= 1 && !last_micro) return ZS_OK; /* the user keeps accumulating in grad_full */
  const zs_dtype pd = e->cfg.param_dtype, rd = e->cfg.reduce_dtype;
  const size_t P = u->lay.padded;
  zs_dev *d = &e->dev;
  zs_status rc = ZS_OK;
  if (st >= 2) ZS_CHECK(zs_shard_grad_buffer(u)); /* no backward wrote it: zeros still reduce */
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
  if (st >= 2) {
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
  const int st = e->cfg.stage;
  if (st != 1 && st != 2) return ZS_OK;
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
