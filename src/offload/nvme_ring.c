/* The NVMe tier's io_uring engine (nvme_ring.h). Each I/O in flight has a request record (its
 * file, offset, length, direction) so that a failed completion can name what failed. */
#include "offload/nvme_ring.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "offload/nvme_hooks.h"

/* One I/O in flight; the io_uring user_data is its index in reqs. A short completion advances
   buf, off and done and shrinks len (the rest is resubmitted); off0 and len0 keep the I/O as
   queued, for messages. */
typedef struct {
  const zs_nvme_file *file;
  char *buf;
  uint64_t off, off0, tag;
  size_t len, len0, done;
  int write;
  int inject; /* the test hook's errno (0: none) */
} zs_nvme_req;

struct zs_nvme_ring {
  struct io_uring ring;
  unsigned capacity, inflight, queued; /* queued: in flight but not yet handed to the kernel */
  int broken;    /* a submit or wait failed: queued entries may be stale, the ring takes no more */
  char why[512]; /* when broken: the first failure's message, reported by every later call */
  zs_nvme_req *reqs;
  unsigned *free_ids;       /* stack of free request indices: free_ids[0 .. capacity - inflight) */
  double wait_seconds;      /* zs_nvme_ring_wait_seconds */
  const char *who, *advice; /* zs_nvme_ring_set_names */
};

void zs_nvme_ring_set_names(zs_nvme_ring *r, const char *who, const char *advice) {
  r->who = who;
  r->advice = advice;
}

double zs_nvme_ring_wait_seconds(const zs_nvme_ring *r) {
  return r ? r->wait_seconds : 0.0;
}

zs_status zs_nvme_ring_create(unsigned capacity, zs_nvme_ring **out) {
  if (!out || capacity < 1 || capacity > 4096)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_nvme_ring_create: NULL out or capacity %u not in 1..4096",
                  capacity);
  zs_nvme_ring *r = calloc(1, sizeof *r);
  if (r) {
    r->reqs = calloc(capacity, sizeof *r->reqs);
    r->free_ids = calloc(capacity, sizeof *r->free_ids);
  }
  if (!r || !r->reqs || !r->free_ids) {
    if (r) free(r->reqs), free(r->free_ids);
    free(r);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no memory for a ring of %u I/Os", capacity);
  }
  const int rc = io_uring_queue_init(capacity, &r->ring, 0);
  if (rc < 0) {
    free(r->reqs);
    free(r->free_ids);
    free(r);
    return zs_err(rc == -ENOMEM ? ZS_ERR_OUT_OF_MEMORY : ZS_ERR_UNSUPPORTED,
                  "NVMe tier: io_uring_queue_init(%u) failed: %s (io_uring disabled by "
                  "kernel.io_uring_disabled or a seccomp filter? RLIMIT_MEMLOCK too small?)",
                  capacity, strerror(-rc));
  }
  r->capacity = capacity;
  zs_nvme_ring_set_names(r, "NVMe tier", ", restart from the last checkpoint");
  for (unsigned i = 0; i < capacity; i++)
    r->free_ids[i] = capacity - 1 - i;
  *out = r;
  return ZS_OK;
}

unsigned zs_nvme_ring_capacity(const zs_nvme_ring *r) {
  return r->capacity;
}

unsigned zs_nvme_ring_inflight(const zs_nvme_ring *r) {
  return r->inflight;
}

