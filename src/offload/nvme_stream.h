/* The NVMe tier's stream: one pass over a set of equal-length arrays kept in O_DIRECT files
 * (the optimizer state of the units on the tier: master, m, v), chunk by chunk, with the I/O of
 * neighbouring chunks in flight while the caller computes:
 *
 *     for each chunk k:   read k+1 .. k+ahead (in flight) | compute on k | write k-ahead .. k-1
 *
 * The caller drives it: zs_nvme_stream_next returns chunk k's spans in a staging slot, read and
 * ready; the caller updates them in place; zs_nvme_stream_commit queues their write-back; after
 * the last chunk zs_nvme_stream_finish waits for the writes. A pass uses 2 * ahead + 1 staging
 * slots (nvme_staging.h) and at most (2 * ahead + 1) * narrays ring entries (nvme_ring.h): bounded
 * host memory whatever the arrays' size. One thread drives a stream; not collective.
 *
 * Failures (an I/O error, an unexpected end of file, a full disk, a file deleted or truncated under
 * the tier) are ZS_ERR_IO naming the file and the offset; the stream then stays failed (every
 * later call returns that status and message again) and zs_nvme_stream_close still releases
 * everything. Chunks written before a failure are on disk, later ones are not: a failed update
 * pass leaves the files partly updated (the engine restarts from its last checkpoint). */
#ifndef ZS_OFFLOAD_NVME_STREAM_H
#define ZS_OFFLOAD_NVME_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "offload/nvme_file.h"
#include "offload/nvme_ring.h"
#include "offload/nvme_staging.h"
#include "zshard.h"

#define ZS_NVME_MAX_ARRAYS 4

/* What a pass does with the files: read them (a checkpoint save), write them (filling the tier,
   a checkpoint load: the caller fills each chunk; nothing is read), or both (the optimizer step:
   read, update in place, write back). */
typedef enum { ZS_NVME_READ = 1, ZS_NVME_WRITE = 2, ZS_NVME_UPDATE = 3 } zs_nvme_mode;

typedef struct {
  zs_nvme_mode mode;
  unsigned narrays;                              /* 1 .. ZS_NVME_MAX_ARRAYS */
  const zs_nvme_file *files[ZS_NVME_MAX_ARRAYS]; /* array i lives at offset 0 of files[i] */
  size_t elem_bytes[ZS_NVME_MAX_ARRAYS];         /* bytes per element of array i (4: fp32) */
  size_t n;                                      /* elements of every array */
  /* Elements per chunk (the last chunk may be shorter): chunk * elem_bytes[i] must be a multiple
     of the staging alignment for every i (zs_nvme_chunk_quantum) and at most 1 GiB. */
  size_t chunk;
  unsigned ahead; /* chunks in flight each side of the one computed, >= 1 */
} zs_nvme_stream_desc;

/* One chunk, ready for compute: elements [first, first + count) of every array, array i at
   span[i] (aligned; span[i] has room for `chunk` elements, those past count are padding that
   the stream reads and writes but that belongs to no element). count == 0: the pass is over. */
typedef struct {
  size_t index, first, count;
  void *span[ZS_NVME_MAX_ARRAYS];
} zs_nvme_chunk;

typedef struct zs_nvme_stream zs_nvme_stream;

/* The element multiple every chunk size must be for arrays of these element sizes under an
   O_DIRECT alignment of align bytes (a power of two): align / gcd(align, elem_bytes[i]),
   the largest over i. 0 for bad arguments. */
size_t zs_nvme_chunk_quantum(size_t align, const size_t *elem_bytes, unsigned narrays);
/* Staging slots a pass with this look-ahead needs: 2 * ahead + 1. */
unsigned zs_nvme_stream_slots(unsigned ahead);
/* Bytes of one staging slot for d: the sum over arrays of chunk * elem_bytes[i]. */
size_t zs_nvme_stream_slot_bytes(const zs_nvme_stream_desc *d);
/* Ring entries a pass over d may keep in flight: (2 * ahead + 1) * narrays. */
unsigned zs_nvme_stream_ring_entries(const zs_nvme_stream_desc *d);

/* Starts a pass over d (copied) with ring (idle, at least zs_nvme_stream_ring_entries) and st
   (at least zs_nvme_stream_slots slots of zs_nvme_stream_slot_bytes; its alignment that of the
   files' directory). ring and st are borrowed until zs_nvme_stream_close and must not be used
   by anything else meanwhile. Checks each file (zs_nvme_file_check) and that it holds n
   elements. Errors (nothing started, *out untouched): ZS_ERR_INVALID_ARG (a bad descriptor,
   staging or ring too small, a file too short for n), ZS_ERR_STATE (the ring has I/O in
   flight), ZS_ERR_IO (a file deleted or truncated), ZS_ERR_OUT_OF_MEMORY. */
zs_status zs_nvme_stream_open(const zs_nvme_stream_desc *d, zs_nvme_ring *ring, zs_nvme_staging *st,
                              zs_nvme_stream **out);

/* The next chunk, its reads (mode READ, UPDATE) complete and the reads of the following
   `ahead` chunks queued. In WRITE mode the spans hold stale bytes: the caller fills them.
   ZS_ERR_STATE when the previous chunk was not committed; ZS_ERR_IO (see above). After the last
   chunk: ZS_OK with out->count == 0. */
zs_status zs_nvme_stream_next(zs_nvme_stream *s, zs_nvme_chunk *out);

/* Ends the compute on the chunk next returned: queues its write-back (modes WRITE, UPDATE) or
   releases its slot (READ). The spans must not be touched afterwards. ZS_ERR_STATE when no
   chunk is out; ZS_ERR_IO (see above). */
zs_status zs_nvme_stream_commit(zs_nvme_stream *s);

/* Waits for every I/O of the pass and checks the files again (a file deleted or truncated
   during the pass is ZS_ERR_IO). ZS_ERR_STATE when chunks are left (every chunk must be
   committed first). ZS_OK: every write of the pass is in the files (O_DIRECT: in the disk's
   hands; no fsync). */
zs_status zs_nvme_stream_finish(zs_nvme_stream *s);

/* Bytes moved by the pass so far (completed reads and writes, padding included). */
void zs_nvme_stream_bytes(const zs_nvme_stream *s, uint64_t *read, uint64_t *written);

/* Waits for whatever the pass still has in flight (results ignored) and frees s (NULL:
   nothing). ring and st are the caller's again. */
void zs_nvme_stream_close(zs_nvme_stream *s);

#endif
