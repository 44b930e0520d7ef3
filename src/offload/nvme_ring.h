/* The NVMe tier's I/O engine: an io_uring (liburing) that reads and writes aligned spans of the
 * tier's O_DIRECT files (nvme_file.h) and checks every completion. One ring per rank, used by
 * one thread at a time (the stream that drives it, nvme_stream.h). Not collective. */
#ifndef ZS_OFFLOAD_NVME_RING_H
#define ZS_OFFLOAD_NVME_RING_H

#include <stddef.h>
#include <stdint.h>

#include "offload/nvme_file.h"
#include "zshard.h"

typedef struct zs_nvme_ring zs_nvme_ring;

/* A ring that holds up to `capacity` I/Os in flight (1 .. 4096). ZS_ERR_INVALID_ARG for NULL or
   a capacity out of range; ZS_ERR_UNSUPPORTED when the kernel refuses io_uring (a seccomp
   filter, kernel.io_uring_disabled); ZS_ERR_OUT_OF_MEMORY. Caller owns *out. */
zs_status zs_nvme_ring_create(unsigned capacity, zs_nvme_ring **out);

/* What its completion errors call the ring's user ("NVMe tier" from create) and what they advise
   after a short write (", restart from the last checkpoint"); both strings must outlive r. */
void zs_nvme_ring_set_names(zs_nvme_ring *r, const char *who, const char *advice);

/* The capacity given at creation. */
unsigned zs_nvme_ring_capacity(const zs_nvme_ring *r);

/* I/Os queued and not yet reaped. */
unsigned zs_nvme_ring_inflight(const zs_nvme_ring *r);

/* Queues one read (write = 0) or write of len bytes of f at off from/to buf (all three aligned
   to the tier directory's alignment; the caller's invariant), tagged `tag`; zs_nvme_ring_submit
   hands it to the kernel. buf must stay valid until its completion is reaped. ZS_ERR_STATE when
   capacity I/Os are already in flight (nothing queued). */
zs_status zs_nvme_ring_queue(zs_nvme_ring *r, int write, const zs_nvme_file *f, void *buf,
                             size_t len, uint64_t off, uint64_t tag);

/* Hands every queued I/O to the kernel. ZS_ERR_IO when io_uring_submit fails (the I/Os stay
   in flight as far as reaping goes: zs_nvme_ring_drain still accounts for them). That first
   failure is sticky: the ring takes no more I/O, and every later submit or reap reports it. */
zs_status zs_nvme_ring_submit(zs_nvme_ring *r);

/* The tag zs_nvme_ring_reap sets when it retired nothing. */
#define ZS_NVME_NO_TAG UINT64_MAX

/* Waits for one completion and retires it: *tag is its tag, whatever its result. ZS_OK when it
   moved all its bytes (a short completion has the rest resubmitted and waited for first);
   ZS_ERR_IO naming the file, the offset and the error (an errno, or an end of file: a completion
   of 0 bytes, a truncated file), or the ring's sticky submit failure (which wins over
   the completion's own result; *tag still names the I/O retired); ZS_ERR_STATE when nothing is
   in flight. *tag is ZS_NVME_NO_TAG when nothing was retired (nothing in flight, the wait failed,
   or a broken ring holds only I/Os it never handed to the kernel): account for nothing then. */
zs_status zs_nvme_ring_reap(zs_nvme_ring *r, uint64_t *tag);

/* Wall seconds zs_nvme_ring_reap has spent blocked in the kernel's wait since create. */
double zs_nvme_ring_wait_seconds(const zs_nvme_ring *r);

/* Waits for every I/O in flight and retires it, ignoring results (a failure path's cleanup:
   after it no buffer is in the kernel's hands). */
void zs_nvme_ring_drain(zs_nvme_ring *r);

/* Drains the ring and frees it (NULL: nothing). */
void zs_nvme_ring_destroy(zs_nvme_ring *r);

#endif