zs_status zs_nvme_ring_queue(zs_nvme_ring *r, int write, const zs_nvme_file *f, void *buf,
                             size_t len, uint64_t off, uint64_t tag) {
  if (r->broken) return zs_err(ZS_ERR_IO, "%s", r->why);
  if (r->inflight == r->capacity)
    return zs_err(ZS_ERR_STATE, "NVMe tier: %u I/Os already in flight (the ring's capacity)",
                  r->capacity);
  /* The submission queue has at least capacity entries and fewer than capacity I/Os are in
     flight, so an entry is free. */
  struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
  if (!sqe) return zs_err(ZS_ERR_STATE, "NVMe tier: the io_uring submission queue is full");
  const unsigned id = r->free_ids[r->capacity - 1 - r->inflight];
  zs_nvme_req *q = &r->reqs[id];
  *q = (zs_nvme_req){.file = f,
                     .buf = buf,
                     .off = off,
                     .off0 = off,
                     .tag = tag,
                     .len = len,
                     .len0 = len,
                     .write = write,
                     .inject = zs_nvme_hook_io()};
  size_t sub = len; /* the test hook may hand the kernel only the first half: a short completion */
  if (zs_nvme_hook_io_short() && len > 4096) sub = len / 2 >= 4096 ? len / 2 / 4096 * 4096 : 4096;
  if (write)
    io_uring_prep_write(sqe, f->fd, buf, (unsigned)sub, off);
  else
    io_uring_prep_read(sqe, f->fd, buf, (unsigned)sub, off);
  io_uring_sqe_set_data64(sqe, id);
  r->inflight++;
  r->queued++;
  return ZS_OK;
}

/* Marks the ring broken with the thread's current error as its sticky reason; returns ZS_ERR_IO. */
static zs_status zs_ring_break(zs_nvme_ring *r) {
  if (!r->broken)
    snprintf(r->why, sizeof r->why, "%s (the io_uring takes no more I/O)", zs_last_error());
  r->broken = 1;
  return zs_err(ZS_ERR_IO, "%s", r->why);
}

zs_status zs_nvme_ring_submit(zs_nvme_ring *r) {
  if (r->broken) return zs_err(ZS_ERR_IO, "%s", r->why);
  while (r->queued > 0) {
    const int inj = zs_nvme_hook_submit();
    const int n = inj ? -inj : io_uring_submit(&r->ring);
    if (n == -EINTR) continue;
    if (n <= 0) {
      /* The entries stay in the submission queue: never submit them later (their buffers may be
         gone by then). */
      zs_err(ZS_ERR_IO, "%s: io_uring_submit failed: %s", r->who,
             n < 0 ? strerror(-n) : "no entry taken");
      return zs_ring_break(r);
    }
    r->queued = (unsigned)n >= r->queued ? 0 : r->queued - (unsigned)n;
  }
  return ZS_OK;
}

/* The status of a completed request: its last result res checked against the length left. An
   error names the I/O as queued (offset, length) and how far it got. */
static zs_status zs_req_status(const zs_nvme_ring *r, const zs_nvme_req *q, int res) {
  const char *what = q->write ? "write" : "read";
  if (res < 0) {
    char after[64] = "";
    if (q->done) snprintf(after, sizeof after, " (after %zu bytes)", q->done);
    return zs_err(ZS_ERR_IO, "%s: %s of %zu bytes at offset %llu of %s failed%s: %s%s", r->who,
                  what, q->len0, (unsigned long long)q->off0, q->file->path, after, strerror(-res),
                  res == -ENOSPC || res == -EFBIG || res == -EDQUOT
                      ? " (the disk is full or the file size limit was reached)"
                      : "");
  }
  if ((size_t)res != q->len)
    return zs_err(
        ZS_ERR_IO,
        "%s: short %s at offset %llu of %s: %zu of %zu bytes, then %s at offset "
        "%llu (the file was truncated or the disk is full); its data is lost%s",
        r->who, what, (unsigned long long)q->off0, q->file->path, q->done + (size_t)res, q->len0,
        res == 0 ? "an unexpected end of file" : "a short completion that could not be resubmitted",
        (unsigned long long)(q->off + (size_t)res), r->advice);
  return ZS_OK;
}

