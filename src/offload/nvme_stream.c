/* The NVMe tier's read | compute | write stream (nvme_stream.h).
 *
 * Chunk k lives in staging slot k % nslots (nslots = 2 * ahead + 1). When the read of chunk
 * k + ahead is queued, that slot last held chunk k - ahead - 1, whose write-back was queued one
 * step earlier; the stream waits for it first. So at any time the slots hold: reads of
 * k+1 .. k+ahead, the chunk k being computed, writes of k-ahead .. k-1. */
#include "offload/nvme_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

struct zs_nvme_stream {
  zs_nvme_stream_desc d;
  zs_nvme_ring *ring;
  zs_nvme_staging *st;
  size_t align, nchunks;
  unsigned nslots;
  size_t span_off[ZS_NVME_MAX_ARRAYS]; /* where array i's span starts in a slot */
  unsigned *pending;                   /* per slot: its I/Os in flight */
  size_t *slot_chunk;                  /* per slot: the chunk it holds */
  size_t next_chunk;                   /* the chunk next() returns next */
  size_t read_issued;                  /* reads are queued for chunks [0, read_issued) */
  int out;                             /* a chunk was returned and not committed */
  uint64_t bytes_read, bytes_written;
  zs_status failed; /* the first failure (ZS_OK: none) and its message */
  char msg[1024];
};

