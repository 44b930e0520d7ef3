/* The mpi backend: nonblocking MPI collectives on host memory, polled against the timeout. Device
 * buffers are the "mpi-staged" wrapper backend's (mpi_staging_cuda.c, CUDA builds only), which
 * copies them through pinned host memory and calls this backend's vtable on the copies.
 *
 * A timed-out MPI collective cannot be cancelled or freed, so its request is kept in the coll and
 * the coll is broken; zs_coll_destroy then tries to finish it for a few seconds and leaks it if
 * the peer never comes back. The CALLER'S BUFFERS of such an abandoned op may still be written by
 * MPI: keep them alive until zs_coll_destroy has returned. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll_backends.h"
#include "comm/comm_impl.h"
#include "comm/mpi_impl.h"

/* The MPI datatype of dt (bf16: our 2-byte type). */
static MPI_Datatype mpi_type(const zs_mpi_coll *m, zs_cdt dt) {
  switch (dt) {
  case ZS_CDT_F32:
    return MPI_FLOAT;
  case ZS_CDT_BF16:
    return m->bf16;
  case ZS_CDT_U64:
    return MPI_UINT64_T;
  case ZS_CDT_BYTE:
    return MPI_BYTE;
  }
  return MPI_BYTE;
}

/* The sum op for dt. */
static MPI_Op mpi_sum(const zs_mpi_coll *m, zs_cdt dt) {
  return dt == ZS_CDT_BF16 ? m->bf16_sum : MPI_SUM;
}

/* MPI counts are int: larger blocks are refused with a way out. */
static zs_status check_int(const char *op, size_t count) {
  if (count > (size_t)INT_MAX)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "%s of %zu elements exceeds MPI's int count (%d): split it "
                  "into smaller buckets",
                  op, count, INT_MAX);
  return ZS_OK;
}

/* Waits for a started request; on timeout keeps it in the coll (it may still write buffers). */
static zs_status run(zs_coll *c, int start_rc, MPI_Request *req, const char *op, size_t count,
                     zs_cdt dt) {
  zs_mpi_coll *m = c->impl;
  char what[160];
  snprintf(what, sizeof what, "%s of %zu %s elements (rank %d of a %d-rank mpi group)", op, count,
           zs_cdt_name(dt), c->rank, c->size);
  if (start_rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING + 16];
    return zs_err(ZS_ERR_COMM,
                  "starting %s failed in MPI: %s: check that every rank calls the "
                  "same collective with the same count",
                  what, zs_mpi_errstr(start_rc, msg, sizeof msg));
  }
  zs_status rc = zs_mpi_wait(req, c->timeout_s, what);
  if (rc == ZS_ERR_TIMEOUT) zs_mpi_pending_add(&m->pending, *req, NULL);
  return rc;
}

/* In place when send is this rank's block of recv. */
zs_status zs_mpi_host_all_gather(zs_coll *c, const void *send, void *recv, size_t count,
                                 zs_cdt dt) {
  zs_mpi_coll *m = c->impl;
  ZS_CHECK(check_int("all_gather", count));
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Datatype t = mpi_type(m, dt);
  const char *mine = (const char *)recv + (size_t)c->rank * count * zs_cdt_size(dt);
  int r = send == mine ? MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)count, t,
                                        m->comm, &req)
                       : MPI_Iallgather(send, (int)count, t, recv, (int)count, t, m->comm, &req);
  return run(c, r, &req, "all_gather", count, dt);
}

/* In place (recv == send + rank*count): MPI_IN_PLACE leaves the result in block 0 of send, which
   is then moved to this rank's block (so block 0 of send is clobbered: comm.h says unspecified). */
zs_status zs_mpi_host_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count,
                                     zs_cdt dt) {
  zs_mpi_coll *m = c->impl;
  ZS_CHECK(check_int("reduce_scatter", count));
  size_t blk = count * zs_cdt_size(dt);
  int in_place = (const char *)recv == (const char *)send + (size_t)c->rank * blk;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Datatype t = mpi_type(m, dt);
  int r = in_place
              ? MPI_Ireduce_scatter_block(MPI_IN_PLACE, (void *)send, (int)count, t, mpi_sum(m, dt),
                                          m->comm, &req)
              : MPI_Ireduce_scatter_block(send, recv, (int)count, t, mpi_sum(m, dt), m->comm, &req);
  ZS_CHECK(run(c, r, &req, "reduce_scatter", count, dt));
  if (in_place && c->rank != 0) memcpy(recv, send, blk); /* blocks 0 and rank are disjoint */
  return ZS_OK;
}

