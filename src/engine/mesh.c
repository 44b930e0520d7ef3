/* The engine's mesh beyond data parallelism (docs/PARALLEL.md): tensor-parallel layouts, the
 * model's own collectives over the tp group, and what the engine does for tp slices: the sum of
 * partial gradients before its own reduction and which tensors count in each rank's part of the
 * gradient norm. The groups themselves are opened by engine.c's open_groups. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/error.h"
#include "comm/comm.h"
#include "device/device.h"
#include "engine/engine_internal.h"
#include "engine/fail.h"
#include "mem/mem.h"
#include "shard/tp_slice.h"

zs_status zs_unit_set_tp(zs_unit *u, int t, zs_tp_layout layout) {
  if (!u) return zs_err(ZS_ERR_INVALID_ARG, "zs_unit_set_tp: unit is NULL");
  if (u->e->state != ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "zs_unit_set_tp('%s') after zs_engine_commit: set layouts first",
                  u->name);
  if (t < -1 || t >= u->ntensors)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_unit_set_tp: unit '%s' has no tensor %d (0..%d, or -1)",
                  u->name, t, u->ntensors - 1);
  const int need = zs_tp_layout_dims((int)layout);
  if (need < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_unit_set_tp: layout %d is not a zs_tp_layout (ZS_TP_REPLICATED, "
                  "ZS_TP_SPLIT_DIM0, ZS_TP_SPLIT_DIM1, ZS_TP_PARTIAL_GRAD)",
                  (int)layout);
  for (int k = 0; k < u->ntensors; k++) /* every tensor checked before any is changed */
    if ((t < 0 || k == t) && u->t[k].ndim < need)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_unit_set_tp: tensor '%s' of unit '%s' has %d dimension(s); %s splits "
                    "dimension %d",
                    u->tnames[k], u->name, u->t[k].ndim,
                    need == 1 ? "ZS_TP_SPLIT_DIM0" : "ZS_TP_SPLIT_DIM1", need - 1);
  for (int k = 0; k < u->ntensors; k++)
    if (t < 0 || k == t) u->tp[k] = (int)layout;
  zs_engine_unit_state(u); /* a slice keeps its share of a whole-tensor optimizer's prefix */
  return ZS_OK;
}

uint64_t zs_engine_tp_hash(const zs_engine *e) {
  uint64_t h = XXH64(&e->tp_size, sizeof e->tp_size, 0x74706c61796f7574ull);
  for (int i = 0; i < e->nunits; i++) /* the shapes: the agreement's units word */
    h = XXH64(e->units[i]->tp, (size_t)e->units[i]->ntensors * sizeof(int), h);
  return h;
}

int zs_engine_tp_split(const zs_unit *u, int t) {
  return zs_tp_is_split(u->tp[t], u->e->tp_size);
}

zs_tensor_desc zs_engine_tp_whole(const zs_unit *u, int t) {
  zs_tensor_desc d = u->t[t];
  if (zs_engine_tp_split(u, t)) d.shape[u->tp[t] == ZS_TP_SPLIT_DIM0 ? 0 : 1] *= u->e->tp_size;
  return d;
}

int zs_engine_tp_in_norm(const zs_engine *e, const zs_unit *u, int t) {
  return e->tp_rank == 0 || zs_engine_tp_split(u, t);
}

zs_status zs_engine_mesh(const zs_engine *e, zs_mesh_dim dim, int *rank, int *size) {
  if (!e || !rank || !size) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_mesh: a NULL argument");
  if (dim == ZS_MESH_TP) {
    *rank = e->tp_rank;
    *size = e->tp_size;
  } else if (dim == ZS_MESH_DP) {
    *rank = e->world_rank;
    *size = e->world_size;
  } else {
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_mesh: dim %d is not ZS_MESH_TP or ZS_MESH_DP",
                  (int)dim);
  }
  return ZS_OK;
}