static size_t zs_gcd(size_t a, size_t b) {
  while (b) {
    const size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

size_t zs_nvme_chunk_quantum(size_t align, const size_t *elem_bytes, unsigned narrays) {
  if (!elem_bytes || align == 0 || (align & (align - 1)) || narrays == 0 ||
      narrays > ZS_NVME_MAX_ARRAYS)
    return 0;
  size_t q = 1;
  for (unsigned i = 0; i < narrays; i++) {
    if (elem_bytes[i] == 0) return 0;
    const size_t qi = align / zs_gcd(align, elem_bytes[i]); /* a power of two */
    if (qi > q) q = qi;
  }
  return q;
}

unsigned zs_nvme_stream_slots(unsigned ahead) {
  return 2 * ahead + 1;
}

size_t zs_nvme_stream_slot_bytes(const zs_nvme_stream_desc *d) {
  size_t b = 0;
  for (unsigned i = 0; i < d->narrays && i < ZS_NVME_MAX_ARRAYS; i++)
    b += d->chunk * d->elem_bytes[i];
  return b;
}

unsigned zs_nvme_stream_ring_entries(const zs_nvme_stream_desc *d) {
  /* Queuing the read of k + ahead may precede the completion of k's own read: every slot can
     have its chunk's I/O in flight at once. */
  return zs_nvme_stream_slots(d->ahead) * d->narrays;
}

/* Records the first failure (the thread's current error) and returns it. */
static zs_status zs_stream_fail(zs_nvme_stream *s, zs_status rc) {
  if (s->failed == ZS_OK) {
    s->failed = rc;
    snprintf(s->msg, sizeof s->msg, "%s", zs_last_error());
  }
  return rc;
}

/* The status of a failed stream, its message set again as the thread's last error. */
static zs_status zs_stream_refail(const zs_nvme_stream *s) {
  return zs_err(s->failed, "%s", s->msg);
}

/* Elements in chunk k, and the bytes of array i's I/O for it (rounded up to the alignment: the
   padding past the last element lies inside the file, whose size is a multiple of it). */
static size_t zs_chunk_count(const zs_nvme_stream *s, size_t k) {
  const size_t first = k * s->d.chunk;
  return s->d.n - first < s->d.chunk ? s->d.n - first : s->d.chunk;
}
static size_t zs_io_len(const zs_nvme_stream *s, size_t k, unsigned i) {
  const size_t b = zs_chunk_count(s, k) * s->d.elem_bytes[i];
  return (b + s->align - 1) / s->align * s->align;
}

/* Tags: (slot, array, write) packed into the ring's 64-bit tag. */
static uint64_t zs_tag(unsigned slot, unsigned i, int write) {
  return ((uint64_t)slot * ZS_NVME_MAX_ARRAYS + i) * 2 + (write ? 1 : 0);
}

/* Reaps one completion and accounts for it. */
static zs_status zs_stream_reap_one(zs_nvme_stream *s) {
  uint64_t tag = ZS_NVME_NO_TAG;
  const zs_status rc = zs_nvme_ring_reap(s->ring, &tag);
  /* Nothing retired (nothing in flight: a bookkeeping bug; a broken ring): no slot to account. */
  if (tag == ZS_NVME_NO_TAG) return zs_stream_fail(s, rc == ZS_OK ? ZS_ERR_STATE : rc);
  const unsigned slot = (unsigned)(tag / 2 / ZS_NVME_MAX_ARRAYS);
  const unsigned i = (unsigned)(tag / 2 % ZS_NVME_MAX_ARRAYS);
  s->pending[slot]--;
  if (rc != ZS_OK) return zs_stream_fail(s, rc);
  const uint64_t len = zs_io_len(s, s->slot_chunk[slot], i);
  if (tag & 1)
    s->bytes_written += len;
  else
    s->bytes_read += len;
  return ZS_OK;
}

/* Waits until slot has no I/O in flight (completions of other slots are accounted on the way). */
static zs_status zs_stream_wait_slot(zs_nvme_stream *s, unsigned slot) {
  while (s->pending[slot] > 0) {
    const zs_status rc = zs_stream_reap_one(s);
    if (rc != ZS_OK) return rc;
  }
  return ZS_OK;
}

/* Queues chunk k's I/O for every array (read or write) from/to its slot. */
static zs_status zs_stream_queue_chunk(zs_nvme_stream *s, size_t k, int write) {
  const unsigned slot = (unsigned)(k % s->nslots);
  char *base = zs_nvme_staging_slot(s->st, slot);
  s->slot_chunk[slot] = k;
  for (unsigned i = 0; i < s->d.narrays; i++) {
    const uint64_t off = (uint64_t)k * s->d.chunk * s->d.elem_bytes[i];
    const zs_status rc = zs_nvme_ring_queue(s->ring, write, s->d.files[i], base + s->span_off[i],
                                            zs_io_len(s, k, i), off, zs_tag(slot, i, write));
    if (rc != ZS_OK) return zs_stream_fail(s, rc);
    s->pending[slot]++;
  }
  return ZS_OK;
}

/* Queues the reads of chunks [read_issued, upto] (capped at the last chunk) and submits them. */
static zs_status zs_stream_read_ahead(zs_nvme_stream *s, size_t upto) {
  if (upto >= s->nchunks) upto = s->nchunks - 1;
  for (; s->read_issued <= upto; s->read_issued++) {
    const size_t k = s->read_issued;
    zs_status rc = zs_stream_wait_slot(s, (unsigned)(k % s->nslots));
    if (rc == ZS_OK) rc = zs_stream_queue_chunk(s, k, 0);
    if (rc != ZS_OK) return rc;
  }
  const zs_status rc = zs_nvme_ring_submit(s->ring);
  return rc == ZS_OK ? ZS_OK : zs_stream_fail(s, rc);
}

/* The descriptor's own checks (zs_nvme_stream_open's ZS_ERR_INVALID_ARG cases). */
static zs_status zs_stream_check_desc(const zs_nvme_stream_desc *d, size_t align) {
  if (d->mode != ZS_NVME_READ && d->mode != ZS_NVME_WRITE && d->mode != ZS_NVME_UPDATE)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_nvme_stream_open: mode %d is not READ, WRITE or UPDATE",
                  (int)d->mode);
  if (d->narrays < 1 || d->narrays > ZS_NVME_MAX_ARRAYS || d->chunk == 0 || d->ahead < 1 ||
      d->ahead > 64)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_nvme_stream_open: narrays %u (1..%d), chunk %zu (> 0), ahead %u (1..64)",
                  d->narrays, ZS_NVME_MAX_ARRAYS, d->chunk, d->ahead);
  for (unsigned i = 0; i < d->narrays; i++) {
    const size_t eb = d->elem_bytes[i];
    if (!d->files[i] || eb == 0 || eb > 16 || d->chunk > (1u << 30) / eb || d->chunk * eb % align)
      return zs_err(
          ZS_ERR_INVALID_ARG,
          "zs_nvme_stream_open: array %u: no file, element size %zu not in 1..16, or "
          "chunk %zu elements not a multiple of %zu (zs_nvme_chunk_quantum) or over 1 GiB",
          i, eb, d->chunk, zs_nvme_chunk_quantum(align, d->elem_bytes, d->narrays));
    const uint64_t need = ((uint64_t)d->n * eb + align - 1) / align * align;
    if (d->files[i]->bytes < need)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_nvme_stream_open: %s holds %llu bytes, %zu elements of %zu bytes need %llu",
                    d->files[i]->path, (unsigned long long)d->files[i]->bytes, d->n, eb,
                    (unsigned long long)need);
    const zs_status rc = zs_nvme_file_check(d->files[i]);
    if (rc != ZS_OK) return rc;
  }
  return ZS_OK;
}

