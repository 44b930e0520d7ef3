/* The "mpi-staged" backend: device buffers through MPI (CUDA builds only, the *_cuda.c rule in
 * CMakeLists.txt). A wrapper that only calls down: it owns an mpi group on host memory (opened
 * with zs_mpi_open, split with it) and a pinned staging buffer, and each collective is a device
 * -> pinned host copy on the caller's stream, a wait for it (polled, with the timeout), the mpi
 * backend's vtable entry in place on the copy, then host -> device and a wait again. The call
 * returns when the result is in device memory. The dispatcher (coll.c) has checked the arguments
 * and the ranks' headers on this group already; the inner group exchanges no header of its own. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "comm/coll_backends.h"

typedef struct {
  zs_coll *mpi;       /* the host group every collective goes down to (owned) */
  void *stage;        /* pinned host staging buffer */
  size_t stage_bytes; /* its size; 0 with stage NULL */
} zs_staged;

/* The inner group, with the outer group's current timeout (zs_coll_set_timeout sets the outer
   one only). */
static zs_coll *down(zs_coll *c) {
  zs_staged *s = c->impl;
  s->mpi->timeout_s = c->timeout_s;
  return s->mpi;
}

/* Grows the pinned staging buffer to at least bytes (contents are not kept). cudaFreeHost may
   wait for the device: every copy of the old buffer has completed (copy() returned ZS_OK; a
   timed-out one abandoned the buffer), and this backend queues no cross-rank wait on any stream
   (its collectives run on the host, bounded by the timeout), so only local kernels can hold it. */
static zs_status reserve(zs_staged *m, size_t bytes) {
  if (m->stage_bytes >= bytes) return ZS_OK;
  if (m->stage) cudaFreeHost(m->stage);
  m->stage = NULL;
  m->stage_bytes = 0;
  void *p = NULL;
  cudaError_t e = cudaMallocHost(&p, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "pinning %zu bytes of host memory for MPI staging failed: "
                  "%s: use smaller buckets or the nccl backend",
                  bytes, cudaGetErrorString(e));
  }
  m->stage = p;
  m->stage_bytes = bytes;
  return ZS_OK;
}

/* Async copy on stream, then polls cudaStreamQuery against c's timeout. The host side is always
   the pinned staging buffer (cudaMallocHost), so cudaMemcpyAsync returns at once and the poll is
   reached even when the stream is stuck: a pageable buffer here would make the call itself wait
   for the stream (CUDA's API synchronization behavior; device/cuda_copy.h). On a timeout the copy
   is still queued behind the stuck work and may run later (the stream is not cancelled), so the
   pinned staging buffer is abandoned (leaked on purpose): destroy must not free memory a late
   DMA still reads or writes. */
static zs_status copy(zs_coll *c, void *dst, const void *src, size_t bytes, int to_host,
                      void *stream, const char *op) {
  zs_staged *m = c->impl;
  cudaStream_t s = (cudaStream_t)stream;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes,
                                  to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, s);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* not left for the next kernel launch check to report */
    return zs_err(ZS_ERR_DEVICE,
                  "%s: staging copy %s host failed: %s: check that the buffers are "
                  "device memory of the current device",
                  op, to_host ? "to" : "from", cudaGetErrorString(e));
  }
  double deadline = c->timeout_s > 0 ? zs_clock_now_s() + c->timeout_s : 0;
  zs_backoff bo;
  zs_backoff_init(&bo);
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
    if (deadline > 0 && zs_clock_now_s() > deadline) {
      m->stage = NULL; /* abandoned with the queued copy, see above */
      m->stage_bytes = 0;
      return zs_err(ZS_ERR_TIMEOUT,
                    "%s: the stream did not reach the staging copy within %.1f s: "
                    "work queued before it is stuck; raise comm_timeout_s if it "
                    "is only slow",
                    op, c->timeout_s);
    }
    zs_backoff_wait(&bo);
  }
  if (e != cudaSuccess)
    return zs_err(ZS_ERR_DEVICE, "%s: the stream failed before the staging copy: %s", op,
                  cudaGetErrorString(e));
  return ZS_OK;
}

/* Stage send into this rank's block, gather in place on the host, copy all blocks back. */
static zs_status v_all_gather(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                              void *stream) {
  zs_staged *m = c->impl;
  size_t blk = count * zs_cdt_size(dt), all = blk * (size_t)c->size;
  ZS_CHECK(reserve(m, all));
  char *h = m->stage;
  ZS_CHECK(copy(c, h + (size_t)c->rank * blk, send, blk, 1, stream, "all_gather"));
  zs_coll *d = down(c);
  ZS_CHECK(d->ops->all_gather(d, h + (size_t)c->rank * blk, h, count, dt, NULL));
  return copy(c, recv, h, all, 0, stream, "all_gather");
}

/* Stage all of send, reduce-scatter in place on the host, copy this rank's block back. */
static zs_status v_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                                  void *stream) {
  zs_staged *m = c->impl;
  size_t blk = count * zs_cdt_size(dt), all = blk * (size_t)c->size;
  ZS_CHECK(reserve(m, all));
  char *h = m->stage;
  ZS_CHECK(copy(c, h, send, all, 1, stream, "reduce_scatter"));
  zs_coll *d = down(c);
  ZS_CHECK(d->ops->reduce_scatter(d, h, h + (size_t)c->rank * blk, count, dt, NULL));
  return copy(c, recv, h + (size_t)c->rank * blk, blk, 0, stream, "reduce_scatter");
}

