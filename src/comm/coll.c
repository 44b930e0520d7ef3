/* Collective dispatch: the backend choice, and the argument checks and broken state every
 * collective goes through before it reaches its backend's vtable. The helpers the backends share
 * are below them (coll_common.c, sig.c, backoff.c); this file is above them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "comm/coll_backends.h"
#include "comm/flight.h"

/* Backend requested by ZS_COMM: 0 none, 1 mpi, 2 nccl, 3 self, -1 garbage. */
static int env_backend(void) {
  const char *s = zs_env("ZS_COMM");
  if (!s || !*s) return 0;
  if (!strcmp(s, "mpi")) return 1;
  if (!strcmp(s, "nccl")) return 2;
  if (!strcmp(s, "self")) return 3;
  return -1;
}

/* Picks and opens the backend for device (see comm.h). */
zs_status zs_coll_open(zs_comm *c, zs_device device, double timeout_s, zs_coll **out) {
  if (out) *out = NULL;
  if (!c || !out) return zs_err(ZS_ERR_INVALID_ARG, "zs_coll_open: comm and out must not be NULL");
  if (device != ZS_DEVICE_CPU && device != ZS_DEVICE_CUDA)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_coll_open: device %d is not a device: use "
                  "ZS_DEVICE_CPU or ZS_DEVICE_CUDA",
                  (int)device);
  int want = env_backend();
  if (want < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "ZS_COMM=\"%s\" is not a backend: use mpi, nccl or self "
                  "(or unset it)",
                  zs_env("ZS_COMM"));
  if (want == 3) {
    if (c->size != 1)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "ZS_COMM=self only works with one rank, this job has "
                    "%d: unset ZS_COMM or use mpi/nccl",
                    c->size);
    if (device != ZS_DEVICE_CPU)
      return zs_err(ZS_ERR_UNSUPPORTED, "ZS_COMM=self moves host memory only: use nccl (or "
                                        "mpi) for the CUDA device");
    return zs_self_open(c, device, timeout_s, out);
  }
  if (want == 1 && c->from_env)
    return zs_err(ZS_ERR_UNSUPPORTED, "ZS_COMM=mpi needs an MPI launch: use mpirun with "
                                      "zs_comm_init_mpi, or unset ZS_COMM");
  if (device == ZS_DEVICE_CPU) {
    if (want == 2)
      return zs_err(ZS_ERR_UNSUPPORTED, "ZS_COMM=nccl moves GPU memory only: use ZS_COMM=mpi "
                                        "(or unset it) for the CPU device");
    if (c->from_env) {
      if (c->size == 1) return zs_self_open(c, device, timeout_s, out);
      return zs_err(ZS_ERR_UNSUPPORTED, "the CPU device needs MPI for more than one rank: launch "
                                        "with mpirun and use zs_comm_init_mpi");
    }
    return zs_mpi_open(c, device, timeout_s, out);
  }
#ifdef ZS_HAVE_CUDA
  if (want == 1) return zs_mpi_staged_open(c, timeout_s, out);
  return zs_nccl_open(c, timeout_s, out);
#else
  return zs_err(ZS_ERR_UNSUPPORTED, "zshard was built without CUDA, so the CUDA device has no "
                                    "collectives: rebuild with -DZS_CUDA=ON or use ZS_DEVICE_CPU");
#endif
}

/* Sub-groups by color/key (every rank of c must call). */
zs_status zs_coll_split(zs_coll *c, int color, int key, zs_coll **out) {
  if (out) *out = NULL;
  if (!c || !out) return zs_err(ZS_ERR_INVALID_ARG, "zs_coll_split: coll and out must not be NULL");
  if (color < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_coll_split: color %d is negative: every rank must join "
                  "a group, use a color >= 0",
                  color);
  if (c->broken)
    return zs_err(ZS_ERR_COMM,
                  "zs_coll_split on a broken %s group (a previous operation failed: "
                  "%s): destroy it and end the job",
                  c->backend, c->broken_why);
  zs_status rc = zs_sig_check(c, ZS_SIG_SPLIT, 0, ZS_CDT_BYTE, -1, NULL);
  if (rc != ZS_OK) {
    zs_coll_mark_broken(c);
    return zs_err_wrap(rc, "zs_coll_split(color %d, key %d)", color, key);
  }
  rc = c->ops->split(c, color, key, out);
  if (rc != ZS_OK) return zs_err_wrap(rc, "zs_coll_split(color %d, key %d)", color, key);
  return ZS_OK;
}

/* Drains/aborts backend state, then frees the coll. NULL is a no-op. */
void zs_coll_destroy(zs_coll *c) {
  if (!c) return;
  c->ops->destroy(c);
  zs_coll_free(c);
}

