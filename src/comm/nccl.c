/* The nccl backend: device buffers, one rank per GPU, collectives enqueued on the caller's stream.
 *
 * The communicator is non-blocking (ncclConfig_t.blocking = 0), so no NCCL call can hang the
 * host: every wait polls ncclCommGetAsyncError (and cudaStreamQuery for stream work) against the
 * timeout, and a stuck or dead peer becomes ZS_ERR_TIMEOUT / ZS_ERR_COMM naming the operation,
 * after which the communicator is aborted (ncclCommAbort) and the group is broken.
 *
 * NCCL refuses two ranks on one GPU ("Duplicate GPU detected"). A test can still run two ranks on
 * one GPU by giving each rank its own NCCL_HOSTID (NCCL then believes they are on different hosts
 * and talks over sockets); multi-rank runs on a one-GPU machine should otherwise use ZS_COMM=mpi.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "comm/coll_backends.h"
#include "comm/nccl_sig.h"

#define ID_MSG_BYTES (1 + NCCL_UNIQUE_ID_BYTES) /* status byte + ncclUniqueId */

typedef struct zs_nccl_coll_s {
  ncclComm_t comm;  /* NULL once aborted or destroyed */
  cudaStream_t own; /* internal stream for barrier */
  float *scratch;   /* one device float the barrier all-reduces, zeroed at creation; stream-ordered
                       on `own` (allocated, zeroed and freed there), because cudaFree would wait
                       for the whole device, a collective of a dead peer on another communicator
                       included */
  zs_nsig *sig;     /* the divergence check's ring (nccl_sig.h); NULL in a one-rank group */
  zs_coll *self;    /* the group this is the impl of */
  struct zs_nccl_coll_s *next; /* the next live nccl group of the same zs_comm */
} zs_nccl_coll;

/* NCCL datatype of dt. */
static ncclDataType_t nccl_type(zs_cdt dt) {
  switch (dt) {
  case ZS_CDT_F32:
    return ncclFloat32;
  case ZS_CDT_BF16:
    return ncclBfloat16;
  case ZS_CDT_U64:
    return ncclUint64;
  case ZS_CDT_BYTE:
    return ncclUint8;
  }
  return ncclUint8;
}

/* Aborts the communicator (it cannot be used after a failed wait). */
static void abort_comm(zs_nccl_coll *m) {
  if (m->comm) ncclCommAbort(m->comm);
  m->comm = NULL;
}

/* Error naming what, NCCL's code and its last message. */
static zs_status nccl_fail(ncclComm_t comm, ncclResult_t r, const char *what) {
  const char *last = ncclGetLastError(comm);
  return zs_err(ZS_ERR_COMM,
                "%s failed in NCCL: %s (%s): a peer died or the network failed; end "
                "the job and check the other ranks' output (NCCL_DEBUG=WARN tells "
                "more)",
                what, ncclGetErrorString(r), last && *last ? last : "-");
}

static int diverged(zs_coll *c, zs_status *rc);

/* Polls comm's async state until it leaves ncclInProgress, with timeout_s (<= 0: unbounded); c
   (NULL: none) is the group whose divergence checks are read meanwhile. */
static zs_status wait_comm(ncclComm_t comm, double timeout_s, const char *what, zs_coll *c) {
  double deadline = timeout_s > 0 ? zs_clock_now_s() + timeout_s : 0;
  zs_backoff bo;
  zs_backoff_init(&bo);
  for (;;) {
    ncclResult_t st = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &st);
    if (r != ncclSuccess) return nccl_fail(comm, r, what);
    if (st == ncclSuccess) return ZS_OK;
    if (st != ncclInProgress) return nccl_fail(comm, st, what);
    zs_status dr = ZS_OK;
    if (c && diverged(c, &dr)) return dr;
    if (deadline > 0 && zs_clock_now_s() > deadline)
      return zs_err(ZS_ERR_TIMEOUT,
                    "%s timed out after %.1f s in NCCL: a peer stopped answering; "
                    "the communicator was aborted: end the job, or raise "
                    "comm_timeout_s if the peer is only slow",
                    what, timeout_s);
    zs_backoff_wait(&bo);
  }
}

/* Whether a landed verdict of the divergence check differs, in c or in another live nccl group of
   its comm (their collectives may share c's streams): then *rc becomes its ZS_ERR_COMM, and such
   another group is aborted (its stuck collective released) and broken with that message. */