/* Scratch for an ordered reduction: two buffers of bytes each, on stream. */
typedef struct {
  void *a, *b;
  size_t bytes;
} mesh_scratch;

static zs_status scratch_get(zs_engine *e, mesh_scratch *s, size_t bytes, void *stream) {
  s->bytes = bytes;
  ZS_CHECK(zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, bytes, &s->a, stream));
  return zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, bytes, &s->b, stream);
}

/* A collective that failed may still write the scratch: zs_mem_free_after defers it then. */
static void scratch_put(zs_engine *e, mesh_scratch *s, zs_status rc, void *stream) {
  zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, s->b, s->bytes, stream);
  zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, s->a, s->bytes, stream);
}

/* buf (n elements of dt) summed over the tp group in place, on stream, complete on return. In
   deterministic mode in rank order: an all-to-all of T chunks, each rank's chunk summed in rank
   order, an all-gather. */
static zs_status tp_all_reduce(zs_engine *e, void *buf, size_t n, zs_dtype dt, void *stream) {
  zs_dev *d = &e->dev;
  const zs_cdt cdt = zs_cdt_of(dt);
  if (!e->cfg.deterministic) {
    ZS_CHECK(zs_coll_all_reduce(e->tp, buf, buf, n, cdt, stream));
    return zs_coll_sync(e->tp, stream);
  }
  const size_t T = (size_t)e->tp_size, es = zs_dtype_size(dt), c = (n + T - 1) / T;
  mesh_scratch s = {0};
  zs_status rc = scratch_get(e, &s, T * c * es, stream);
  void *mine = rc == ZS_OK ? (char *)s.a + (size_t)e->tp_rank * c * es : NULL;
  if (rc == ZS_OK) rc = zs_dev_zero(d, s.a, T * c * es, stream);
  if (rc == ZS_OK) rc = zs_dev_copy(d, s.a, buf, n * es, stream);
  if (rc == ZS_OK) rc = zs_coll_all_to_all(e->tp, s.a, s.b, c, cdt, stream);
  if (rc == ZS_OK) rc = zs_dev_sum_chunks(d, mine, dt, s.b, dt, (int)T, c, c, 0, stream);
  if (rc == ZS_OK) rc = zs_coll_all_gather(e->tp, mine, s.a, c, cdt, stream);
  if (rc == ZS_OK) rc = zs_dev_copy(d, buf, s.a, n * es, stream);
  if (rc == ZS_OK) rc = zs_coll_sync(e->tp, stream);
  scratch_put(e, &s, rc, stream);
  return rc;
}

zs_status zs_engine_tp_partial_sum(void *owner, zs_unit *u, void *grad, zs_dtype dt, void *stream) {
  zs_engine *e = owner;
  for (int t = 0; t < u->ntensors; t++) {
    if (u->tp[t] != ZS_TP_PARTIAL_GRAD || !u->lay.numel[t]) continue;
    const zs_status rc =
        tp_all_reduce(e, zs_ptr_add(grad, u->lay.off[t], dt), u->lay.numel[t], dt, stream);
    if (rc != ZS_OK)
      return zs_err_wrap(rc, "summing the partial gradient of '%s' of unit '%s' over the tp group",
                         u->tnames[t], u->name);
  }
  return ZS_OK;
}

/* Whether [p, p + a) and [q, q + b) share a byte. */
static int overlaps(const void *p, size_t a, const void *q, size_t b) {
  const uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
  return a && b && x < y + b && y < x + a;
}

/* The checks every mesh collective makes before anything is sent. */
static zs_status mesh_check(const zs_engine *e, const char *fn, zs_mesh_dim dim, zs_dtype dt,
                            size_t count, const void *p, const void *q) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "%s: engine is NULL", fn);
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "%s: the engine failed earlier; destroy it", fn);
  if (e->state == ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "%s before zs_engine_commit: the groups are ready after it", fn);
  if (dim != ZS_MESH_TP)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "%s: dim %d: the model's collectives run over ZS_MESH_TP (the data-parallel "
                  "ranks are the engine's)",
                  fn, (int)dim);
  if (dt != ZS_F32 && dt != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: dtype %d is not ZS_F32 or ZS_BF16", fn, (int)dt);
  if (count && (!p || !q)) return zs_err(ZS_ERR_INVALID_ARG, "%s: a NULL buffer", fn);
  return ZS_OK;
}

