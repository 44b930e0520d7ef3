/* Device layer dispatch: the CPU device inline here, CUDA in device_cuda.c. */
#include "device/device.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "device/cpu/engine_ops.h"

#if !defined(__SANITIZE_ADDRESS__)
#include "device/cpu/host_map.h"
#endif

#ifdef ZS_HAVE_CUDA
#include "device/device_cuda.h"
#define ZS_IS_CUDA(d) ((d)->kind == ZS_DEVICE_CUDA)
#else
#define ZS_IS_CUDA(d) 0
#endif

zs_status zs_dev_open(zs_dev *d, zs_device kind, int index) {
  memset(d, 0, sizeof *d);
  d->kind = kind;
  d->index = -1;
  if (kind == ZS_DEVICE_CPU) return ZS_OK;
#ifdef ZS_HAVE_CUDA
  return zs_cuda_dev_open(d, index);
#else
  (void)index;
  return zs_err(ZS_ERR_UNSUPPORTED, "this zshard was built without CUDA: use ZS_DEVICE_CPU, or "
                                    "rebuild with -DZS_CUDA=ON on a machine with nvcc");
#endif
}

void zs_dev_close(zs_dev *d) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) zs_cuda_dev_close(d);
#endif
  memset(d, 0, sizeof *d);
  d->kind = ZS_DEV_CLOSED;
  d->index = -1;
}

zs_status zs_dev_mem_info(zs_dev *d, size_t *free_b, size_t *total_b) {
  *free_b = *total_b = 0;
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_mem_info(d, free_b, total_b);
#endif
  (void)d;
  return zs_err(ZS_ERR_UNSUPPORTED, "zs_dev_mem_info: the CPU device has no device memory");
}

zs_status zs_dev_pci_bus_id(zs_dev *d, char *buf, size_t len) {
  if (len) buf[0] = '\0';
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_pci_bus_id(d, buf, len);
#endif
  (void)d;
  return zs_err(ZS_ERR_UNSUPPORTED, "the CPU device has no GPU counters");
}

uint64_t zs_dev_id_hash(zs_dev *d) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_id_hash(d);
#endif
  (void)d;
  return 0;
}

int zs_dev_cuda_count(void) {
#ifdef ZS_HAVE_CUDA
  return zs_cuda_dev_count();
#else
  return 0;
#endif
}

static atomic_long zs_dev_live; /* buffers allocated and not yet freed, every device */

long zs_dev_live_buffers(void) {
  return atomic_load(&zs_dev_live);
}

zs_status zs_dev_alloc(zs_dev *d, size_t bytes, void **p, void *stream) {
  *p = NULL;
  if (bytes == 0) bytes = 1;
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) {
    const zs_status rc = zs_cuda_dev_alloc(d, bytes, p, stream);
    if (rc == ZS_OK) atomic_fetch_add(&zs_dev_live, 1);
    return rc;
  }
#endif
  (void)stream;
#if defined(__SANITIZE_ADDRESS__)
  /* Under ASan use the libc allocator so the sanitizer sees every engine buffer. */
  if (posix_memalign(p, 256, bytes) != 0) *p = NULL;
#else
  *p = zs_cpu_alloc(bytes); /* exact pages for large buffers: host_map.h */
#endif
  if (!*p)
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "host allocation of %zu bytes failed: reduce the model or "
                  "use a higher stage",
                  bytes);
  atomic_fetch_add(&zs_dev_live, 1);
  return ZS_OK;
}

void zs_dev_free(zs_dev *d, void *p, void *stream) {
  if (!p || d->kind == ZS_DEV_CLOSED)
    return; /* a closed device's buffer: leaked, never handed
               to the wrong allocator (LeakSanitizer names it) */
  atomic_fetch_sub(&zs_dev_live, 1);
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) {
    zs_cuda_dev_free(d, p, stream);
    return;
  }
#endif
  (void)stream;
#if defined(__SANITIZE_ADDRESS__)
  free(p);
#else
  zs_cpu_free(p);
#endif
}

zs_status zs_dev_timer_begin(zs_dev *d) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_timer_begin(d);
#endif
  (void)d;
  return ZS_OK;
}

void zs_dev_timer_coll(zs_dev *d, void *stream, int end) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) zs_cuda_timer_coll(d, stream, end);
#endif
  (void)d, (void)stream, (void)end;
}