static int diverged(zs_coll *c, zs_status *rc) {
  const zs_comm_impl *ci = c->comm ? c->comm->impl : NULL;
  zs_nccl_coll *self = c->impl;
  for (zs_nccl_coll *g = ci ? ci->nccl_groups : self; g; g = ci ? g->next : NULL) {
    if (!g->sig || !g->comm || (g != self && g->self->broken) ||
        zs_nsig_poll(g->sig, g->self, 1) == ZS_OK)
      continue;
    if (g != self) {
      abort_comm(g);
      zs_coll_mark_broken(g->self);
    }
    *rc = ZS_ERR_COMM;
    return 1;
  }
  return 0;
}

/* After an enqueue: ncclInProgress means "still being issued" (non-blocking mode): wait for it. */
static zs_status issued(zs_coll *c, ncclResult_t r, const char *op, size_t count, zs_cdt dt) {
  zs_nccl_coll *m = c->impl;
  char what[160];
  snprintf(what, sizeof what, "%s of %zu %s elements (rank %d of a %d-rank nccl group)", op, count,
           zs_cdt_name(dt), c->rank, c->size);
  zs_status rc = r == ncclSuccess      ? ZS_OK
                 : r == ncclInProgress ? wait_comm(m->comm, c->timeout_s, what, c)
                                       : nccl_fail(m->comm, r, what);
  if (rc != ZS_OK && m->sig) (void)diverged(c, &rc); /* a divergence is the better reason */
  if (rc != ZS_OK) abort_comm(m);
  return rc;
}

/* Enqueues an all-gather (in place handled by NCCL itself). */
static zs_status n_all_gather(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  zs_nccl_coll *m = c->impl;
  return issued(c, ncclAllGather(s, r, n, nccl_type(dt), m->comm, (cudaStream_t)stream),
                "all_gather", n, dt);
}

/* Enqueues a reduce-scatter sum. */
static zs_status n_reduce_scatter(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                                  void *stream) {
  zs_nccl_coll *m = c->impl;
  return issued(c,
                ncclReduceScatter(s, r, n, nccl_type(dt), ncclSum, m->comm, (cudaStream_t)stream),
                "reduce_scatter", n, dt);
}

/* Enqueues an all-reduce sum. */
static zs_status n_all_reduce(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  zs_nccl_coll *m = c->impl;
  return issued(c, ncclAllReduce(s, r, n, nccl_type(dt), ncclSum, m->comm, (cudaStream_t)stream),
                "all_reduce", n, dt);
}

/* All-to-all as one group of sends and receives. */
static zs_status n_all_to_all(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  zs_nccl_coll *m = c->impl;
  size_t blk = n * zs_cdt_size(dt);
  ncclDataType_t t = nccl_type(dt);
  ncclResult_t res = ncclGroupStart();
  for (int p = 0; p < c->size && res == ncclSuccess; p++) {
    res = ncclSend((const char *)s + (size_t)p * blk, n, t, p, m->comm, (cudaStream_t)stream);
    if (res == ncclSuccess)
      res = ncclRecv((char *)r + (size_t)p * blk, n, t, p, m->comm, (cudaStream_t)stream);
  }
  ncclResult_t end = ncclGroupEnd(); /* always close the group, even after a failure */
  return issued(c, res != ncclSuccess ? res : end, "all_to_all", n, dt);
}

/* Enqueues a broadcast from root (in place). */
static zs_status n_broadcast(zs_coll *c, void *buf, size_t n, zs_cdt dt, int root, void *stream) {
  zs_nccl_coll *m = c->impl;
  return issued(c, ncclBroadcast(buf, buf, n, nccl_type(dt), root, m->comm, (cudaStream_t)stream),
                "broadcast", n, dt);
}