/* A one-rank group's collective: a copy, complete on return like the others. */
static zs_status one_rank_copy(zs_engine *e, void *dst, const void *src, size_t bytes, int same) {
  zs_dev *d = &e->dev;
  if (same) return ZS_OK;
  ZS_CHECK(zs_dev_copy(d, dst, src, bytes, d->compute_stream));
  return zs_dev_sync(d, d->compute_stream);
}

/* A collective's failure: the group is broken, so the engine is failed. */
static zs_status mesh_done(zs_engine *e, zs_status rc, const char *fn) {
  if (rc == ZS_OK) return ZS_OK;
  return zs_engine_fail_hard(e, zs_err_wrap(rc, "%s over the tp group", fn));
}

zs_status zs_engine_all_reduce(zs_engine *e, zs_mesh_dim dim, void *buf, size_t count,
                               zs_dtype dt) {
  ZS_CHECK(mesh_check(e, "zs_engine_all_reduce", dim, dt, count, buf, buf));
  if (!e->tp || !count) return ZS_OK;
  zs_engine_call(e, ZS_CALL_ALL_REDUCE, NULL);
  return mesh_done(e, tp_all_reduce(e, buf, count, dt, e->dev.compute_stream),
                   "zs_engine_all_reduce");
}

zs_status zs_engine_all_gather(zs_engine *e, zs_mesh_dim dim, const void *send, void *recv,
                               size_t count, zs_dtype dt) {
  ZS_CHECK(mesh_check(e, "zs_engine_all_gather", dim, dt, count, send, recv));
  const size_t es = zs_dtype_size(dt), T = (size_t)e->tp_size;
  const int in_place = send == (const char *)recv + (size_t)e->tp_rank * count * es;
  if (!in_place && overlaps(send, count * es, recv, T * count * es))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_all_gather: send and recv overlap (in place: send = recv + tp rank "
                  "* count)");
  if (!count) return ZS_OK;
  void *cs = e->dev.compute_stream;
  if (!e->tp) /* one rank: a copy */
    return mesh_done(e, one_rank_copy(e, recv, send, count * es, in_place), "zs_engine_all_gather");
  zs_engine_call(e, ZS_CALL_ALL_GATHER, NULL);
  const zs_cdt cdt = zs_cdt_of(dt);
  zs_status rc = zs_coll_all_gather(e->tp, send, recv, count, cdt, cs);
  if (rc == ZS_OK) rc = zs_coll_sync(e->tp, cs);
  return mesh_done(e, rc, "zs_engine_all_gather");
}

zs_status zs_engine_reduce_scatter(zs_engine *e, zs_mesh_dim dim, const void *send, void *recv,
                                   size_t count, zs_dtype dt) {
  ZS_CHECK(mesh_check(e, "zs_engine_reduce_scatter", dim, dt, count, send, recv));
  const size_t es = zs_dtype_size(dt), T = (size_t)e->tp_size;
  if (overlaps(send, T * count * es, recv, count * es))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_reduce_scatter: send and recv overlap");
  if (!count) return ZS_OK;
  zs_dev *d = &e->dev;
  void *cs = d->compute_stream;
  if (!e->tp) /* one rank: a copy */
    return mesh_done(e, one_rank_copy(e, recv, send, count * es, 0), "zs_engine_reduce_scatter");
  zs_engine_call(e, ZS_CALL_REDUCE_SCATTER, NULL);
  const zs_cdt cdt = zs_cdt_of(dt);
  zs_status rc;
  if (!e->cfg.deterministic) {
    rc = zs_coll_reduce_scatter(e->tp, send, recv, count, cdt, cs);
  } else { /* every rank's block r to rank r, summed there in rank order */
    void *b = NULL;
    const size_t bytes = T * count * es;
    rc = zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, bytes, &b, cs);
    if (rc == ZS_OK) rc = zs_coll_all_to_all(e->tp, send, b, count, cdt, cs);
    if (rc == ZS_OK) rc = zs_dev_sum_chunks(d, recv, dt, b, dt, (int)T, count, count, 0, cs);
    zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, b, bytes, cs);
  }
  if (rc == ZS_OK) rc = zs_coll_sync(e->tp, cs);
  return mesh_done(e, rc, "zs_engine_reduce_scatter");
}

