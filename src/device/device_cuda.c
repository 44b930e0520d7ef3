/* CUDA device: stream-ordered allocation (cudaMallocAsync), two streams ordered by events. */
#include "device/device_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#include "device/cuda_copy.h"
#include "device/cuda_poll.h"
#include "base/error.h"

/* Turns a CUDA error into ZS_ERR_DEVICE naming the call. */
static zs_status cuda_fail(cudaError_t e, const char *what) {
  /* Clear a non-sticky error: kernel launches are checked with cudaGetLastError, which would
     otherwise report this failure again against an unrelated kernel. */
  (void)cudaGetLastError();
  return zs_err(ZS_ERR_DEVICE, "%s failed: %s (%s); check the GPU is healthy and not out of memory",
                what, cudaGetErrorString(e), cudaGetErrorName(e));
}
#define CUDA_TRY(call)                                                                             \
  do {                                                                                             \
    cudaError_t zs_ce_ = (call);                                                                   \
    if (zs_ce_ != cudaSuccess) return cuda_fail(zs_ce_, #call);                                    \
  } while (0)

int zs_cuda_dev_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

uint64_t zs_cuda_dev_id_hash(zs_dev *d) {
  char bus[64] = "";
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, d->index) != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(bus, sizeof bus, "cuda:%d", d->index);
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = bus; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return h | 1;
}

zs_status zs_cuda_dev_mem_info(zs_dev *d, size_t *free_b, size_t *total_b) {
  CUDA_TRY(cudaSetDevice(d->index));
  CUDA_TRY(cudaMemGetInfo(free_b, total_b));
  return ZS_OK;
}

zs_status zs_cuda_dev_pci_bus_id(zs_dev *d, char *buf, size_t len) {
  CUDA_TRY(cudaDeviceGetPCIBusId(buf, (int)len, d->index));
  return ZS_OK;
}

zs_status zs_cuda_dev_open(zs_dev *d, int index) {
  int n = zs_cuda_dev_count();
  if (n <= 0)
    return zs_err(ZS_ERR_DEVICE, "no CUDA device is visible: use ZS_DEVICE_CPU, or check the "
                                 "driver and CUDA_VISIBLE_DEVICES");
  if (index < 0 || index >= n)
    return zs_err(ZS_ERR_INVALID_ARG, "device_index %d is out of range: %d CUDA device(s) visible",
                  index, n);
  CUDA_TRY(cudaSetDevice(index));
  cudaStream_t a = NULL, b = NULL;
  CUDA_TRY(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  cudaError_t e = cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    cudaStreamDestroy(a);
    return cuda_fail(e, "cudaStreamCreateWithFlags");
  }
  /* The engine's own stream-ordered pool. Its release threshold is the maximum: memory freed at
     the end of a step stays reserved for the next one instead of being unmapped at every
     synchronisation (the default pool's threshold is 0). The user's default pool is untouched. */
  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = index;
  cudaMemPool_t pool = NULL;
  e = cudaMemPoolCreate(&pool, &props);
  if (e == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    /* No hidden cross-stream waits: memory freed on the comm stream (after a reduction) is not
       handed to an allocation on the compute stream by making compute wait for the reduction;
       such reuse happens only once the free has completed (opportunistic reuse stays on). */
    int no = 0;
    if (e == cudaSuccess)
      e = cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no);
    if (e != cudaSuccess) cudaMemPoolDestroy(pool);
  }
  if (e != cudaSuccess) {
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    return cuda_fail(e, "cudaMemPoolCreate/cudaMemPoolSetAttribute(ReleaseThreshold)");
  }
  d->index = index;
  d->compute_stream = a;
  d->comm_stream = b;
  d->pool = pool;
  return ZS_OK;
}