/* Polls the stream and the communicator until the stream is idle, with the timeout. */
static zs_status n_sync(zs_coll *c, void *stream) {
  zs_nccl_coll *m = c->impl;
  double deadline = c->timeout_s > 0 ? zs_clock_now_s() + c->timeout_s : 0;
  zs_backoff bo;
  zs_backoff_init(&bo);
  char what[96];
  snprintf(what, sizeof what, "waiting for the stream (rank %d of a %d-rank nccl group)", c->rank,
           c->size);
  for (;;) {
    cudaError_t e = cudaStreamQuery((cudaStream_t)stream);
    zs_status rc = ZS_OK;
    if (e != cudaSuccess && e != cudaErrorNotReady) {
      abort_comm(m);
      return zs_err(ZS_ERR_DEVICE, "%s: the stream failed: %s", what, cudaGetErrorString(e));
    }
    ncclResult_t st = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(m->comm, &st);
    if (r != ncclSuccess || (st != ncclSuccess && st != ncclInProgress)) {
      rc = nccl_fail(m->comm, r != ncclSuccess ? r : st, what);
      abort_comm(m);
      return rc;
    }
    if (diverged(c, &rc)) { /* the stream may be stuck on the data that diverged */
      abort_comm(m);
      return rc;
    }
    if (e == cudaSuccess) return ZS_OK;
    if (deadline > 0 && zs_clock_now_s() > deadline) {
      abort_comm(m);
      return zs_err(ZS_ERR_TIMEOUT,
                    "%s timed out after %.1f s: a collective on it never "
                    "finished, so a peer stopped answering; the communicator was "
                    "aborted: end the job, or raise comm_timeout_s",
                    what, c->timeout_s);
    }
    zs_backoff_wait(&bo);
  }
}

/* One-float all-reduce on the internal stream, then a polled sync of it. */
static zs_status n_barrier(zs_coll *c) {
  zs_nccl_coll *m = c->impl;
  ZS_CHECK(issued(c,
                  ncclAllReduce(m->scratch, m->scratch, 1, ncclFloat32, ncclSum, m->comm, m->own),
                  "barrier", 1, ZS_CDT_F32));
  return n_sync(c, m->own);
}

/* The divergence check of header h (nccl_sig.h): ahead of the data on stream, or on `own` with
   a wait for the verdict when the operation moves no data on a stream. */
static zs_status n_sig_enqueue(zs_coll *c, const uint64_t *h, void *stream) {
  zs_nccl_coll *m = c->impl;
  const uint64_t op = h[2] & 0xff;
  const int own = op == ZS_SIG_BARRIER || op == ZS_SIG_SPLIT || op == ZS_SIG_CHECK;
  void *st = own ? (void *)m->own : stream;
  void *send = NULL, *recv = NULL;
  zs_status rc = zs_nsig_begin(m->sig, c, m->comm, h, st, &send, &recv);
  if (rc != ZS_OK) {
    abort_comm(m);
    return rc;
  }
  ZS_CHECK(issued(c, ncclAllGather(send, recv, ZS_SIG_WORDS, ncclUint64, m->comm, (cudaStream_t)st),
                  "the divergence check's all_gather", ZS_SIG_WORDS, ZS_CDT_U64));
  rc = zs_nsig_end(m->sig, st);
  if (rc != ZS_OK) {
    abort_comm(m);
    return rc;
  }
  return own ? n_sync(c, st) : ZS_OK;
}

static zs_status wrap(zs_comm *comm, ncclComm_t nc, double timeout_s, zs_coll **out);

/* ncclCommSplit, non-blocking. NCCL runs the split as an async job attached to the PARENT
   communicator and leaves *newcomm NULL until that job has finished (init.cc: "*newcomm should be
   NCCL_COMM_NULL until comm split fully complete"), so poll the parent first (its
   ncclCommGetAsyncError completes the job and fills nc), then the child. */
static zs_status n_split(zs_coll *c, int color, int key, zs_coll **out) {
  zs_nccl_coll *m = c->impl;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t nc = NULL; /* written by NCCL's split job: must outlive the wait below */
  ncclResult_t r = ncclCommSplit(m->comm, color, key, &nc, &cfg);
  zs_status rc = ZS_OK;
  if (r != ncclSuccess && r != ncclInProgress)
    rc = nccl_fail(m->comm, r, "ncclCommSplit");
  else
    rc = wait_comm(m->comm, c->timeout_s, "ncclCommSplit (parent communicator)", NULL);
  if (rc == ZS_OK && nc) rc = wait_comm(nc, c->timeout_s, "ncclCommSplit (new communicator)", NULL);
  if (rc == ZS_OK && !nc) rc = zs_err(ZS_ERR_COMM, "ncclCommSplit returned no communicator");
  if (rc != ZS_OK) {
    abort_comm(m); /* first: aborting the parent also ends its split job, which may still set nc */
    if (nc) ncclCommAbort(nc);
    zs_coll_mark_broken(c);
    return rc;
  }
  return wrap(c->comm, nc, c->timeout_s, out);
}