/* Tensor t's slice q of T in the whole tensor w to or from the slice sl (n elements). */
static void slice_copy(const zs_unit *u, int t, int q, int T, float *w, float *sl, size_t n,
                       int to_slice) {
  zs_tp_slice_copy(u->tp[t], u->t[t].shape[0], n, q, T, w, sl, to_slice);
}

/* The slice calls the whole ones wrap: a param, a state by name or a gradient of tensor t. */
typedef enum { WHOLE_PARAM, WHOLE_STATE, WHOLE_GRAD } whole_kind;

/* Their refusals are prefixed with fn, the whole call's name. */
static zs_status slice_set(zs_unit *u, int t, whole_kind k, const char *name, const float *h,
                           const char *fn) {
  const zs_status rc = k == WHOLE_PARAM   ? zs_unit_set_param(u, t, h)
                       : k == WHOLE_STATE ? zs_unit_set_state(u, t, name, h)
                                          : zs_unit_set_grad(u, t, h);
  return rc == ZS_OK ? rc : zs_err_wrap(rc, "%s", fn);
}

static zs_status slice_get(zs_unit *u, int t, whole_kind k, const char *name, float *h,
                           const char *fn) {
  const zs_status rc = k == WHOLE_PARAM   ? zs_unit_get_param(u, t, h)
                       : k == WHOLE_STATE ? zs_unit_get_state(u, t, name, h)
                                          : zs_unit_get_grad(u, t, h);
  return rc == ZS_OK ? rc : zs_err_wrap(rc, "%s", fn);
}

/* This rank's slice of the whole tensor, set by the slice call (whose checks a bad argument or
   an unsplit tensor goes straight to). */
static zs_status set_whole(zs_unit *u, int t, whole_kind k, const char *name,
                           const float *host_whole, const char *fn) {
  if (!u || t < 0 || t >= u->ntensors || !host_whole || !zs_engine_tp_split(u, t))
    return slice_set(u, t, k, name, host_whole, fn);
  const size_t n = u->lay.numel[t];
  float *sl = malloc((n ? n : 1) * sizeof *sl);
  if (!sl) return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  slice_copy(u, t, u->e->tp_rank, u->e->tp_size, (float *)host_whole, sl, n, 1);
  const zs_status rc = slice_set(u, t, k, name, sl, fn);
  free(sl);
  return rc;
}

zs_status zs_unit_set_param_whole(zs_unit *u, int t, const float *host_whole) {
  return set_whole(u, t, WHOLE_PARAM, NULL, host_whole, "zs_unit_set_param_whole");
}

zs_status zs_unit_set_state_whole(zs_unit *u, int t, const char *name, const float *host_whole) {
  return set_whole(u, t, WHOLE_STATE, name, host_whole, "zs_unit_set_state_whole");
}

zs_status zs_unit_set_grad_whole(zs_unit *u, int t, const float *host_whole) {
  return set_whole(u, t, WHOLE_GRAD, NULL, host_whole, "zs_unit_set_grad_whole");
}