/* Stage send, all-reduce in place on the host, copy back to recv. */
static zs_status v_all_reduce(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                              void *stream) {
  zs_staged *m = c->impl;
  size_t all = count * zs_cdt_size(dt);
  ZS_CHECK(reserve(m, all));
  ZS_CHECK(copy(c, m->stage, send, all, 1, stream, "all_reduce"));
  zs_coll *d = down(c);
  ZS_CHECK(d->ops->all_reduce(d, m->stage, m->stage, count, dt, NULL));
  return copy(c, recv, m->stage, all, 0, stream, "all_reduce");
}

/* Stage send into the first half, exchange into the second half, copy it back. */
static zs_status v_all_to_all(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                              void *stream) {
  zs_staged *m = c->impl;
  size_t all = count * zs_cdt_size(dt) * (size_t)c->size;
  ZS_CHECK(reserve(m, 2 * all));
  char *h = m->stage;
  ZS_CHECK(copy(c, h, send, all, 1, stream, "all_to_all"));
  zs_coll *d = down(c);
  ZS_CHECK(d->ops->all_to_all(d, h, h + all, count, dt, NULL));
  return copy(c, recv, h + all, all, 0, stream, "all_to_all");
}

/* Root stages its buffer; everybody else copies the result back. */
static zs_status v_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root,
                             void *stream) {
  zs_staged *m = c->impl;
  size_t all = count * zs_cdt_size(dt);
  ZS_CHECK(reserve(m, all));
  if (c->rank == root) ZS_CHECK(copy(c, m->stage, buf, all, 1, stream, "broadcast"));
  zs_coll *d = down(c);
  ZS_CHECK(d->ops->broadcast(d, m->stage, count, dt, root, NULL));
  if (c->rank == root) return ZS_OK;
  return copy(c, buf, m->stage, all, 0, stream, "broadcast");
}

/* The mpi group's barrier. */
static zs_status v_barrier(zs_coll *c) {
  zs_coll *d = down(c);
  return d->ops->barrier(d);
}

/* Every collective here is complete when it returns (the copies back were waited for). */
static zs_status v_sync(zs_coll *c, void *stream) {
  return ZS_OK;
}

/* The header exchange of this group (sig.c) is the mpi group's. */
static zs_status v_exchange_post(zs_coll *c, uint64_t *all, size_t n, const char *what) {
  zs_coll *d = down(c);
  return d->ops->exchange_post(d, all, n, what);
}
static zs_status v_exchange_wait(zs_coll *c, uint64_t *all, const char *what) {
  zs_coll *d = down(c);
  return d->ops->exchange_wait(d, all, what);
}

static zs_status wrap(zs_comm *comm, zs_coll *mpi, double timeout_s, zs_coll **out);

/* Splits the mpi group and wraps the part; a failed split that broke the mpi group breaks this
   one too (the peers' state is unknown). */
static zs_status v_split(zs_coll *c, int color, int key, zs_coll **out) {
  zs_coll *d = down(c), *part = NULL;
  zs_status rc = d->ops->split(d, color, key, &part);
  if (rc != ZS_OK) {
    if (d->broken) zs_coll_mark_broken(c);
    return rc;
  }
  return wrap(c->comm, part, c->timeout_s, out);
}

/* Destroys the mpi group (which drains or leaks its abandoned requests), then frees the staging
   buffer unless the mpi group is stuck (a request MPI may still complete writes into it). */
static void v_destroy(zs_coll *c) {
  zs_staged *m = c->impl;
  if (!m) return;
  int stuck = 0;
  if (m->mpi) {
    m->mpi->ops->destroy(m->mpi);
    stuck = m->mpi->impl != NULL; /* the mpi backend keeps its impl when it leaks requests */
    zs_coll_free(m->mpi);
  }
  if (stuck) return; /* the staging buffer leaks with the requests */
  if (m->stage) cudaFreeHost(m->stage);
  free(m);
  c->impl = NULL;
}

/* The mpi group's cancel, if it has one (every wait here is on the host, within the timeout). */
static void v_cancel(zs_coll *c) {
  zs_staged *m = c->impl;
  if (m && m->mpi && m->mpi->ops->cancel) m->mpi->ops->cancel(m->mpi);
}

static const zs_coll_ops staged_ops = {
    "mpi-staged", v_all_gather,    v_reduce_scatter, v_all_reduce, v_all_to_all,
    v_broadcast,  v_barrier,       v_sync,           v_split,      v_destroy,
    v_cancel,     v_exchange_post, v_exchange_wait,  NULL};

/* A staged group over mpi (owned from here on: destroyed on failure). The inner group's own
   header check is off: the dispatcher checks this group's headers, through the same exchange. */
static zs_status wrap(zs_comm *comm, zs_coll *mpi, double timeout_s, zs_coll **out) {
  zs_coll *c = NULL;
  zs_staged *m = calloc(1, sizeof *m);
  zs_status rc = ZS_OK;
  if (!m) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory opening an mpi-staged group");
    goto fail;
  }
  mpi->sig_on = 0;
  mpi->sig_hash_on = 0;
  m->mpi = mpi;
  ZS_CHECK_GOTO(zs_coll_alloc(&staged_ops, "mpi-staged", comm, ZS_DEVICE_CUDA, mpi->rank, mpi->size,
                              timeout_s, &c),
                rc, fail);
  c->impl = m;
  *out = c;
  return ZS_OK;
fail:
  free(m);
  mpi->ops->destroy(mpi);
  zs_coll_free(mpi);
  return rc;
}

zs_status zs_mpi_staged_open(zs_comm *comm, double timeout_s, zs_coll **out) {
  zs_coll *mpi = NULL;
  ZS_CHECK(zs_mpi_open(comm, ZS_DEVICE_CPU, timeout_s, &mpi));
  return wrap(comm, mpi, timeout_s, out);
}