void zs_cuda_dev_close(zs_dev *d) {
  /* The drains are bounded (wait_timeout_s) like every host wait here: a stream still held by a
     collective of a dead peer is destroyed anyway (CUDA releases it once its work is done). */
  int drained = 1;
  if (d->compute_stream)
    drained =
        zs_cuda_wait_stream(d->compute_stream, d->wait_timeout_s, "closing the device") == ZS_OK;
  if (d->comm_stream)
    drained =
        zs_cuda_wait_stream(d->comm_stream, d->wait_timeout_s, "closing the device") == ZS_OK &&
        drained;
  /* cublasDestroy synchronises the whole device without a bound: only once the streams drained
     (else the handle is left: a stream still held by a dead peer's collective could hang it). */
  if (d->blas && drained) cublasDestroy((cublasHandle_t)d->blas);
  d->blas = NULL;
  zs_cuda_timer_free(d);
  if (d->compute_stream) cudaStreamDestroy(d->compute_stream);
  if (d->comm_stream) cudaStreamDestroy(d->comm_stream);
  /* Returns the reserved memory (normally after the streams above drained; an allocation or free
     still queued makes CUDA release the pool once it is done instead of at once). */
  if (d->pool) cudaMemPoolDestroy((cudaMemPool_t)d->pool);
}

zs_status zs_cuda_dev_blas(zs_dev *d, void *stream, void **handle) {
  *handle = NULL;
  if (!d->blas) {
    cublasHandle_t h = NULL;
    cublasStatus_t st = cublasCreate(&h);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
      if (h) cublasDestroy(h);
      return zs_err(ZS_ERR_DEVICE, "creating the engine's cuBLAS handle failed: %s",
                    cublasGetStatusString(st));
    }
    d->blas = h;
  }
  const cublasStatus_t st = cublasSetStream((cublasHandle_t)d->blas, (cudaStream_t)stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    return zs_err(ZS_ERR_DEVICE, "cublasSetStream failed: %s", cublasGetStatusString(st));
  *handle = d->blas;
  return ZS_OK;
}

zs_status zs_cuda_dev_alloc(zs_dev *d, size_t bytes, void **p, void *stream) {
  cudaError_t e =
      stream ? cudaMallocFromPoolAsync(p, bytes, (cudaMemPool_t)d->pool, (cudaStream_t)stream)
             : cudaMalloc(p, bytes);
  if (e != cudaSuccess) {
    *p = NULL;
    if (e != cudaErrorMemoryAllocation) /* a bad context or argument, not a full GPU */
      return cuda_fail(e, stream ? "cudaMallocFromPoolAsync" : "cudaMalloc");
    (void)cudaGetLastError();
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) (void)cudaGetLastError();
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "GPU %d: allocation of %zu bytes failed (%zu of %zu bytes free): use a higher "
                  "stage, offload, or fewer units in flight (prefetch_units, max_live_bytes)",
                  d->index, bytes, fr, tot);
  }
  return ZS_OK;
}

void zs_cuda_dev_free(zs_dev *d, void *p, void *stream) {
  (void)d;
  /* Without a stream, cudaFree waits for the whole device. The engine frees so only where none
     of its collectives can be pending: after a bounded wait succeeded, or in destroy once every
     communicator is finalized or aborted; a failed engine defers its frees (zs_mem_free). */
  cudaError_t e = stream ? cudaFreeAsync(p, (cudaStream_t)stream) : cudaFree(p);
  if (e != cudaSuccess)
    (void)cudaGetLastError(); /* nothing to report: keep launches' checks clean */
}

zs_status zs_cuda_dev_zero(zs_dev *d, void *p, size_t bytes, void *stream) {
  (void)d;
  CUDA_TRY(cudaMemsetAsync(p, 0, bytes, (cudaStream_t)stream));
  return ZS_OK;
}

zs_status zs_cuda_dev_copy(zs_dev *d, void *dst, const void *src, size_t bytes, void *stream) {
  if (bytes == 0 || dst == src) return ZS_OK;
  /* Stays queued when CUDA runs it asynchronously (device memory, pinned host memory: the host
     arena when it could pin). A copy through pageable memory (an arena left unpinned, offloaded
     params or staging) would wait inside cudaMemcpyAsync for the stream, which may hold a
     collective of a dead peer (cuda_copy.h): the stream is polled idle under wait_timeout_s
     first, so the call waits for its own bytes only. */
  if (zs_cuda_copy_may_block(dst, src))
    ZS_CHECK(zs_cuda_wait_stream(stream, d->wait_timeout_s,
                                 stream == d->comm_stream
                                     ? "copy through pageable host memory (comm stream)"
                                     : "copy through pageable host memory (compute stream)"));
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
  return ZS_OK;
}

static cudaError_t query_event(void *ev) {
  return cudaEventQuery((cudaEvent_t)ev);
}