zs_status zs_nvme_stream_open(const zs_nvme_stream_desc *d, zs_nvme_ring *ring, zs_nvme_staging *st,
                              zs_nvme_stream **out) {
  if (!d || !ring || !st || !out)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_nvme_stream_open: NULL argument");
  const size_t align = zs_nvme_staging_align(st);
  zs_status rc = zs_stream_check_desc(d, align);
  if (rc != ZS_OK) return rc;
  const unsigned nslots = zs_nvme_stream_slots(d->ahead);
  if (zs_nvme_staging_slots(st) < nslots ||
      zs_nvme_staging_slot_bytes(st) < zs_nvme_stream_slot_bytes(d))
    return zs_err(
        ZS_ERR_INVALID_ARG,
        "zs_nvme_stream_open: staging has %u slots of %zu bytes; the pass needs %u of %zu",
        zs_nvme_staging_slots(st), zs_nvme_staging_slot_bytes(st), nslots,
        zs_nvme_stream_slot_bytes(d));
  if (zs_nvme_ring_capacity(ring) < zs_nvme_stream_ring_entries(d))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_nvme_stream_open: the ring holds %u I/Os, the pass %u",
                  zs_nvme_ring_capacity(ring), zs_nvme_stream_ring_entries(d));
  if (zs_nvme_ring_inflight(ring) != 0)
    return zs_err(ZS_ERR_STATE, "zs_nvme_stream_open: the ring has %u I/Os in flight",
                  zs_nvme_ring_inflight(ring));
  zs_nvme_stream *s = calloc(1, sizeof *s);
  if (s) {
    s->pending = calloc(nslots, sizeof *s->pending);
    s->slot_chunk = calloc(nslots, sizeof *s->slot_chunk);
  }
  if (!s || !s->pending || !s->slot_chunk) {
    if (s) free(s->pending), free(s->slot_chunk);
    free(s);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no memory for a stream");
  }
  s->d = *d;
  s->ring = ring;
  s->st = st;
  s->align = align;
  s->nslots = nslots;
  s->nchunks = (d->n + d->chunk - 1) / d->chunk;
  for (unsigned i = 1; i < d->narrays; i++)
    s->span_off[i] = s->span_off[i - 1] + d->chunk * d->elem_bytes[i - 1];
  *out = s;
  return ZS_OK;
}

zs_status zs_nvme_stream_next(zs_nvme_stream *s, zs_nvme_chunk *out) {
  if (s->failed != ZS_OK) return zs_stream_refail(s);
  if (s->out)
    return zs_err(ZS_ERR_STATE, "zs_nvme_stream_next: chunk %zu is out: commit it first",
                  s->next_chunk - 1);
  memset(out, 0, sizeof *out);
  const size_t k = s->next_chunk;
  if (k == s->nchunks) return ZS_OK;
  const unsigned slot = (unsigned)(k % s->nslots);
  zs_status rc = ZS_OK;
  if (s->d.mode & ZS_NVME_READ) rc = zs_stream_read_ahead(s, k + s->d.ahead);
  if (rc == ZS_OK) rc = zs_stream_wait_slot(s, slot); /* its reads, or its last write-back */
  if (rc != ZS_OK) return rc;
  s->slot_chunk[slot] = k;
  char *base = zs_nvme_staging_slot(s->st, slot);
  out->index = k;
  out->first = k * s->d.chunk;
  out->count = zs_chunk_count(s, k);
  for (unsigned i = 0; i < s->d.narrays; i++)
    out->span[i] = base + s->span_off[i];
  s->out = 1;
  s->next_chunk++;
  return ZS_OK;
}

zs_status zs_nvme_stream_commit(zs_nvme_stream *s) {
  if (s->failed != ZS_OK) return zs_stream_refail(s);
  if (!s->out) return zs_err(ZS_ERR_STATE, "zs_nvme_stream_commit: no chunk is out");
  s->out = 0;
  if (!(s->d.mode & ZS_NVME_WRITE)) return ZS_OK;
  zs_status rc = zs_stream_queue_chunk(s, s->next_chunk - 1, 1);
  if (rc == ZS_OK) rc = zs_nvme_ring_submit(s->ring);
  return rc == ZS_OK ? ZS_OK : zs_stream_fail(s, rc);
}

zs_status zs_nvme_stream_finish(zs_nvme_stream *s) {
  if (s->failed != ZS_OK) return zs_stream_refail(s);
  if (s->out || s->next_chunk < s->nchunks)
    return zs_err(ZS_ERR_STATE, "zs_nvme_stream_finish: %zu of %zu chunks committed",
                  s->next_chunk - (size_t)s->out, s->nchunks);
  while (zs_nvme_ring_inflight(s->ring) > 0) {
    const zs_status rc = zs_stream_reap_one(s);
    if (rc != ZS_OK) return rc;
  }
  for (unsigned i = 0; i < s->d.narrays; i++) {
    const zs_status rc = zs_nvme_file_check(s->d.files[i]);
    if (rc != ZS_OK) return zs_stream_fail(s, rc);
  }
  return ZS_OK;
}

void zs_nvme_stream_bytes(const zs_nvme_stream *s, uint64_t *read, uint64_t *written) {
  if (read) *read = s->bytes_read;
  if (written) *written = s->bytes_written;
}

void zs_nvme_stream_close(zs_nvme_stream *s) {
  if (!s) return;
  zs_nvme_ring_drain(s->ring);
  free(s->pending);
  free(s->slot_chunk);
  free(s);
}