/* In place when send == recv. */
zs_status zs_mpi_host_all_reduce(zs_coll *c, const void *send, void *recv, size_t count,
                                 zs_cdt dt) {
  zs_mpi_coll *m = c->impl;
  ZS_CHECK(check_int("all_reduce", count));
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, mpi_type(m, dt),
                         mpi_sum(m, dt), m->comm, &req);
  return run(c, r, &req, "all_reduce", count, dt);
}

/* Block j of send to rank j. */
zs_status zs_mpi_host_all_to_all(zs_coll *c, const void *send, void *recv, size_t count,
                                 zs_cdt dt) {
  zs_mpi_coll *m = c->impl;
  ZS_CHECK(check_int("all_to_all", count));
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Datatype t = mpi_type(m, dt);
  int r = MPI_Ialltoall(send, (int)count, t, recv, (int)count, t, m->comm, &req);
  return run(c, r, &req, "all_to_all", count, dt);
}

/* Root's buf to all. */
zs_status zs_mpi_host_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root) {
  zs_mpi_coll *m = c->impl;
  ZS_CHECK(check_int("broadcast", count));
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Ibcast(buf, (int)count, mpi_type(m, dt), root, m->comm, &req);
  return run(c, r, &req, "broadcast", count, dt);
}

/* vtable entries: host buffers straight to MPI (the stream is not used). */
static zs_status v_all_gather(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  return zs_mpi_host_all_gather(c, s, r, n, dt);
}

/* See v_all_gather. */
static zs_status v_reduce_scatter(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                                  void *stream) {
  return zs_mpi_host_reduce_scatter(c, s, r, n, dt);
}

/* See v_all_gather. */
static zs_status v_all_reduce(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  return zs_mpi_host_all_reduce(c, s, r, n, dt);
}

/* See v_all_gather. */
static zs_status v_all_to_all(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  return zs_mpi_host_all_to_all(c, s, r, n, dt);
}

/* See v_all_gather. */
static zs_status v_broadcast(zs_coll *c, void *buf, size_t n, zs_cdt dt, int root, void *stream) {
  return zs_mpi_host_broadcast(c, buf, n, dt, root);
}

/* MPI_Ibarrier, polled. */
static zs_status v_barrier(zs_coll *c) {
  zs_mpi_coll *m = c->impl;
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Ibarrier(m->comm, &req);
  return run(c, r, &req, "barrier", 0, ZS_CDT_BYTE);
}

/* The divergence check's header exchange (sig.c): an all-gather of n words per rank in place,
   started here and finished by v_exchange_wait (several groups' goodbyes are all started before
   any is waited for). On a timeout the request keeps `all` (freed once MPI completes it, or
   leaked). */
static zs_status v_exchange_post(zs_coll *c, uint64_t *all, size_t n, const char *what) {
  zs_mpi_coll *m = c->impl;
  char msg[MPI_MAX_ERROR_STRING + 16];
  m->sig_req = MPI_REQUEST_NULL;
  int r = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, (int)n, MPI_UINT64_T, m->comm,
                         &m->sig_req);
  if (r != MPI_SUCCESS)
    return zs_err(ZS_ERR_COMM, "starting %s failed in MPI: %s", what,
                  zs_mpi_errstr(r, msg, sizeof msg));
  return ZS_OK;
}

static zs_status v_exchange_wait(zs_coll *c, uint64_t *all, const char *what) {
  zs_mpi_coll *m = c->impl;
  zs_status rc = zs_mpi_wait(&m->sig_req, c->timeout_s, what);
  if (rc == ZS_ERR_TIMEOUT) zs_mpi_pending_add(&m->pending, m->sig_req, all);
  m->sig_req = MPI_REQUEST_NULL;
  return rc;
}

/* Every mpi op is complete when it returns. */
static zs_status v_sync(zs_coll *c, void *stream) {
  return ZS_OK;
}

static zs_status wrap(zs_comm *comm, MPI_Comm mc, zs_device device, double timeout_s,
                      zs_coll **out);

/* Guards MPI_Comm_split (blocking, no nonblocking twin) with a timed all-gather of the colors, so
   a silent peer gives a timeout instead of a hang. */