zs_status zs_engine_tp_join(zs_engine *e, const zs_unit *u, int t, const float *host_slice,
                            float *host_whole) {
  const size_t n = u->lay.numel[t], T = (size_t)e->tp_size;
  if (!n) return ZS_OK;
  float *all = host_whole ? malloc(n * T * sizeof *all) : NULL;
  const int kept = host_whole == NULL || all != NULL; /* else out of host memory */
  /* The slices meet in device memory (NCCL moves nothing else), through the engine's scratch. */
  zs_dev *d = &e->dev;
  void *cs = d->compute_stream, *dev = NULL;
  const size_t bytes = (T + 1) * n * sizeof(float);
  zs_status rc = zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, bytes, &dev, cs);
  float *dsl = dev, *dall = rc == ZS_OK ? dsl + n : NULL;
  if (rc == ZS_OK)
    rc = host_slice ? zs_dev_from_host(d, dsl, host_slice, n * sizeof(float))
                    : zs_dev_zero(d, dsl, n * sizeof(float), cs);
  if (rc == ZS_OK) rc = zs_coll_all_gather(e->tp, dsl, dall, n, ZS_CDT_F32, cs);
  if (rc == ZS_OK) rc = zs_coll_sync(e->tp, cs);
  if (rc == ZS_OK && all) rc = zs_dev_to_host(d, all, dall, T * n * sizeof(float));
  zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, dev, bytes, cs);
  if (rc == ZS_OK && all)
    for (int q = 0; q < (int)T; q++)
      slice_copy(u, t, q, (int)T, host_whole, all + (size_t)q * n, n, 0);
  free(all);
  /* Out of memory on the way (the scratch, a staging buffer) may have left this rank out of the
     all-gather its peers are in: a device failure then, never the "joined, nothing kept" below. */
  if (rc == ZS_ERR_OUT_OF_MEMORY)
    return zs_err_wrap(ZS_ERR_DEVICE, "joining '%s.%s' over the tp group", u->name, u->tnames[t]);
  if (rc == ZS_OK && !kept)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "joining '%s.%s': out of host memory", u->name,
                  u->tnames[t]);
  return rc;
}

/* This rank's slice by the slice call, joined over the tp group. */
static zs_status get_whole(zs_unit *u, int t, whole_kind k, const char *name, float *host_whole,
                           const char *fn) {
  if (!u || t < 0 || t >= u->ntensors || !host_whole || !zs_engine_tp_split(u, t))
    return slice_get(u, t, k, name, host_whole, fn);
  zs_engine *e = u->e;
  const size_t n = u->lay.numel[t];
  ZS_CHECK(mesh_check(e, fn, ZS_MESH_TP, ZS_F32, n, host_whole, host_whole));
  float *sl = malloc((n ? n : 1) * sizeof *sl);
  if (!sl) return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  /* A refusal here is this rank's alone (its tp peers then wait in the all-gather below until
     comm_timeout_s); a failed gather fails the engine, and its peers at the next agreement. */
  zs_status rc = slice_get(u, t, k, name, sl, fn);
  if (rc == ZS_OK && n) zs_engine_call(e, ZS_CALL_ALL_GATHER, u);
  if (rc == ZS_OK && n) {
    rc = zs_engine_tp_join(e, u, t, sl, host_whole);
    if (rc != ZS_ERR_OUT_OF_MEMORY) rc = mesh_done(e, rc, fn);
  }
  free(sl);
  return rc;
}

zs_status zs_unit_get_param_whole(zs_unit *u, int t, float *host_whole) {
  return get_whole(u, t, WHOLE_PARAM, NULL, host_whole, "zs_unit_get_param_whole");
}

zs_status zs_unit_get_state_whole(zs_unit *u, int t, const char *name, float *host_whole) {
  return get_whole(u, t, WHOLE_STATE, name, host_whole, "zs_unit_get_state_whole");
}

zs_status zs_unit_get_grad_whole(zs_unit *u, int t, float *host_whole) {
  return get_whole(u, t, WHOLE_GRAD, NULL, host_whole, "zs_unit_get_grad_whole");
}
