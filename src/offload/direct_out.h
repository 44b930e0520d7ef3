/* A file written front to back with O_DIRECT through an io_uring (nvme_ring.h): the data path of
 * the asynchronous checkpoint writer, which thereby puts no page-cache copy or writeback work on
 * the cores that train. Bytes of any length and address go in order; a span whose address and
 * file offset are both aligned is written straight from the caller's memory, the rest through
 * aligned bounce buffers. Not collective; one thread at a time. */
#ifndef ZS_OFFLOAD_DIRECT_OUT_H
#define ZS_OFFLOAD_DIRECT_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

typedef struct zs_direct_out zs_direct_out;

/* A writer of the file open on fd (O_DIRECT, for writing; path names it in errors) from file
   offset base on, with offsets, lengths and addresses aligned to align (a power of two from 512
   to 65536 that divides base). ZS_ERR_INVALID_ARG for a bad align or base; ZS_ERR_UNSUPPORTED
   when the kernel refuses io_uring (write through the page cache then); ZS_ERR_OUT_OF_MEMORY. */
zs_status zs_direct_out_create(int fd, const char *path, uint64_t base, size_t align,
                               zs_direct_out **out);

/* Appends n bytes. Its aligned spans are written from p itself: p's bytes must stay as they are
   until zs_direct_out_release (or flush) returns. ZS_ERR_IO naming the file, the offset and the
   error (ENOSPC, EFBIG, EIO); after one, every call reports it, and no write is left in flight
   (p is the caller's again). ZS_ERR_STATE after zs_direct_out_flush. */
zs_status zs_direct_out_put(zs_direct_out *d, const void *p, size_t n);

/* Waits for the writes from the callers' memory: what was put may be reused. */
zs_status zs_direct_out_release(zs_direct_out *d);

/* Writes what the bounce buffer holds (zero-padded to align: the file may end up to align - 1
   bytes past base + bytes put, for the caller to truncate) and waits for every write. The last
   call before destroy: nothing more can be put. */
zs_status zs_direct_out_flush(zs_direct_out *d);

/* Waits for the writes in flight and frees d (NULL: nothing); closes nothing. */
void zs_direct_out_destroy(zs_direct_out *d);

#endif
