/* The mpi backend on device buffers ("mpi-staged"): device -> pinned host copy on the caller's
 * stream, wait for it (polled, with the timeout), the host MPI collective in place on the copy,
 * then host -> device and wait again. The call returns when the result is in device memory.
 * Compiled only when CUDA is enabled (the *_cuda.c rule in CMakeLists.txt). */
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "comm/mpi_impl.h"

/* Grows the pinned staging buffer to at least bytes (contents are not kept). cudaFreeHost may
   wait for the device: every copy of the old buffer has completed (copy() returned ZS_OK; a
   timed-out one abandoned the buffer), and this backend queues no cross-rank wait on any stream
   (its collectives run on the host, bounded by the timeout), so only local kernels can hold it. */
static zs_status reserve(zs_mpi_coll *m, size_t bytes) {
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

/* Releases the staging buffer. */
void zs_mpi_stage_free(zs_mpi_coll *m) {
  if (m->stage) cudaFreeHost(m->stage);
  m->stage = NULL;
  m->stage_bytes = 0;
}

/* Async copy on stream, then polls cudaStreamQuery against c's timeout. The host side is always
   the pinned staging buffer (cudaMallocHost), so cudaMemcpyAsync returns at once and the poll is
   reached even when the stream is stuck: a pageable buffer here would make the call itself wait
   for the stream (CUDA's API synchronization behavior; device/cuda_copy.h). On a timeout the copy
   is still queued behind the stuck work and may run later (the stream is not cancelled), so the
   pinned staging buffer is abandoned (leaked on purpose): zs_mpi_stage_free in destroy must not
   free memory a late DMA still reads or writes. */
static zs_status copy(zs_coll *c, void *dst, const void *src, size_t bytes, int to_host,
                      void *stream, const char *op) {
  zs_mpi_coll *m = c->impl;
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
  double deadline = c->timeout_s > 0 ? zs_now_s() + c->timeout_s : 0;
  zs_backoff bo;
  zs_backoff_init(&bo);
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
    if (deadline > 0 && zs_now_s() > deadline) {
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
zs_status zs_mpi_staged_all_gather(zs_coll *c, const void *send, void *recv, size_t count,
                                   zs_cdt dt, void *stream) {
  zs_mpi_coll *m = c->impl;
  size_t blk = count * zs_cdt_size(dt), all = blk * (size_t)c->size;
  ZS_CHECK(reserve(m, all));
  char *h = m->stage;
  ZS_CHECK(copy(c, h + (size_t)c->rank * blk, send, blk, 1, stream, "all_gather"));
  ZS_CHECK(zs_mpi_host_all_gather(c, h + (size_t)c->rank * blk, h, count, dt));
  return copy(c, recv, h, all, 0, stream, "all_gather");
}

/* Stage all of send, reduce-scatter in place on the host, copy this rank's block back. */
zs_status zs_mpi_staged_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count,
                                       zs_cdt dt, void *stream) {
  zs_mpi_coll *m = c->impl;
  size_t blk = count * zs_cdt_size(dt), all = blk * (size_t)c->size;
  ZS_CHECK(reserve(m, all));
  char *h = m->stage;
  ZS_CHECK(copy(c, h, send, all, 1, stream, "reduce_scatter"));
  ZS_CHECK(zs_mpi_host_reduce_scatter(c, h, h + (size_t)c->rank * blk, count, dt));
  return copy(c, recv, h + (size_t)c->rank * blk, blk, 0, stream, "reduce_scatter");
}

/* Stage send, all-reduce in place on the host, copy back to recv. */
zs_status zs_mpi_staged_all_reduce(zs_coll *c, const void *send, void *recv, size_t count,
                                   zs_cdt dt, void *stream) {
  zs_mpi_coll *m = c->impl;
  size_t all = count * zs_cdt_size(dt);
  ZS_CHECK(reserve(m, all));
  ZS_CHECK(copy(c, m->stage, send, all, 1, stream, "all_reduce"));
  ZS_CHECK(zs_mpi_host_all_reduce(c, m->stage, m->stage, count, dt));
  return copy(c, recv, m->stage, all, 0, stream, "all_reduce");
}

/* Stage send into the first half, exchange into the second half, copy it back. */
zs_status zs_mpi_staged_all_to_all(zs_coll *c, const void *send, void *recv, size_t count,
                                   zs_cdt dt, void *stream) {
  zs_mpi_coll *m = c->impl;
  size_t all = count * zs_cdt_size(dt) * (size_t)c->size;
  ZS_CHECK(reserve(m, 2 * all));
  char *h = m->stage;
  ZS_CHECK(copy(c, h, send, all, 1, stream, "all_to_all"));
  ZS_CHECK(zs_mpi_host_all_to_all(c, h, h + all, count, dt));
  return copy(c, recv, h + all, all, 0, stream, "all_to_all");
}

/* Root stages its buffer; everybody else copies the result back. */
zs_status zs_mpi_staged_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root,
                                  void *stream) {
  zs_mpi_coll *m = c->impl;
  size_t all = count * zs_cdt_size(dt);
  ZS_CHECK(reserve(m, all));
  if (c->rank == root) ZS_CHECK(copy(c, m->stage, buf, all, 1, stream, "broadcast"));
  ZS_CHECK(zs_mpi_host_broadcast(c, m->stage, count, dt, root));
  if (c->rank == root) return ZS_OK;
  return copy(c, buf, m->stage, all, 0, stream, "broadcast");
}
