/* Reading and writing a tensor's reduced gradient inside a step (zs_unit_get_grad,
 * zs_unit_set_grad). */
#include <stdlib.h>

#include "base/bf16.h"
#include "base/error.h"
#include "engine/engine_internal.h"
#include "engine/fail.h"

/* The refusals: a usable unit, tensor and buffer; inside a step, after the unit's last
   grads_ready; a unit that has a gradient this step. */
static zs_status check_grad_call(const zs_unit *u, int t, const float *host, const char *fn) {
  ZS_CHECK(zs_engine_check_tensor(u, t, host, fn));
  const zs_engine *e = u->e;
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "%s('%s'): the engine failed earlier; destroy it", fn, u->name);
  if (e->state != ZS_ENGINE_IN_STEP)
    return zs_err(ZS_ERR_STATE,
                  "%s('%s') outside a step: the gradient exists between the unit's last "
                  "zs_unit_grads_ready and zs_engine_step",
                  fn, u->name);
  if (u->frozen || u->no_grad)
    return zs_err(ZS_ERR_STATE, "%s('%s'): the unit has no gradient this step (%s)", fn, u->name,
                  u->frozen ? "frozen" : "zs_unit_no_grad");
  if (u->grads_ready_count != e->micro_steps)
    return zs_err(ZS_ERR_STATE,
                  "%s('%s') after %d of %d zs_unit_grads_ready calls: the gradient is reduced "
                  "after the last one",
                  fn, u->name, u->grads_ready_count, e->micro_steps);
  return ZS_OK;
}

/* The whole reduced gradient of u (P elements in gd) in device memory: the full gradient with
   full optimizer state (every rank reduced all of it), else this rank's reduced part (the shard, or
   its slot of the full gradient) all-gathered over the shard group into buf. */
static zs_status whole_grad(zs_engine *e, zs_unit *u, zs_dtype gd, void *buf, const void **out) {
  zs_dev *d = &e->dev;
  *out = u->grad_full;
  zs_status rc = zs_dev_order(d, d->comm_stream, d->compute_stream);
  if (rc == ZS_OK && e->plan.reduce == ZS_REDUCE_ALL) { /* the reductions' end, with the timeout */
    rc = zs_coll_sync(e->world, d->comm_stream);
    return rc == ZS_OK ? zs_dev_sync(d, d->comm_stream) : rc;
  }
  if (rc != ZS_OK) return rc;
  const size_t s = u->lay.shard;
  const void *part = e->plan.reduce == ZS_REDUCE_TO_SHARD
                         ? u->grad_shard
                         : zs_ptr_add(u->grad_full, u->lay.shard_off, gd);
  void *mine = zs_ptr_add(buf, u->lay.shard_off, gd);
  rc = zs_dev_copy(d, mine, part, s * zs_dtype_size(gd), d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_all_gather(e->shard, mine, buf, s, zs_cdt_of(gd), d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(e->shard, d->comm_stream);
  if (rc == ZS_OK) rc = zs_dev_sync(d, d->comm_stream);
  *out = buf;
  return rc;
}

zs_status zs_unit_get_grad(zs_unit *u, int t, float *host_full) {
  ZS_CHECK(check_grad_call(u, t, host_full, "zs_unit_get_grad"));
  zs_engine *e = u->e;
  zs_engine_call(e, ZS_CALL_GET_GRAD, u);
  const zs_dtype gd = u->st.s[zs_state_home(&u->st, ZS_ST_GRAD_FULL)].dtype;
  const size_t P = u->lay.padded, es = zs_dtype_size(gd), n = u->lay.numel[t];
  const int gather = e->plan.reduce != ZS_REDUCE_ALL;
  void *buf = NULL;
  zs_status rc = gather ? zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, P * es, &buf, NULL) : ZS_OK;
  if (rc != ZS_OK) /* its shard group is entering the gather: failing here fails them too */
    return zs_engine_fail_hard(e, zs_err_wrap(rc, "zs_unit_get_grad: the gather's buffer"));
  const void *whole = NULL;
  rc = whole_grad(e, u, gd, buf, &whole);
  uint16_t *tmp = gd == ZS_BF16 && n ? malloc(n * 2) : NULL;
  if (rc == ZS_OK && gd == ZS_BF16 && n && !tmp)
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_unit_get_grad: out of host memory");
  const void *src = rc == ZS_OK ? zs_ptr_add((void *)whole, u->lay.off[t], gd) : NULL;
  if (rc == ZS_OK)
    rc = zs_dev_to_host(&e->dev, gd == ZS_BF16 ? (void *)tmp : host_full, src, n * es);
  /* The mean over the global batch, as the optimizer scales it before clipping (step.c). */
  const float scale = (float)(1.0 / ((double)e->world_size * (double)e->micro_steps));
  for (size_t i = 0; rc == ZS_OK && i < n; i++)
    host_full[i] = (gd == ZS_BF16 ? zs_bf16_to_f32(tmp[i]) : host_full[i]) * scale;
  free(tmp);
  if (gather) zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, buf, P * es, NULL);
  return rc == ZS_OK ? rc : zs_engine_fail(e, rc);
}

zs_status zs_unit_set_grad(zs_unit *u, int t, const float *host_full) {
  ZS_CHECK(check_grad_call(u, t, host_full, "zs_unit_set_grad"));
  zs_engine *e = u->e;
  zs_dev *d = &e->dev;
  /* The reductions that write this rank's part are done before it is overwritten. */
  zs_status rc = zs_engine_sync_groups(e);
  if (rc == ZS_OK) rc = zs_dev_sync(d, d->comm_stream);
  if (rc != ZS_OK) return zs_engine_fail(e, zs_err_wrap(rc, "zs_unit_set_grad"));
  /* What the optimizer reads: the tensor's piece of this rank's optimizer range, the sum
     (the mean times world * micro_steps) in the accumulator's dtype. */
  size_t a, b;
  const size_t n = u->lay.numel[t];
  if (zs_layout_overlap(&u->lay, t, u->opt_off, u->opt_off + u->opt_n, &a, &b)) {
    const zs_dtype gd = u->st.s[zs_state_home(&u->st, ZS_ST_GRAD_FULL)].dtype;
    const size_t m = b - a, es = zs_dtype_size(gd), first = a - u->lay.off[t];
    const float scale = (float)((double)e->world_size * (double)e->micro_steps);
    void *tmp = malloc(m * es);
    if (!tmp) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_unit_set_grad: out of host memory");
    for (size_t i = 0; i < m; i++) {
      const float v = host_full[first + i] * scale;
      if (gd == ZS_BF16)
        ((uint16_t *)tmp)[i] = zs_f32_to_bf16(v);
      else
        ((float *)tmp)[i] = v;
    }
    rc = zs_dev_from_host(d, zs_unit_home_at(u, ZS_ST_GRAD_FULL, a), tmp, m * es);
    free(tmp);
    if (rc != ZS_OK) return zs_engine_fail(e, zs_err_wrap(rc, "zs_unit_set_grad"));
  }
  zs_engine_set_record(u, t, ZS_SET_GRAD_SLOT, host_full, n);
  return ZS_OK;
}