void zs_coll_abort(zs_coll *c) {
  if (!c) return;
  if (!c->broken) { /* broken, but still in step: its owner's goodbye can tell the peers */
    c->broken = 1;
    snprintf(c->broken_why, sizeof c->broken_why, "%s", zs_last_error());
  }
  if (c->ops->cancel) c->ops->cancel(c);
}

int zs_coll_rank(const zs_coll *c) {
  return c ? c->rank : -1;
}
int zs_coll_size(const zs_coll *c) {
  return c ? c->size : -1;
}
const char *zs_coll_backend(const zs_coll *c) {
  return c ? c->backend : "none";
}

/* Changes the bound of later waits (<= 0: unbounded). */
void zs_coll_set_timeout(zs_coll *c, double timeout_s) {
  if (c) c->timeout_s = timeout_s;
}

/* Checks common to every collective; fills *es with the element size. */
static zs_status check_common(const zs_coll *c, const char *op, zs_cdt dt, int reduce, size_t *es) {
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "%s: the group is NULL: open it with zs_coll_open", op);
  *es = zs_cdt_size(dt);
  if (*es == 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "%s: dtype %d is not a zs_cdt: use ZS_CDT_F32, ZS_CDT_BF16, "
                  "ZS_CDT_U64 or ZS_CDT_BYTE",
                  op, (int)dt);
  if (reduce && dt == ZS_CDT_BYTE)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "%s: a sum of ZS_CDT_BYTE is not defined: reduce f32, bf16 "
                  "or u64",
                  op);
  if (c->broken)
    return zs_err(ZS_ERR_COMM,
                  "%s on a broken %s group (a previous operation failed: %s): the "
                  "group cannot be used again, destroy it and end the job",
                  op, c->backend, c->broken_why);
  return ZS_OK;
}

/* 1 if [a, a+na) and [b, b+nb) share a byte. */
static int overlaps(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return na && nb && x < y + nb && y < x + na;
}

/* count * n * es without overflow, or an error naming op. */
static zs_status span(const char *op, size_t count, size_t n, size_t es, size_t *out) {
  if (count > SIZE_MAX / n / es)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: count %zu overflows the address space", op, count);
  *out = count * n * es;
  return ZS_OK;
}

/* Marks the coll broken after a timeout, transport or device error: peers may be inside the op
   this rank left, and nccl has aborted its communicator (the backends' messages already name the
   op and its shape). */
static zs_status finish(zs_coll *c, zs_status rc) {
  if (rc == ZS_OK) return rc;
  if (rc == ZS_ERR_TIMEOUT || rc == ZS_ERR_COMM || rc == ZS_ERR_DEVICE) zs_coll_mark_broken(c);
  return rc;
}

/* finish, with the wall time since t0 added to the coll's operation seconds. */
static zs_status timed(zs_coll *c, double t0, zs_status rc) {
  c->op_seconds += zs_clock_now_s() - t0;
  return finish(c, rc);
}

/* The flight recorder's entry for the collective being called on c (NULL when c has none);
   bytes: its whole buffer (an all-gather's output, a reduce-scatter's input), counted into the
   coll's bus bytes. */
static zs_flight_entry *fl_call(zs_coll *c, zs_sig_op op, size_t count, size_t bytes) {
  if (c->size > 1) {
    const uint64_t n = (uint64_t)c->size, ring = (uint64_t)bytes / n * (n - 1);
    c->bus_bytes += op == ZS_SIG_ALL_REDUCE ? 2 * ring : op == ZS_SIG_BROADCAST ? bytes : ring;
  }
  zs_flight *f = c->flight;
  if (!f) return NULL;
  zs_flight_entry *x = &f->ring[f->n++ % f->cap];
  memset(x, 0, sizeof *x);
  /* The number the divergence header gives it (its messages say "collective #N"), where there
     is one; a one-rank group counts its own. */
  x->seq = c->sig_hash_on ? c->sig_seq : c->flight_seq++;
  x->op = (int)op;
  x->group = c->flight_group;
  x->state = ZS_FLIGHT_CHECKING;
  x->count = count;
  x->bytes = bytes;
  if (c->sig_src && c->sig_src->context) c->sig_src->context(c->sig_src->owner, x->ctx);
  x->called_us = zs_clock_wall_us();
  return x;
}

/* Ends entry x with rc: done or failed, or enqueued when an OK op was only put on a stream. */
static void fl_end(zs_flight_entry *x, zs_status rc, int enqueued) {
  if (!x) return;
  if (rc == ZS_OK && enqueued) {
    x->state = ZS_FLIGHT_ENQUEUED;
    return;
  }
  x->state = rc == ZS_OK ? ZS_FLIGHT_DONE : ZS_FLIGHT_FAILED;
  x->status = (int)rc;
  x->ended_us = zs_clock_wall_us();
}

/* Ends c's entries that only were put on a stream (nccl) with rc: a sync waited for them, or
   the group failed. */