/* Frees the scratch float and the internal stream without a host wait: the free is queued on
   `own` (after an aborted barrier's kernel, if any), and CUDA destroys the stream once drained. */
static void release_own(zs_nccl_coll *m) {
  if (m->scratch && cudaFreeAsync(m->scratch, m->own) != cudaSuccess) (void)cudaGetLastError();
  m->scratch = NULL;
  if (m->own) cudaStreamDestroy(m->own);
  m->own = NULL;
}

/* Finalize (bounded) and destroy; abort when broken or when finalize does not finish. */
static void n_destroy(zs_coll *c) {
  zs_nccl_coll *m = c->impl;
  if (!m) return;
  zs_comm_impl *ci = c->comm ? c->comm->impl : NULL;
  for (zs_nccl_coll **p = ci ? (zs_nccl_coll **)&ci->nccl_groups : NULL; p && *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  if (m->comm && !c->broken && m->sig && zs_nsig_poll(m->sig, c, 1) != ZS_OK) /* unread */
    zs_coll_mark_broken(c); /* its peers' collectives may be stuck in it: abort, not finalize */
  if (m->comm && !c->broken) {
    ncclResult_t r = ncclCommFinalize(m->comm);
    if ((r == ncclSuccess || r == ncclInProgress) &&
        wait_comm(m->comm, zs_drain_seconds(), "ncclCommFinalize", NULL) == ZS_OK) {
      ncclCommDestroy(m->comm);
      m->comm = NULL;
    }
  }
  abort_comm(m);
  zs_nsig_close(m->sig, m->own, c->broken ? 0 : zs_drain_seconds());
  release_own(m);
  free(m);
  c->impl = NULL;
}

static void n_cancel(zs_coll *c) {
  abort_comm(c->impl);
}

static const zs_coll_ops nccl_ops = {
    "nccl", n_all_gather, n_reduce_scatter, n_all_reduce, n_all_to_all, n_broadcast, n_barrier,
    n_sync, n_split,      n_destroy,        n_cancel,     NULL,         NULL,        n_sig_enqueue};

/* Makes a coll owning nc (aborted here on failure). */
static zs_status wrap(zs_comm *comm, ncclComm_t nc, double timeout_s, zs_coll **out) {
  zs_status rc = ZS_OK;
  zs_coll *c = NULL;
  int rank = 0, size = 0;
  zs_nccl_coll *m = calloc(1, sizeof *m);
  if (!m) {
    ncclCommAbort(nc);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory opening an nccl group");
  }
  m->comm = nc;
  cudaError_t e = cudaStreamCreateWithFlags(&m->own, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMallocAsync((void **)&m->scratch, sizeof(float), m->own);
  /* Zeroed once, on `own` after its allocation: the barrier's all-reduce reads it (an
     uninitialised read for compute-sanitizer's initcheck otherwise); its sum stays 0 forever. */
  if (e == cudaSuccess) e = cudaMemsetAsync(m->scratch, 0, sizeof(float), m->own);
  if (e != cudaSuccess) {
    rc = zs_err(ZS_ERR_DEVICE, "creating the nccl group's stream and scratch failed: %s",
                cudaGetErrorString(e));
    goto fail;
  }
  if (ncclCommUserRank(nc, &rank) != ncclSuccess || ncclCommCount(nc, &size) != ncclSuccess) {
    rc = zs_err(ZS_ERR_COMM, "querying the new NCCL communicator failed: %s", ncclGetLastError(nc));
    goto fail;
  }
  if (size > 1) ZS_CHECK_GOTO(zs_nsig_open(rank, size, m->own, &m->sig), rc, fail);
  ZS_CHECK_GOTO(zs_coll_alloc(&nccl_ops, "nccl", comm, ZS_DEVICE_CUDA, rank, size, timeout_s, &c),
                rc, fail);
  c->impl = m;
  m->self = c;
  zs_comm_impl *ci = comm ? comm->impl : NULL;
  if (ci) {
    m->next = ci->nccl_groups;
    ci->nccl_groups = m;
  }
  *out = c;
  return ZS_OK;
fail:
  abort_comm(m);
  zs_nsig_close(m->sig, m->own, 0);
  release_own(m);
  free(m);
  return rc;
}

/* Rank 0 makes the id; MPI_Ibcast hands it out (polled; a timed-out buffer stays with the comm). */
static zs_status id_over_mpi(zs_comm *comm, unsigned char *msg, double timeout_s) {
  zs_comm_impl *ci = comm->impl;
  char err[MPI_MAX_ERROR_STRING + 16];
  unsigned char *buf = malloc(ID_MSG_BYTES);
  if (!buf) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the NCCL id");
  memcpy(buf, msg, ID_MSG_BYTES);
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Ibcast(buf, ID_MSG_BYTES, MPI_BYTE, 0, ci->world, &req);
  if (r != MPI_SUCCESS) {
    free(buf);
    return zs_err(ZS_ERR_COMM, "broadcasting the NCCL id over MPI failed: %s",
                  zs_mpi_errstr(r, err, sizeof err));
  }
  zs_status rc = zs_mpi_wait(&req, timeout_s, "broadcast of the NCCL id over MPI");
  if (rc == ZS_ERR_TIMEOUT) {
    zs_mpi_pending_add(&ci->pending, req, buf);
    return rc;
  }
  if (rc == ZS_OK) memcpy(msg, buf, ID_MSG_BYTES);
  free(buf);
  return rc;
}

/* Fresh ncclUniqueId on rank 0, delivered to all (MPI, TCP rendezvous, or nothing for 1 rank). */
static zs_status get_id(zs_comm *comm, double timeout_s, ncclUniqueId *id) {
  zs_comm_impl *ci = comm->impl;
  unsigned char msg[ID_MSG_BYTES];
  memset(msg, 0, sizeof msg);
  ncclResult_t gr = ncclSuccess;
  if (comm->rank == 0) {
    gr = ncclGetUniqueId(id);
    msg[0] = gr == ncclSuccess ? 1 : 0; /* peers must learn about a failure, not wait for it */
    memcpy(msg + 1, id, NCCL_UNIQUE_ID_BYTES);
  }
  if (comm->size > 1) {
    if (comm->from_env) {
      if (!ci->rdv)
        ZS_CHECK(zs_rdv_open(ci->master_addr, ci->master_port, comm->rank, comm->size,
                             ci->boot_timeout_s, &ci->rdv));
      ZS_CHECK(zs_rdv_bcast(ci->rdv, msg, sizeof msg, ci->boot_timeout_s));
    } else {
      ZS_CHECK(id_over_mpi(comm, msg, timeout_s));
    }
  }
  if (!msg[0])
    return zs_err(ZS_ERR_COMM,
                  "ncclGetUniqueId failed on rank 0 (%s): check NCCL_SOCKET_IFNAME "
                  "and that rank 0 has a usable network interface",
                  comm->rank == 0 ? ncclGetErrorString(gr) : "see rank 0's error");
  memcpy(id, msg + 1, NCCL_UNIQUE_ID_BYTES);
  return ZS_OK;
}

/* World group on the current CUDA device (the engine calls cudaSetDevice first). */
zs_status zs_nccl_open(zs_comm *comm, double timeout_s, zs_coll **out) {
  ncclUniqueId id;
  int dev = -1;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess)
    return zs_err(ZS_ERR_DEVICE,
                  "opening the nccl group: no usable CUDA device (%s): check the "
                  "driver and CUDA_VISIBLE_DEVICES, or use ZS_DEVICE_CPU",
                  cudaGetErrorString(e));
  ZS_CHECK(get_id(comm, timeout_s, &id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t nc = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&nc, comm->size, id, comm->rank, &cfg);
  zs_status rc = ZS_OK;
  char what[128];
  snprintf(what, sizeof what, "ncclCommInitRankConfig (rank %d of %d on GPU %d)", comm->rank,
           comm->size, dev);
  if (r != ncclSuccess && r != ncclInProgress)
    rc = nccl_fail(nc, r, what);
  else if (nc)
    rc = wait_comm(nc, timeout_s, what, NULL);
  else
    rc = zs_err(ZS_ERR_COMM, "%s returned no communicator", what);
  if (rc != ZS_OK) {
    if (nc) ncclCommAbort(nc);
    return rc;
  }
  return wrap(comm, nc, timeout_s, out);
}