void zs_dev_timer_end(zs_dev *d, double *coll_s, double *wait_s, int *missed) {
  *coll_s = *wait_s = 0;
  *missed = 0;
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) zs_cuda_timer_end(d, coll_s, wait_s, missed);
#endif
  (void)d;
}

zs_status zs_dev_blas(zs_dev *d, void *stream, void **handle) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_blas(d, stream, handle);
#endif
  (void)d, (void)stream;
  *handle = NULL;
  return zs_err(ZS_ERR_UNSUPPORTED, "zs_dev_blas: the CPU device has no cuBLAS handle");
}

zs_status zs_dev_zero(zs_dev *d, void *p, size_t bytes, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_zero(d, p, bytes, stream);
#endif
  if (bytes) memset(p, 0, bytes);
  return ZS_OK;
}

zs_status zs_dev_copy(zs_dev *d, void *dst, const void *src, size_t bytes, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_copy(d, dst, src, bytes, stream);
#endif
  if (bytes && dst != src) memmove(dst, src, bytes);
  return ZS_OK;
}

zs_status zs_dev_to_host(zs_dev *d, void *host, const void *src, size_t bytes) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_to_host(d, host, src, bytes);
#endif
  if (bytes && host != src) memmove(host, src, bytes);
  return ZS_OK;
}

zs_status zs_dev_from_host(zs_dev *d, void *dst, const void *host, size_t bytes) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_from_host(d, dst, host, bytes);
#endif
  if (bytes && dst != host) memmove(dst, host, bytes);
  return ZS_OK;
}

zs_status zs_dev_sync(zs_dev *d, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_dev_sync(d, stream);
#endif
  return ZS_OK;
}

zs_status zs_dev_order(zs_dev *d, void *waiter, void *signaler) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) {
    zs_cuda_timer_wait(d, waiter, 0);
    const zs_status rc = zs_cuda_dev_order(d, waiter, signaler);
    zs_cuda_timer_wait(d, waiter, 1);
    return rc;
  }
#endif
  return ZS_OK;
}

zs_status zs_dev_wait_event(zs_dev *d, void *stream, void *ev) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d) && ev) {
    zs_cuda_timer_wait(d, stream, 0);
    const zs_status rc = zs_cuda_stream_wait_event(stream, ev);
    zs_cuda_timer_wait(d, stream, 1);
    return rc;
  }
#endif
  (void)d;
  (void)stream;
  (void)ev;
  return ZS_OK;
}

zs_status zs_dev_event_create(zs_dev *d, void **ev) {
  *ev = NULL;
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_event_create(ev);
#endif
  return ZS_OK;
}

zs_status zs_dev_event_record(zs_dev *d, void *ev, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_event_record(ev, stream);
#endif
  return ZS_OK;
}

zs_status zs_dev_event_wait(zs_dev *d, void *ev) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_event_wait(ev, d->wait_timeout_s);
#endif
  return ZS_OK;
}

void zs_dev_event_destroy(zs_dev *d, void *ev) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d) && ev) zs_cuda_event_destroy(ev);
#endif
}

zs_status zs_dev_convert(zs_dev *d, void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                         size_t n, void *stream) {
  if (dst == src && dst_dt == src_dt) return ZS_OK;
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_convert(dst, dst_dt, src, src_dt, n, stream);
#endif
  zs_cpu_convert(dst, dst_dt, src, src_dt, n);
  return ZS_OK;
}

zs_status zs_dev_add_into(zs_dev *d, void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                          size_t n, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_add_into(dst, dst_dt, src, src_dt, n, stream);
#endif
  zs_cpu_add_into(dst, dst_dt, src, src_dt, n);
  return ZS_OK;
}

zs_status zs_dev_sum_chunks(zs_dev *d, void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                            int nchunks, size_t stride, size_t n, int accumulate, void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d))
    return zs_cuda_sum_chunks(dst, dst_dt, src, src_dt, nchunks, stride, n, accumulate, stream);
#endif
  zs_cpu_sum_chunks(dst, dst_dt, src, src_dt, nchunks, stride, n, accumulate);
  return ZS_OK;
}

zs_status zs_dev_sq_bins(zs_dev *d, uint64_t *bins, const void *x, zs_dtype dt, size_t n,
                         void *stream) {
#ifdef ZS_HAVE_CUDA
  if (ZS_IS_CUDA(d)) return zs_cuda_sq_bins(bins, x, dt, n, stream);
#endif
  zs_cpu_sq_bins(bins, x, dt, n);
  return ZS_OK;
}