/* Hands the rest of request id, which completed `got` bytes (0 < got < its length left), back to
   the kernel: the same file and buffer, both advanced by got (io_uring may complete short on
   regular files). The request stays in flight. ZS_OK also when the submit itself fails: the rest
   stays queued on a broken ring, as any I/O queued before a failed submit. ZS_ERR_STATE when no
   submission entry is free (cannot happen: this request's own entry was consumed). */
static zs_status zs_req_resubmit(zs_nvme_ring *r, unsigned id, size_t got) {
  zs_nvme_req *q = &r->reqs[id];
  struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
  if (!sqe) return zs_err(ZS_ERR_STATE, "NVMe tier: no io_uring entry to resubmit a short I/O");
  q->buf += got;
  q->off += got;
  q->done += got;
  q->len -= got;
  if (q->write)
    io_uring_prep_write(sqe, q->file->fd, q->buf, (unsigned)q->len, q->off);
  else
    io_uring_prep_read(sqe, q->file->fd, q->buf, (unsigned)q->len, q->off);
  io_uring_sqe_set_data64(sqe, id);
  r->queued++;
  (void)zs_nvme_ring_submit(r); /* a failure breaks the ring: reported by the caller */
  return ZS_OK;
}

/* Retires request id (its index goes back on the free stack). */
static void zs_req_retire(zs_nvme_ring *r, unsigned id) {
  r->inflight--;
  r->free_ids[r->capacity - 1 - r->inflight] = id;
}

zs_status zs_nvme_ring_reap(zs_nvme_ring *r, uint64_t *tag) {
  *tag = ZS_NVME_NO_TAG;
  if (r->inflight == 0) return zs_err(ZS_ERR_STATE, "NVMe tier: no I/O in flight to reap");
  const zs_status sub = zs_nvme_ring_submit(r); /* an I/O never handed over would never complete */
  if (sub != ZS_OK && r->inflight == r->queued) return sub; /* nothing the kernel will complete */
  for (;;) {
    struct io_uring_cqe *cqe = NULL;
    int rc;
    const double t0 = zs_clock_now_s();
    do
      rc = io_uring_wait_cqe(&r->ring, &cqe);
    while (rc == -EINTR || rc == -EAGAIN);
    r->wait_seconds += zs_clock_now_s() - t0;
    if (rc < 0) {
      zs_err(ZS_ERR_IO, "%s: io_uring_wait_cqe failed: %s", r->who, strerror(-rc));
      return zs_ring_break(r);
    }
    const unsigned id = (unsigned)io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&r->ring, cqe);
    zs_nvme_req *q = &r->reqs[id];
    if (!q->inject && !r->broken && res > 0 && (size_t)res < q->len &&
        zs_req_resubmit(r, id, (size_t)res) == ZS_OK) {
      /* The rest is in flight; wait again, unless the ring broke with nothing left to complete. */
      if (r->broken && r->inflight == r->queued) return zs_err(ZS_ERR_IO, "%s", r->why);
      continue;
    }
    *tag = q->tag;
    const zs_status st = zs_req_status(r, q, q->inject ? -q->inject : res);
    zs_req_retire(r, id);
    /* The ring broke first (a failed submit): that failure is the one to report, not this I/O's. */
    return r->broken ? zs_err(ZS_ERR_IO, "%s", r->why) : st;
  }
}

void zs_nvme_ring_drain(zs_nvme_ring *r) {
  uint64_t tag;
  /* Stops when only never-submitted entries are left (a broken ring): the kernel never saw
     their buffers, and a broken ring submits nothing more. */
  while (r->inflight > 0 && !(r->broken && r->inflight == r->queued)) {
    const unsigned before = r->inflight;
    (void)zs_nvme_ring_reap(r, &tag);
    if (r->inflight == before) break; /* the wait itself failed */
  }
}

void zs_nvme_ring_destroy(zs_nvme_ring *r) {
  if (!r) return;
  zs_nvme_ring_drain(r);
  io_uring_queue_exit(&r->ring);
  free(r->reqs);
  free(r->free_ids);
  free(r);
}
