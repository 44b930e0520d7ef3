/* Device layer: memory, copies, streams and the engine's elementwise ops for one device.
 * src/shard and src/engine reach CUDA only through here. On the CPU device memory is
 * host memory (cpu/host_map.h: page-exact mappings, small ones from jemalloc), streams are NULL and
 * everything is synchronous. On CUDA the compute stream is handed to the user; the comm stream
 * carries collectives; they are ordered by events. */
#ifndef ZS_DEVICE_DEVICE_H
#define ZS_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "device/ops.h" /* zs_dtype_size */
#include "zshard.h"

typedef struct {
  zs_device kind;
  int index;             /* CUDA ordinal, -1 on CPU */
  void *compute_stream;  /* cudaStream_t */
  void *comm_stream;     /* cudaStream_t */
  void *pool;            /* cudaMemPool_t of the stream-ordered allocations: it keeps what it has
                            reserved (release threshold = max), so steps do not map and unmap */
  double wait_timeout_s; /* > 0: every host wait on the GPU polls and gives ZS_ERR_TIMEOUT after
                            this long (work queued behind a collective of a silent peer) */
  void *blas;            /* cublasHandle_t of the whole-tensor optimizers' GEMMs (zs_dev_blas), or
                            NULL before the first */
  struct zs_dev_timer *timer; /* the step's GPU timing (zs_dev_timer_*), or NULL before the first */
} zs_dev;

/* The kind of a closed device: zs_dev_free of its buffers frees nothing (a CUDA buffer freed as
   host memory after close crashed every CUDA engine's destroy; now it is a leak that the
   sanitizer builds report on the CPU device too). */
#define ZS_DEV_CLOSED ((zs_device)-1)

/* Opens the device: on CUDA selects it (index >= 0) and creates the two streams. */
zs_status zs_dev_open(zs_dev *d, zs_device kind, int index);
/* Closes it: free its buffers first. */
void zs_dev_close(zs_dev *d);
/* Free and total bytes of the device (CUDA: cudaMemGetInfo). ZS_ERR_UNSUPPORTED on the CPU
   device (see host_mem.h for host memory). */
zs_status zs_dev_mem_info(zs_dev *d, size_t *free_b, size_t *total_b);
/* The CUDA device's PCI bus id ("0000:3b:00.0"); ZS_ERR_UNSUPPORTED on the CPU device. */
zs_status zs_dev_pci_bus_id(zs_dev *d, char *buf, size_t len);
/* A hash of the device's identity that is the same in every process using it (CUDA: its PCI
   bus id, whatever CUDA_VISIBLE_DEVICES says); 0 on the CPU device. */
uint64_t zs_dev_id_hash(zs_dev *d);
/* Number of CUDA devices visible (0 without CUDA or a driver). */
int zs_dev_cuda_count(void);

/* Device memory, 256-byte aligned. `stream` orders the allocation (cudaMallocAsync); NULL = sync.
 */
zs_status zs_dev_alloc(zs_dev *d, size_t bytes, void **p, void *stream);
void zs_dev_free(zs_dev *d, void *p, void *stream);
/* Buffers zs_dev_alloc handed out and zs_dev_free has not taken back, over every device of the
   process (a destroyed engine leaves none: the tests check it). */
long zs_dev_live_buffers(void);
zs_status zs_dev_zero(zs_dev *d, void *p, size_t bytes, void *stream);
/* Copies on stream between device memory and the engine's host memory (the offload arena, the
   host-resident params): async when both sides are device or pinned memory; with a pageable
   side it first drains stream within wait_timeout_s (such a copy would otherwise block inside
   CUDA behind a collective of a silent peer), then copies. */
zs_status zs_dev_copy(zs_dev *d, void *dst, const void *src, size_t bytes, void *stream);
/* Host <-> device copies, complete on return. Like zs_dev_sync they wait at most
   wait_timeout_s (ZS_ERR_TIMEOUT naming the wait). */
zs_status zs_dev_to_host(zs_dev *d, void *host, const void *src, size_t bytes);
zs_status zs_dev_from_host(zs_dev *d, void *dst, const void *host, size_t bytes);
/* Waits for all work queued on stream. */
zs_status zs_dev_sync(zs_dev *d, void *stream);
/* The device's cuBLAS handle (created at the first call; fp32 math, no TF32) with its work queued
   on stream. ZS_ERR_UNSUPPORTED on the CPU device (its GEMMs are OpenBLAS's). */
zs_status zs_dev_blas(zs_dev *d, void *stream, void **handle);

/* The GPU timing of a step (CUDA; nothing on the CPU): while on, each collective's GPU time (a
   pair of timing events around it on its stream: zs_dev_timer_coll, called by the engine's
   groups) and each wait of the compute stream for another (zs_dev_order and zs_dev_wait_event
   with the compute stream waiting: the time it stood still) are recorded; zs_dev_timer_end reads
   them without waiting (a pair not yet complete is left out and counted in missed). Begin fails
   only when its events cannot be made (the step then goes untimed). */
typedef struct zs_dev_timer zs_dev_timer;
zs_status zs_dev_timer_begin(zs_dev *d);
void zs_dev_timer_coll(zs_dev *d, void *stream, int end); /* end 0: before the op, 1: after */
void zs_dev_timer_end(zs_dev *d, double *coll_s, double *wait_s, int *missed);
/* Makes future work on `waiter` wait for the work queued so far on `signaler`. */
zs_status zs_dev_order(zs_dev *d, void *waiter, void *signaler);
/* Makes future work on `stream` wait for event ev (recorded with zs_dev_event_record). ev NULL
   (the CPU device) is a no-op. */
zs_status zs_dev_wait_event(zs_dev *d, void *stream, void *ev);

/* Events (CUDA; no-ops on the CPU): record on a stream, wait for them on the host. */
zs_status zs_dev_event_create(zs_dev *d, void **ev);
zs_status zs_dev_event_record(zs_dev *d, void *ev, void *stream);
zs_status zs_dev_event_wait(zs_dev *d, void *ev); /* bounded by wait_timeout_s */
void zs_dev_event_destroy(zs_dev *d, void *ev);

/* Elementwise ops (see device/cpu/engine_ops.h for their exact definitions). */
zs_status zs_dev_convert(zs_dev *d, void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                         size_t n, void *stream);
zs_status zs_dev_add_into(zs_dev *d, void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                          size_t n, void *stream);
zs_status zs_dev_sum_chunks(zs_dev *d, void *dst, zs_dtype dst_dt, const void *src, zs_dtype src_dt,
                            int nchunks, size_t stride, size_t n, int accumulate, void *stream);
/* Adds squares of x into device bins (ZS_SQ_NWORDS uint64 words, zeroed by the caller). */
zs_status zs_dev_sq_bins(zs_dev *d, uint64_t *bins, const void *x, zs_dtype dt, size_t n,
                         void *stream);

#endif
