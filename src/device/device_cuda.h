/* CUDA half of the device layer (compiled only with CUDA; see device.h for the contracts). */
#ifndef ZS_DEVICE_DEVICE_CUDA_H
#define ZS_DEVICE_DEVICE_CUDA_H

#include "device/device.h"
#include "device/cuda/engine_cuda.h"

zs_status zs_cuda_dev_open(zs_dev *d, int index);
void zs_cuda_dev_close(zs_dev *d);
int zs_cuda_dev_count(void);
uint64_t zs_cuda_dev_id_hash(zs_dev *d);
zs_status zs_cuda_dev_mem_info(zs_dev *d, size_t *free_b, size_t *total_b);
zs_status zs_cuda_dev_pci_bus_id(zs_dev *d, char *buf, size_t len);
zs_status zs_cuda_dev_alloc(zs_dev *d, size_t bytes, void **p, void *stream);
void zs_cuda_dev_free(zs_dev *d, void *p, void *stream);
zs_status zs_cuda_dev_zero(zs_dev *d, void *p, size_t bytes, void *stream);
zs_status zs_cuda_dev_blas(zs_dev *d, void *stream, void **handle);
/* cuda_timer.c: device.h's zs_dev_timer_*; wait marks only a wait of the compute stream. */
zs_status zs_cuda_timer_begin(zs_dev *d);
void zs_cuda_timer_coll(zs_dev *d, void *stream, int end);
void zs_cuda_timer_wait(zs_dev *d, void *waiter, int end);
void zs_cuda_timer_end(zs_dev *d, double *coll_s, double *wait_s, int *missed);
void zs_cuda_timer_free(zs_dev *d);
zs_status zs_cuda_dev_copy(zs_dev *d, void *dst, const void *src, size_t bytes, void *stream);
zs_status zs_cuda_dev_to_host(zs_dev *d, void *host, const void *src, size_t bytes);
zs_status zs_cuda_dev_from_host(zs_dev *d, void *dst, const void *host, size_t bytes);
zs_status zs_cuda_dev_sync(zs_dev *d, void *stream);
zs_status zs_cuda_dev_order(zs_dev *d, void *waiter, void *signaler);
zs_status zs_cuda_event_create(void **ev);
zs_status zs_cuda_event_record(void *ev, void *stream);
/* Host waits bounded by timeout_s (<= 0: unbounded): they poll and give ZS_ERR_TIMEOUT naming
   `what` when the GPU work is still queued after timeout_s (behind a collective whose peer went
   silent). Shared by the engine and the user-buffer API (zs_k_sync / _copy). */
zs_status zs_cuda_wait_stream(void *stream, double timeout_s, const char *what);
zs_status zs_cuda_event_wait(void *ev, double timeout_s);
zs_status zs_cuda_stream_wait_event(void *stream, void *ev);
void zs_cuda_event_destroy(void *ev);

#endif