/* A bounded wait (cuda_poll.h) with this file's CUDA error message. */
static zs_status poll_wait(cudaError_t (*query)(void *), void *obj, double timeout_s,
                           const char *what) {
  cudaError_t err = cudaSuccess;
  const zs_status rc = zs_cuda_poll(query, obj, timeout_s, what, &err, zs_err);
  return rc == ZS_ERR_DEVICE ? cuda_fail(err, what) : rc;
}

zs_status zs_cuda_wait_stream(void *stream, double timeout_s, const char *what) {
  if (!(timeout_s > 0)) { /* no comm_timeout_s: the user asked for unbounded waits */
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    return e == cudaSuccess ? ZS_OK : cuda_fail(e, what);
  }
  return poll_wait(zs_cuda_query_stream, stream, timeout_s, what);
}

/* Host <-> device copies on the compute stream. Both streams are polled idle (bounded) before
   the copy is issued: with pageable host memory cudaMemcpyAsync itself waits for the work queued
   before it (cuda_copy.h), and the compute stream may wait on events of the comm stream and its
   collectives. The comm stream goes first, so the compute stream's waits on it are satisfied.
   Then the copy waits for its own bytes only, and the wait after it covers pinned memory. */
zs_status zs_cuda_dev_to_host(zs_dev *d, void *host, const void *src, size_t bytes) {
  ZS_CHECK(zs_cuda_wait_stream(d->comm_stream, d->wait_timeout_s, "copy to host (comm stream)"));
  cudaStream_t s = (cudaStream_t)d->compute_stream;
  ZS_CHECK(zs_cuda_wait_stream(s, d->wait_timeout_s, "copy to host (compute stream)"));
  CUDA_TRY(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDefault, s));
  return zs_cuda_wait_stream(s, d->wait_timeout_s, "copy to host");
}

zs_status zs_cuda_dev_from_host(zs_dev *d, void *dst, const void *host, size_t bytes) {
  /* On the (non-blocking) compute stream and synchronised: a plain cudaMemcpy from pageable
     memory may return before its DMA lands, unordered with the engine's streams. */
  cudaStream_t s = (cudaStream_t)d->compute_stream;
  ZS_CHECK(zs_cuda_wait_stream(d->comm_stream, d->wait_timeout_s, "copy from host (comm stream)"));
  ZS_CHECK(zs_cuda_wait_stream(s, d->wait_timeout_s, "copy from host (compute stream)"));
  CUDA_TRY(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyDefault, s));
  return zs_cuda_wait_stream(s, d->wait_timeout_s, "copy from host");
}

zs_status zs_cuda_dev_sync(zs_dev *d, void *stream) {
  return zs_cuda_wait_stream(stream, d->wait_timeout_s,
                             stream == d->comm_stream ? "wait for the comm stream"
                                                      : "wait for the compute stream");
}

zs_status zs_cuda_dev_order(zs_dev *d, void *waiter, void *signaler) {
  (void)d;
  if (waiter == signaler) return ZS_OK;
  cudaEvent_t ev;
  CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  cudaError_t e = cudaEventRecord(ev, (cudaStream_t)signaler);
  if (e == cudaSuccess) e = cudaStreamWaitEvent((cudaStream_t)waiter, ev, 0);
  cudaEventDestroy(ev); /* safe: destruction is deferred until the event completes */
  if (e != cudaSuccess) return cuda_fail(e, "cudaEventRecord/cudaStreamWaitEvent");
  return ZS_OK;
}

zs_status zs_cuda_event_create(void **ev) {
  CUDA_TRY(cudaEventCreateWithFlags((cudaEvent_t *)ev, cudaEventDisableTiming));
  return ZS_OK;
}

zs_status zs_cuda_event_record(void *ev, void *stream) {
  CUDA_TRY(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream));
  return ZS_OK;
}

zs_status zs_cuda_event_wait(void *ev, double timeout_s) {
  if (!(timeout_s > 0)) {
    CUDA_TRY(cudaEventSynchronize((cudaEvent_t)ev));
    return ZS_OK;
  }
  return poll_wait(query_event, ev, timeout_s, "wait for an event");
}

zs_status zs_cuda_stream_wait_event(void *stream, void *ev) {
  CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)ev, 0));
  return ZS_OK;
}

void zs_cuda_event_destroy(void *ev) {
  cudaEventDestroy((cudaEvent_t)ev);
}