static void fl_end_enqueued(zs_coll *c, zs_status rc) {
  zs_flight *f = c->flight;
  if (f && strcmp(c->backend, "nccl") != 0) f = NULL;   /* host backends enqueue nothing */
  for (size_t i = 0; f && i < zs_flight_held(f); i++) { /* what the sync waited for has ended */
    zs_flight_entry *x = (zs_flight_entry *)zs_flight_at(f, i);
    if (x->group == c->flight_group && x->state == ZS_FLIGHT_ENQUEUED) fl_end(x, rc, 0);
  }
}

/* The divergence check before op's data moves (a failure breaks the group like any other; on
   nccl it may be an earlier collective's verdict, which fails the ones still enqueued too), then
   entry x marked running. */
static zs_status sig(zs_coll *c, zs_flight_entry *x, zs_sig_op op, size_t count, zs_cdt dt,
                     int root, void *stream) {
  const zs_status rc = finish(c, zs_sig_check(c, op, count, dt, root, stream));
  if (rc != ZS_OK) {
    fl_end_enqueued(c, rc);
    fl_end(x, rc, 0);
    return rc;
  }
  if (x) {
    x->state = ZS_FLIGHT_RUNNING;
    x->started_us = zs_clock_wall_us();
  }
  if (c->timer && stream) c->timer(c->timer_ctx, stream, 0); /* op_end records the other end */
  return ZS_OK;
}

void zs_coll_set_timer(zs_coll *c, void (*fn)(void *ctx, void *stream, int end), void *ctx) {
  if (!c) return;
  c->timer = fn;
  c->timer_ctx = ctx;
}

/* timed, with entry x ended (a device op of the nccl backend returns once enqueued: its end is
   the zs_coll_sync that waits for it). */
static zs_status op_end(zs_coll *c, zs_flight_entry *x, double t0, zs_status rc, void *stream) {
  if (c->timer && stream) c->timer(c->timer_ctx, stream, 1);
  rc = timed(c, t0, rc);
  if (x) fl_end(x, rc, stream != NULL && !strcmp(c->backend, "nccl"));
  return rc;
}

zs_status zs_coll_check(zs_coll *c) {
  size_t es = 0;
  ZS_CHECK(check_common(c, "check", ZS_CDT_BYTE, 0, &es));
  zs_flight_entry *x = fl_call(c, ZS_SIG_CHECK, 0, 0);
  const zs_status rc = sig(c, x, ZS_SIG_CHECK, 0, ZS_CDT_BYTE, -1, NULL);
  if (rc == ZS_OK) fl_end(x, rc, 0);
  return rc;
}

/* Gathers equal blocks of count elements; in place iff send == recv + rank*count. */
zs_status zs_coll_all_gather(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                             void *stream) {
  const char *op = "all_gather";
  size_t es = 0, blk = 0, all = 0;
  ZS_CHECK(check_common(c, op, dt, 0, &es));
  if (count == 0) return ZS_OK;
  if (!send || !recv)
    return zs_err(ZS_ERR_INVALID_ARG, "all_gather: send and recv must not be NULL for count %zu",
                  count);
  ZS_CHECK(span(op, count, 1, es, &blk));
  ZS_CHECK(span(op, count, (size_t)c->size, es, &all));
  const char *mine = (const char *)recv + (size_t)c->rank * blk;
  if (send != mine && overlaps(send, blk, recv, all))
    return zs_err(ZS_ERR_INVALID_ARG, "all_gather: send overlaps recv without being its own block "
                                      "(recv + rank*count): pass disjoint buffers or exactly that "
                                      "block");
  zs_flight_entry *x = fl_call(c, ZS_SIG_ALL_GATHER, count, all);
  ZS_CHECK(sig(c, x, ZS_SIG_ALL_GATHER, count, dt, -1, stream));
  const double t0 = zs_clock_now_s();
  return op_end(c, x, t0, c->ops->all_gather(c, send, recv, count, dt, stream), stream);
}

/* Sums blocks; in place iff recv == send + rank*count (other blocks of send become unspecified). */
zs_status zs_coll_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                                 void *stream) {
  const char *op = "reduce_scatter";
  size_t es = 0, blk = 0, all = 0;
  ZS_CHECK(check_common(c, op, dt, 1, &es));
  if (count == 0) return ZS_OK;
  if (!send || !recv)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "reduce_scatter: send and recv must not be NULL for count %zu", count);
  ZS_CHECK(span(op, count, 1, es, &blk));
  ZS_CHECK(span(op, count, (size_t)c->size, es, &all));
  const char *mine = (const char *)send + (size_t)c->rank * blk;
  if ((const char *)recv != mine && overlaps(send, all, recv, blk))
    return zs_err(ZS_ERR_INVALID_ARG, "reduce_scatter: recv overlaps send without being this "
                                      "rank's block (send + rank*count): pass disjoint buffers "
                                      "or exactly that block");
  zs_flight_entry *x = fl_call(c, ZS_SIG_REDUCE_SCATTER, count, all);
  ZS_CHECK(sig(c, x, ZS_SIG_REDUCE_SCATTER, count, dt, -1, stream));
  const double t0 = zs_clock_now_s();
  return op_end(c, x, t0, c->ops->reduce_scatter(c, send, recv, count, dt, stream), stream);
}