static zs_status v_split(zs_coll *c, int color, int key, zs_coll **out) {
  zs_mpi_coll *m = c->impl;
  char msg[MPI_MAX_ERROR_STRING + 16];
  int *ck = malloc(2 * sizeof(int) * (size_t)c->size);
  if (!ck) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the split's color table");
  ck[2 * c->rank] = color;
  ck[2 * c->rank + 1] = key;
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ck, 2, MPI_INT, m->comm, &req);
  zs_status rc = r == MPI_SUCCESS ? zs_mpi_wait(&req, c->timeout_s, "split (exchange of colors)")
                                  : zs_err(ZS_ERR_COMM, "starting the split failed in MPI: %s",
                                           zs_mpi_errstr(r, msg, sizeof msg));
  if (rc == ZS_ERR_TIMEOUT) {
    zs_mpi_pending_add(&m->pending, req, ck); /* MPI may still write ck */
    zs_coll_mark_broken(c);
    return rc;
  }
  free(ck);
  if (rc != ZS_OK) {
    zs_coll_mark_broken(c);
    return rc;
  }
  MPI_Comm nc = MPI_COMM_NULL;
  r = MPI_Comm_split(m->comm, color, key, &nc);
  if (r != MPI_SUCCESS)
    return zs_err(ZS_ERR_COMM, "MPI_Comm_split failed: %s", zs_mpi_errstr(r, msg, sizeof msg));
  return wrap(c->comm, nc, c->device, c->timeout_s, out);
}

/* Finishes abandoned requests (bounded), then frees the communicator. Stuck requests leave impl
   in place (leaked with the buffers MPI may still write): a wrapper backend reads that as "stuck".
 */
static void v_destroy(zs_coll *c) {
  zs_mpi_coll *m = c->impl;
  if (!m) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  int stuck = 0;
  if (!finalized && m->pending.n > 0) stuck = zs_mpi_pending_drain(&m->pending, zs_drain_seconds());
  if (stuck) return; /* MPI may still write the callers' buffers: leak them with the requests */
  if (!finalized && m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
  free(m);
  c->impl = NULL;
}

static const zs_coll_ops mpi_ops = {
    "mpi",       v_all_gather,    v_reduce_scatter, v_all_reduce, v_all_to_all,
    v_broadcast, v_barrier,       v_sync,           v_split,      v_destroy,
    NULL,        v_exchange_post, v_exchange_wait,  NULL};

/* Makes a coll owning mc (freed here on failure). */
static zs_status wrap(zs_comm *comm, MPI_Comm mc, zs_device device, double timeout_s,
                      zs_coll **out) {
  zs_comm_impl *ci = comm->impl;
  zs_coll *c = NULL;
  zs_mpi_coll *m = calloc(1, sizeof *m);
  int rank = 0, size = 0;
  zs_status rc = ZS_OK;
  if (!m) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory opening an mpi group");
    goto fail;
  }
  MPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN);
  MPI_Comm_rank(mc, &rank);
  MPI_Comm_size(mc, &size);
  m->comm = mc;
  m->bf16 = ci->bf16_type;
  m->bf16_sum = ci->bf16_sum;
  ZS_CHECK_GOTO(zs_coll_alloc(&mpi_ops, "mpi", comm, device, rank, size, timeout_s, &c), rc, fail);
  c->impl = m;
  *out = c;
  return ZS_OK;
fail:
  free(m);
  MPI_Comm_free(&mc);
  return rc;
}

/* World group over the comm's MPI communicator. */
zs_status zs_mpi_open(zs_comm *comm, zs_device device, double timeout_s, zs_coll **out) {
  zs_comm_impl *ci = comm->impl;
  char msg[MPI_MAX_ERROR_STRING + 16];
  if (!ci || ci->world == MPI_COMM_NULL)
    return zs_err(ZS_ERR_UNSUPPORTED, "the mpi backend needs a communicator from "
                                      "zs_comm_init_mpi: launch with mpirun");
  /* MPI_Comm_idup writes the handle when it completes: heap memory, so that a timed-out dup can
     be abandoned safely. */
  MPI_Comm *mc = malloc(sizeof *mc);
  if (!mc) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory opening an mpi group");
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Comm_idup(ci->world, mc, &req);
  if (r != MPI_SUCCESS) {
    free(mc);
    return zs_err(ZS_ERR_COMM, "MPI_Comm_idup failed opening an mpi group: %s",
                  zs_mpi_errstr(r, msg, sizeof msg));
  }
  zs_status rc = zs_mpi_wait(&req, timeout_s, "opening the mpi group (MPI_Comm_idup)");
  if (rc == ZS_ERR_TIMEOUT) {
    zs_mpi_pending_add(&ci->pending, req, mc);
    return rc;
  }
  MPI_Comm dup = *mc;
  free(mc);
  if (rc != ZS_OK) return rc;
  return wrap(comm, dup, device, timeout_s, out);
}
