/* The CUDA half of the user-buffer API (zs_k_alloc/free/zero/copy/sync): stream-ordered
 * allocation (cudaMallocAsync / cudaFreeAsync), memset and copies on the kernel context's stream.
 * Every CUDA failure becomes a status with a sentence naming the public call and the CUDA call;
 * nothing prints, exits or aborts. */
#include "kernels/kernels_mem.h"

#include <cuda_runtime.h>

#include "device/cuda_copy.h"
#include "device/cuda_poll.h"
#include "kernels/kerr.h"

/* The stream all of it is ordered on. */
static cudaStream_t stream_of(zs_cuda_kctx *k) {
  return (cudaStream_t)zs_cuda_kctx_stream(k);
}

/* ZS_ERR_DEVICE naming the public function `fn` and the CUDA call `what`. A non-sticky error is
   cleared so that later calls do not report it again. */
static zs_status cuda_fail(const char *fn, const char *what, cudaError_t e) {
  (void)cudaGetLastError();
  return zs_kerr(ZS_ERR_DEVICE, "%s: %s failed: %s (%s); check the GPU is healthy", fn, what,
                 cudaGetErrorString(e), cudaGetErrorName(e));
}

zs_status zs_cuda_mem_alloc(zs_cuda_kctx *k, size_t bytes, void **p) {
  static const char fn[] = "zs_k_alloc";
  cudaStream_t s = stream_of(k);
  void *q = NULL;
  cudaError_t e = cudaMallocAsync(&q, bytes, s);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (e != cudaErrorMemoryAllocation) return cuda_fail(fn, "cudaMallocAsync", e);
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) (void)cudaGetLastError();
    return zs_kerr(ZS_ERR_OUT_OF_MEMORY,
                   "%s: the GPU cannot allocate %zu bytes (%zu of %zu bytes free): use smaller "
                   "buffers (batch, sequence) or a higher stage / offload for the model state",
                   fn, bytes, fr, tot);
  }
  e = cudaMemsetAsync(q, 0, bytes, s);
  if (e != cudaSuccess) {
    zs_status rc = cuda_fail(fn, "cudaMemsetAsync", e);
    (void)cudaFreeAsync(q, s);
    (void)cudaGetLastError();
    return rc;
  }
  *p = q;
  return ZS_OK;
}

void zs_cuda_mem_free(zs_cuda_kctx *k, void *p) {
  if (cudaFreeAsync(p, stream_of(k)) != cudaSuccess) (void)cudaGetLastError();
}

zs_status zs_cuda_mem_zero(zs_cuda_kctx *k, void *p, size_t bytes) {
  cudaError_t e = cudaMemsetAsync(p, 0, bytes, stream_of(k));
  return e == cudaSuccess ? ZS_OK : cuda_fail("zs_k_zero", "cudaMemsetAsync", e);
}

/* Waits for the context's stream, bounded by timeout_s (<= 0: unbounded). */
static zs_status wait_stream(zs_cuda_kctx *k, double timeout_s, const char *fn) {
  cudaError_t err = cudaSuccess;
  if (!(timeout_s > 0)) {
    err = cudaStreamSynchronize(stream_of(k));
    return err == cudaSuccess ? ZS_OK : cuda_fail(fn, "cudaStreamSynchronize", err);
  }
  const zs_status rc =
      zs_cuda_poll(zs_cuda_query_stream, stream_of(k), timeout_s, fn, &err, zs_kerr);
  return rc == ZS_ERR_DEVICE ? cuda_fail(fn, "cudaStreamQuery", err) : rc;
}

zs_status zs_cuda_mem_copy(zs_cuda_kctx *k, void *dst, const void *src, size_t bytes,
                           double timeout_s) {
  static const char fn[] = "zs_k_copy";
  cudaStream_t s = stream_of(k);
  const int host = zs_cuda_mem_kind_of(dst) != ZS_CUDA_MEM_DEVICE ||
                   zs_cuda_mem_kind_of(src) != ZS_CUDA_MEM_DEVICE;
  if (!host) { /* device to device: stays queued, the host never waits */
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s);
    return e == cudaSuccess ? ZS_OK : cuda_fail(fn, "cudaMemcpyAsync", e);
  }
  /* Host memory on a side: the stream is drained first under the timeout, because the copy call
     itself may wait for everything queued before it (device -> pageable host returns when the
     copy is done; pageable host -> device may synchronise with the stream while staging;
     cuda_copy.h), where a collective of a dead peer would hold it past any timeout. On an idle
     stream the call waits for its own bytes only. A timeout leaves the host buffer untouched. */
  ZS_CHECK(wait_stream(k, timeout_s, "zs_k_copy (wait for the work queued before the copy)"));
  const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s);
  if (e != cudaSuccess) return cuda_fail(fn, "cudaMemcpyAsync", e);
  /* The host side may be reused (src) or read (dst) at once: a pinned-memory copy is still
     queued here. */
  return wait_stream(k, timeout_s, "zs_k_copy (wait for the copy)");
}

zs_status zs_cuda_mem_sync(zs_cuda_kctx *k, double timeout_s) {
  return wait_stream(k, timeout_s, "zs_k_sync");
}
