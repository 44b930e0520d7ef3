/* CUDA device: stream-ordered allocation (cudaMallocAsync), two streams ordered by events. */
#include "device_cuda.h"

#include <cuda_runtime.h>

#include "error.h"

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
  d->index = index;
  d->compute_stream = a;
  d->comm_stream = b;
  return ZS_OK;
}

void zs_cuda_dev_close(zs_dev *d) {
  if (d->compute_stream) {
    cudaStreamSynchronize(d->compute_stream);
    cudaStreamDestroy(d->compute_stream);
  }
  if (d->comm_stream) {
    cudaStreamSynchronize(d->comm_stream);
    cudaStreamDestroy(d->comm_stream);
  }
}

zs_status zs_cuda_dev_alloc(zs_dev *d, size_t bytes, void **p, void *stream) {
  cudaError_t e = stream ? cudaMallocAsync(p, bytes, (cudaStream_t)stream) : cudaMalloc(p, bytes);
  if (e != cudaSuccess) {
    *p = NULL;
    if (e != cudaErrorMemoryAllocation) /* a bad context or argument, not a full GPU */
      return cuda_fail(e, stream ? "cudaMallocAsync" : "cudaMalloc");
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
  (void)d;
  if (bytes == 0 || dst == src) return ZS_OK;
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
  return ZS_OK;
}

zs_status zs_cuda_dev_to_host(zs_dev *d, void *host, const void *src, size_t bytes) {
  CUDA_TRY(cudaStreamSynchronize((cudaStream_t)d->comm_stream));
  cudaStream_t s = (cudaStream_t)d->compute_stream;
  CUDA_TRY(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDefault, s));
  CUDA_TRY(cudaStreamSynchronize(s));
  return ZS_OK;
}

zs_status zs_cuda_dev_from_host(zs_dev *d, void *dst, const void *host, size_t bytes) {
  /* On the (non-blocking) compute stream and synchronised: a plain cudaMemcpy from pageable
     memory may return before its DMA lands, unordered with the engine's streams. */
  cudaStream_t s = (cudaStream_t)d->compute_stream;
  CUDA_TRY(cudaStreamSynchronize((cudaStream_t)d->comm_stream));
  CUDA_TRY(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyDefault, s));
  CUDA_TRY(cudaStreamSynchronize(s));
  return ZS_OK;
}

zs_status zs_cuda_dev_sync(zs_dev *d, void *stream) {
  (void)d;
  CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream));
  return ZS_OK;
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

zs_status zs_cuda_event_wait(void *ev) {
  CUDA_TRY(cudaEventSynchronize((cudaEvent_t)ev));
  return ZS_OK;
}

void zs_cuda_event_destroy(void *ev) {
  cudaEventDestroy((cudaEvent_t)ev);
}
