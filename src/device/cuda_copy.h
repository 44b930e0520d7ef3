/* Which cudaMemcpyAsync calls can hold the host (CUDA builds only; header-only like cuda_poll.h, so
 * the engine and the kernels library each compile their own copy).
 *
 * CUDA's "API synchronization behavior": cudaMemcpyAsync is asynchronous only between device
 * memory and device or page-locked host memory. Device -> pageable host returns only once the
 * copy is done; pageable host -> device may synchronise with the stream while the driver stages
 * the bytes; host -> host (pinned or not) is fully synchronous. Such a call waits inside CUDA for
 * everything queued before it on the stream (a collective of a dead peer included), where no
 * timeout can reach it. Invariant of every caller: a copy for which zs_cuda_copy_may_block() is 1
 * is issued only on a stream that a bounded poll (cuda_poll.h) has seen idle, so the call itself
 * waits for its own bytes only. */
#ifndef ZS_DEVICE_CUDA_COPY_H
#define ZS_DEVICE_CUDA_COPY_H

#include <cuda_runtime.h>

typedef enum {
  ZS_CUDA_MEM_DEVICE = 0, /* device memory (cudaMalloc, pools) */
  ZS_CUDA_MEM_PINNED,     /* host memory page-locked for CUDA (cudaMallocHost, cudaHostRegister) */
  ZS_CUDA_MEM_OTHER       /* pageable or managed memory, or a pointer CUDA does not know */
} zs_cuda_mem_kind;

/* The kind of memory p points at. A pointer CUDA cannot classify counts as pageable host memory
   (the error is cleared so that later launch checks do not report it). */
static inline zs_cuda_mem_kind zs_cuda_mem_kind_of(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return ZS_CUDA_MEM_OTHER;
  }
  if (a.type == cudaMemoryTypeDevice) return ZS_CUDA_MEM_DEVICE;
  return a.type == cudaMemoryTypeHost ? ZS_CUDA_MEM_PINNED : ZS_CUDA_MEM_OTHER;
}

/* 1 when cudaMemcpyAsync(dst, src, ...) may wait on the host for the work queued before it on its
   stream: pageable or managed memory on either side, or host memory on both sides. 0 for the
   truly asynchronous copies (device <-> device, device <-> pinned host). */
static inline int zs_cuda_copy_may_block(const void *dst, const void *src) {
  const zs_cuda_mem_kind d = zs_cuda_mem_kind_of(dst), s = zs_cuda_mem_kind_of(src);
  if (d == ZS_CUDA_MEM_OTHER || s == ZS_CUDA_MEM_OTHER) return 1;
  return d != ZS_CUDA_MEM_DEVICE && s != ZS_CUDA_MEM_DEVICE;
}

#endif