/* Sums count elements across ranks; in place iff send == recv. */
zs_status zs_coll_all_reduce(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                             void *stream) {
  const char *op = "all_reduce";
  size_t es = 0, all = 0;
  ZS_CHECK(check_common(c, op, dt, 1, &es));
  if (count == 0) return ZS_OK;
  if (!send || !recv)
    return zs_err(ZS_ERR_INVALID_ARG, "all_reduce: send and recv must not be NULL for count %zu",
                  count);
  ZS_CHECK(span(op, count, 1, es, &all));
  if (send != recv && overlaps(send, all, recv, all))
    return zs_err(ZS_ERR_INVALID_ARG, "all_reduce: send and recv partly overlap: pass the same "
                                      "pointer (in place) or disjoint buffers");
  zs_flight_entry *x = fl_call(c, ZS_SIG_ALL_REDUCE, count, all);
  ZS_CHECK(sig(c, x, ZS_SIG_ALL_REDUCE, count, dt, -1, stream));
  const double t0 = zs_clock_now_s();
  return op_end(c, x, t0, c->ops->all_reduce(c, send, recv, count, dt, stream), stream);
}

/* Exchanges blocks (never in place). */
zs_status zs_coll_all_to_all(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                             void *stream) {
  const char *op = "all_to_all";
  size_t es = 0, all = 0;
  ZS_CHECK(check_common(c, op, dt, 0, &es));
  if (count == 0) return ZS_OK;
  if (!send || !recv)
    return zs_err(ZS_ERR_INVALID_ARG, "all_to_all: send and recv must not be NULL for count %zu",
                  count);
  ZS_CHECK(span(op, count, (size_t)c->size, es, &all));
  if (overlaps(send, all, recv, all))
    return zs_err(ZS_ERR_INVALID_ARG, "all_to_all cannot run in place: pass disjoint send and "
                                      "recv buffers");
  zs_flight_entry *x = fl_call(c, ZS_SIG_ALL_TO_ALL, count, all);
  ZS_CHECK(sig(c, x, ZS_SIG_ALL_TO_ALL, count, dt, -1, stream));
  const double t0 = zs_clock_now_s();
  return op_end(c, x, t0, c->ops->all_to_all(c, send, recv, count, dt, stream), stream);
}

/* Copies root's buffer to every rank. */
zs_status zs_coll_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root,
                            void *stream) {
  const char *op = "broadcast";
  size_t es = 0, all = 0;
  ZS_CHECK(check_common(c, op, dt, 0, &es));
  if (root < 0 || root >= c->size)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "broadcast: root %d is not a rank of this %d-rank group: "
                  "use 0..%d",
                  root, c->size, c->size - 1);
  if (count == 0) return ZS_OK;
  if (!buf)
    return zs_err(ZS_ERR_INVALID_ARG, "broadcast: buf must not be NULL for count %zu", count);
  ZS_CHECK(span(op, count, 1, es, &all));
  zs_flight_entry *x = fl_call(c, ZS_SIG_BROADCAST, count, all);
  ZS_CHECK(sig(c, x, ZS_SIG_BROADCAST, count, dt, root, stream));
  const double t0 = zs_clock_now_s();
  return op_end(c, x, t0, c->ops->broadcast(c, buf, count, dt, root, stream), stream);
}

/* Waits until every rank of c arrived. */
zs_status zs_coll_barrier(zs_coll *c) {
  size_t es = 0;
  ZS_CHECK(check_common(c, "barrier", ZS_CDT_BYTE, 0, &es));
  zs_flight_entry *x = fl_call(c, ZS_SIG_BARRIER, 0, 0);
  ZS_CHECK(sig(c, x, ZS_SIG_BARRIER, 0, ZS_CDT_BYTE, -1, NULL));
  const double t0 = zs_clock_now_s();
  return op_end(c, x, t0, c->ops->barrier(c), NULL);
}

/* Waits for the stream's enqueued collectives (nccl); no-op for host backends. */
zs_status zs_coll_sync(zs_coll *c, void *stream) {
  size_t es = 0;
  ZS_CHECK(check_common(c, "sync", ZS_CDT_BYTE, 0, &es));
  const double t0 = zs_clock_now_s();
  const zs_status rc = timed(c, t0, c->ops->sync(c, stream));
  fl_end_enqueued(c, rc);
  return rc;
}
