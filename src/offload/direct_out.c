/* The O_DIRECT sequential writer (direct_out.h). Invariant: whenever the current bounce buffer is
 * empty, pos (the file offset of the next byte) is aligned: bounce buffers go out only when full
 * (DO_CHUNK bytes, a multiple of align) or at flush, and direct spans are aligned lengths. */
#include "offload/direct_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "offload/nvme_ring.h"

enum {
  DO_NBUF = 4,               /* bounce buffers */
  DO_CHUNK = 4 << 20,        /* bytes per write: a bounce buffer, or a direct span at most */
  DO_DEPTH = 8,              /* writes in flight at most */
  DO_TAG_SPAN = DO_NBUF + 1, /* the tag of a write from the caller's memory */
};

struct zs_direct_out {
  zs_nvme_ring *ring;
  zs_nvme_file file; /* fd and path for the ring; bytes unused */
  size_t align;
  uint64_t pos; /* file offset of the next byte put */
  unsigned char *buf[DO_NBUF];
  int busy[DO_NBUF]; /* its write is in flight */
  int cur;           /* the buffer being filled */
  size_t fill;       /* bytes in it */
  uint64_t cur_off;  /* its file offset */
  unsigned spans;    /* direct spans in flight */
  zs_status failed;  /* the first failure (sticky), its message in why */
  int flushed;       /* zs_direct_out_flush ran: pos may be unaligned, nothing more goes out */
  char why[768];
};

/* Records the first failure and waits out every write in flight (results ignored), so that no
   buffer, the caller's included, stays in the kernel's hands. */
static zs_status fail(zs_direct_out *d, zs_status rc) {
  if (d->failed == ZS_OK) {
    d->failed = rc;
    snprintf(d->why, sizeof d->why, "%s", zs_last_error());
  }
  zs_nvme_ring_drain(d->ring);
  memset(d->busy, 0, sizeof d->busy);
  d->spans = 0;
  return zs_err(d->failed, "%s", d->why);
}

/* Retires one completion. */
static zs_status reap_one(zs_direct_out *d) {
  uint64_t tag = ZS_NVME_NO_TAG;
  const zs_status rc = zs_nvme_ring_reap(d->ring, &tag);
  if (tag < DO_NBUF) d->busy[tag] = 0;
  if (tag == DO_TAG_SPAN) d->spans--;
  return rc == ZS_OK ? ZS_OK : fail(d, rc);
}

/* Queues and submits one write of len bytes from p at off, first making room in the ring. */
static zs_status write_at(zs_direct_out *d, void *p, size_t len, uint64_t off, uint64_t tag) {
  while (zs_nvme_ring_inflight(d->ring) >= DO_DEPTH)
    ZS_CHECK(reap_one(d));
  zs_status rc = zs_nvme_ring_queue(d->ring, 1, &d->file, p, len, off, tag);
  if (rc == ZS_OK) rc = zs_nvme_ring_submit(d->ring);
  if (rc != ZS_OK) return fail(d, rc);
  if (tag < DO_NBUF) d->busy[tag] = 1;
  if (tag == DO_TAG_SPAN) d->spans++;
  return ZS_OK;
}

/* Sends the current buffer's fill (padded to align) and moves to the next free buffer. */
static zs_status send_buffer(zs_direct_out *d) {
  const size_t len = (d->fill + d->align - 1) / d->align * d->align;
  memset(d->buf[d->cur] + d->fill, 0, len - d->fill);
  ZS_CHECK(write_at(d, d->buf[d->cur], len, d->cur_off, (uint64_t)d->cur));
  d->cur = (d->cur + 1) % DO_NBUF;
  d->fill = 0;
  while (d->busy[d->cur])
    ZS_CHECK(reap_one(d));
  return ZS_OK;
}

zs_status zs_direct_out_create(int fd, const char *path, uint64_t base, size_t align,
                               zs_direct_out **out) {
  if (!out || align < 512 || align > 65536 || (align & (align - 1)) || base % align)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_direct_out_create: alignment %zu (a power of two in 512..65536) does not "
                  "divide offset %llu",
                  align, (unsigned long long)base);
  zs_direct_out *d = calloc(1, sizeof *d);
  if (!d) return zs_err(ZS_ERR_OUT_OF_MEMORY, "no memory for a direct writer");
  zs_status rc = zs_nvme_ring_create(2 * DO_DEPTH, &d->ring);
  for (int i = 0; i < DO_NBUF && rc == ZS_OK; i++)
    if (posix_memalign((void **)&d->buf[i], align, DO_CHUNK) != 0) {
      d->buf[i] = NULL;
      rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "no memory for %d bytes of direct-write buffers",
                  DO_NBUF * DO_CHUNK);
    }
  if (rc != ZS_OK) {
    zs_direct_out_destroy(d);
    return rc;
  }
  zs_nvme_ring_set_names(d->ring, "direct write", "");
  d->file.fd = fd;
  snprintf(d->file.path, sizeof d->file.path, "%s", path);
  d->align = align;
  d->pos = d->cur_off = base;
  *out = d;
  return ZS_OK;
}

zs_status zs_direct_out_put(zs_direct_out *d, const void *p, size_t n) {
  if (d->failed != ZS_OK) return zs_err(d->failed, "%s", d->why);
  if (d->flushed)
    return zs_err(ZS_ERR_STATE, "%s: a put after the flush (the file's end is written)",
                  d->file.path);
  const unsigned char *c = p;
  while (n > 0) {
    if (d->fill == 0 && (uintptr_t)c % d->align == 0 && n >= d->align) {
      /* pos is aligned (the invariant): straight from the caller's memory */
      size_t len = n / d->align * d->align;
      if (len > DO_CHUNK) len = DO_CHUNK;
      ZS_CHECK(write_at(d, (void *)c, len, d->pos, DO_TAG_SPAN));
      d->pos += len;
      d->cur_off = d->pos;
      c += len;
      n -= len;
      continue;
    }
    size_t take = DO_CHUNK - d->fill;
    if (take > n) take = n;
    if (d->fill == 0) d->cur_off = d->pos;
    memcpy(d->buf[d->cur] + d->fill, c, take);
    d->fill += take;
    d->pos += take;
    c += take;
    n -= take;
    if (d->fill == DO_CHUNK) ZS_CHECK(send_buffer(d));
  }
  return ZS_OK;
}

zs_status zs_direct_out_release(zs_direct_out *d) {
  while (d->spans > 0)
    ZS_CHECK(reap_one(d));
  return d->failed == ZS_OK ? ZS_OK : zs_err(d->failed, "%s", d->why);
}

zs_status zs_direct_out_flush(zs_direct_out *d) {
  if (d->failed != ZS_OK) return zs_err(d->failed, "%s", d->why);
  d->flushed = 1;
  if (d->fill > 0) ZS_CHECK(send_buffer(d));
  while (zs_nvme_ring_inflight(d->ring) > 0)
    ZS_CHECK(reap_one(d));
  return ZS_OK;
}

void zs_direct_out_destroy(zs_direct_out *d) {
  if (!d) return;
  zs_nvme_ring_destroy(d->ring); /* drains: no buffer stays in the kernel's hands */
  for (int i = 0; i < DO_NBUF; i++)
    free(d->buf[i]);
  free(d);
}
