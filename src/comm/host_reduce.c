/* zs_comm_allreduce: reductions of the caller's own host values (a logged loss, token counts)
 * over the communicator, on either bootstrap, with one deterministic order.
 *
 * Every rank's contribution is brought together and summed in rank order 0, 1, ..., world - 1
 * (floats accumulated in double, rounded once), so the result is the same bits on every rank and
 * on every backend. Transport:
 * Every call first exchanges a header per rank (whether it refused its arguments, its count,
 * dtype and op, when it posted the call and its deadline, and up to 32 bytes of values, which then
 * need no second exchange), so that a refusal or a call that differs is an error on every rank
 * before any other value moves, the ranks' calls stay paired, and a rank that arrives after a
 * peer gave up (MPI completes the abandoned exchange) fails as its peers did. Transport:
 *  - zs_comm_init_mpi: one MPI_Iallgather on the communicator's world, then a local reduction on
 *    every rank; the wait polls against the timeout.
 *  - zs_comm_init_env: the TCP rendezvous sockets that already connect every rank to rank 0 (the
 *    NCCL id's bootstrap): rank 0 gathers, reduces and sends the result back. Not NCCL: that
 *    would need a device bounce buffer, a CUDA stream and an engine's communicator for a few host
 *    scalars, and would not work before an engine exists or on a one-GPU-less host; the values
 *    are small, so a star through rank 0 costs nothing that matters.
 *  - one rank: a copy (mean divides by 1). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "comm/comm_impl.h"
#include "comm/backoff.h"
#include "base/error.h"
#include "comm/rendezvous.h"

#define HR_CHUNK_BYTES ((size_t)1 << 20) /* the rendezvous' largest message */

static size_t elem_size(zs_host_dtype dt) {
  return dt == ZS_HOST_F32 ? 4 : 8;
}

/* Reduces world blocks of count elements (rank order) into out. */
static void reduce_blocks(const void *all, void *out, size_t count, int world, zs_host_dtype dt,
                          zs_reduce_op op) {
  for (size_t i = 0; i < count; i++) {
    if (dt == ZS_HOST_I64) {
      const int64_t *a = all;
      int64_t acc = a[i];
      uint64_t sum = (uint64_t)a[i];
      for (int r = 1; r < world; r++) {
        int64_t x = a[(size_t)r * count + i];
        sum += (uint64_t)x; /* wraps modulo 2^64, no undefined overflow */
        if (op == ZS_RED_MAX ? x > acc : x < acc) acc = x;
      }
      ((int64_t *)out)[i] = op == ZS_RED_SUM ? (int64_t)sum : acc;
      continue;
    }
    double acc = 0;
    for (int r = 0; r < world; r++) {
      size_t k = (size_t)r * count + i;
      double x = dt == ZS_HOST_F32 ? (double)((const float *)all)[k] : ((const double *)all)[k];
      if (r == 0 || op == ZS_RED_SUM || op == ZS_RED_MEAN)
        acc = r == 0 ? x : acc + x;
      else if (isnan(x) || (!isnan(acc) && (op == ZS_RED_MAX ? x > acc : x < acc)))
        acc = isnan(acc) ? acc : x; /* the first NaN wins; ties keep the earlier rank */
    }
    if (op == ZS_RED_MEAN) acc /= (double)world;
    if (dt == ZS_HOST_F32)
      ((float *)out)[i] = (float)acc;
    else
      ((double *)out)[i] = acc;
  }
}

/* MPI: all-gathers bytes per rank from mine; *out: a scratch of (world + 1) * bytes whose blocks
   (rank order) start at bytes (the caller frees it). The scratch holds the send copy and the
   blocks, so a timed-out request (MPI may still touch it) owns only library memory. */
static zs_status mpi_gather(zs_comm *c, zs_comm_impl *ci, const void *mine, size_t bytes,
                            char **out) {
  *out = NULL;
  if (bytes > (size_t)INT32_MAX)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_comm_allreduce: %zu bytes per rank exceed MPI's int count: reduce fewer "
                  "values per call",
                  bytes);
  char *scratch = malloc(bytes * ((size_t)c->size + 1));
  if (!scratch)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_comm_allreduce: out of host memory for %zu bytes",
                  bytes * ((size_t)c->size + 1));
  memcpy(scratch, mine, bytes);
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Iallgather(scratch, (int)bytes, MPI_BYTE, scratch + bytes, (int)bytes, MPI_BYTE,
                         ci->world, &req);
  if (r != MPI_SUCCESS) {
    free(scratch);
    char msg[MPI_MAX_ERROR_STRING + 16];
    ci->host_broken = 1;
    return zs_err(ZS_ERR_COMM, "zs_comm_allreduce: MPI_Iallgather failed: %s",
                  zs_mpi_errstr(r, msg, sizeof msg));
  }
  zs_status rc = zs_mpi_wait(&req, ci->boot_timeout_s, "zs_comm_allreduce");
  if (rc == ZS_ERR_TIMEOUT) {
    zs_mpi_pending_add(&ci->pending, req, scratch); /* freed once the peer catches up */
    ci->host_broken = 1;
    return rc;
  }
  if (rc != ZS_OK) {
    ci->host_broken = 1;
    free(scratch);
    return rc;
  }
  *out = scratch;
  return ZS_OK;
}

static zs_status mpi_reduce(zs_comm *c, zs_comm_impl *ci, const void *send, void *recv,
                            size_t count, zs_host_dtype dt, zs_reduce_op op) {
  const size_t bytes = count * elem_size(dt);
  char *scratch;
  ZS_CHECK(mpi_gather(c, ci, send, bytes, &scratch));
  reduce_blocks(scratch + bytes, recv, count, c->size, dt, op);
  free(scratch);
  return ZS_OK;
}

/* Env: the rendezvous, opened at the first call. */
static zs_status rdv_ready(zs_comm *c, zs_comm_impl *ci) {
  if (!ci->rdv)
    ZS_CHECK(zs_rdv_open(ci->master_addr, ci->master_port, c->rank, c->size, ci->boot_timeout_s,
                         &ci->rdv));
  return ZS_OK;
}

/* Env: gather at rank 0 over the rendezvous, reduce there, send the result back, in chunks of at
   most 1 MiB per rank. */
static zs_status rdv_reduce(zs_comm *c, zs_comm_impl *ci, const void *send, void *recv,
                            size_t count, zs_host_dtype dt, zs_reduce_op op) {
  const size_t es = elem_size(dt), per = HR_CHUNK_BYTES / es;
  char *all = malloc(HR_CHUNK_BYTES * (c->rank == 0 ? (size_t)c->size : 1));
  char *res = malloc(HR_CHUNK_BYTES);
  zs_status rc = ZS_OK;
  if (!all || !res) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_comm_allreduce: out of host memory for the exchange");
    goto out;
  }
  const uint32_t tag = 0x100u + (ci->host_seq & 0xffffffu);
  for (size_t off = 0; off < count && rc == ZS_OK; off += per) {
    const size_t n = count - off < per ? count - off : per, bytes = n * es;
    rc = zs_rdv_gather(ci->rdv, (const char *)send + off * es, all, bytes, tag, ci->boot_timeout_s);
    if (rc == ZS_OK && c->rank == 0) reduce_blocks(all, res, n, c->size, dt, op);
    if (rc == ZS_OK) rc = zs_rdv_bcast_tag(ci->rdv, res, bytes, tag, ci->boot_timeout_s);
    if (rc == ZS_OK) memcpy((char *)recv + off * es, res, bytes);
  }
out:
  if (rc != ZS_OK && rc != ZS_ERR_OUT_OF_MEMORY) ci->host_broken = 1;
  free(all);
  free(res);
  return rc;
}

/* A call's header: whether this rank refused its arguments, then its count, dtype and op, the
   wall-clock microsecond it posted the exchange and its deadline (posted + its timeout); then the
   values themselves when they fit in HDR_INLINE bytes (a loss, a token count: one exchange). */
enum { HDR_BAD = 0, HDR_COUNT, HDR_DT, HDR_OP, HDR_POSTED, HDR_DEADLINE, HDR_N };
#define HDR_INLINE 32
#define HDR_BYTES (HDR_N * sizeof(uint64_t) + HDR_INLINE)

/* Every rank's header block into all (HDR_BYTES a rank, rank order), before any other value
   moves, so that a rank that refused its arguments, or called with others, is known to all. */
static zs_status exchange_headers(zs_comm *c, zs_comm_impl *ci, const void *block, char *all) {
  if (ci->world != MPI_COMM_NULL) {
    char *scratch;
    ZS_CHECK(mpi_gather(c, ci, block, HDR_BYTES, &scratch));
    memcpy(all, scratch + HDR_BYTES, HDR_BYTES * (size_t)c->size);
    free(scratch);
    return ZS_OK;
  }
  zs_status rc = rdv_ready(c, ci);
  const uint32_t tag = 0x100u + (ci->host_seq & 0xffffffu);
  const size_t total = HDR_BYTES * (size_t)c->size;
  if (rc == ZS_OK) rc = zs_rdv_gather(ci->rdv, block, all, HDR_BYTES, tag, ci->boot_timeout_s);
  for (size_t off = 0; off < total && rc == ZS_OK; off += HR_CHUNK_BYTES) /* message-sized */
    rc = zs_rdv_bcast_tag(ci->rdv, all + off,
                          total - off < HR_CHUNK_BYTES ? total - off : HR_CHUNK_BYTES, tag,
                          ci->boot_timeout_s);
  if (rc != ZS_OK) ci->host_broken = 1;
  return rc;
}

static const char *dt_name(uint64_t dt) {
  return dt == ZS_HOST_F32 ? "f32" : dt == ZS_HOST_F64 ? "f64" : dt == ZS_HOST_I64 ? "i64" : "?";
}
static const char *op_name(uint64_t op) {
  return op == ZS_RED_SUM    ? "sum"
         : op == ZS_RED_MEAN ? "mean"
         : op == ZS_RED_MAX  ? "max"
         : op == ZS_RED_MIN  ? "min"
                             : "?";
}

/* Rank q's header in the exchanged blocks. */
static const uint64_t *header_of(const char *all, int q) {
  return (const uint64_t *)(all + (size_t)q * HDR_BYTES);
}

/* The verdict of every rank's header, the same on every rank: a rank that posted after another's
   deadline (that one gave up on the call, or would have: ZS_ERR_TIMEOUT, so that a late rank
   does not take a result its peers never got), this rank's own refusal (mine, its message kept in
   why), a peer's, calls that differ, or ZS_OK. The times are wall clocks, as in the collectives'
   header check (comm/sig.c): the hosts' clocks must agree to well within the timeout (NTP does).
   A skew beyond it fails every call; a smaller one moves the verdict, which a peer that gave up
   on its own (monotonic) timer does not see. */
static zs_status agree(const zs_comm *c, const char *all, zs_status mine, const char *why) {
  const uint64_t *me = header_of(all, c->rank);
  int late = 0, early = 0;
  for (int q = 1; q < c->size; q++) {
    if (header_of(all, q)[HDR_POSTED] > header_of(all, late)[HDR_POSTED]) late = q;
    if (header_of(all, q)[HDR_DEADLINE] < header_of(all, early)[HDR_DEADLINE]) early = q;
  }
  const uint64_t posted = header_of(all, late)[HDR_POSTED],
                 deadline = header_of(all, early)[HDR_DEADLINE];
  if (posted > deadline)
    return zs_err(ZS_ERR_TIMEOUT,
                  "zs_comm_allreduce: rank %d called %.1f s after rank %d's timeout had passed, so "
                  "rank %d gave up on this call: nothing was reduced on any rank. Every later "
                  "call on this communicator returns ZS_ERR_COMM: destroy it",
                  late, (double)(posted - deadline) / 1e6, early, early);
  for (int q = 0; q < c->size; q++) {
    const uint64_t *o = header_of(all, q);
    if (o[HDR_BAD])
      return mine != ZS_OK ? zs_err(mine, "%s", why)
                           : zs_err(ZS_ERR_INVALID_ARG,
                                    "zs_comm_allreduce: rank %d refused its arguments (its "
                                    "zs_last_error says why); nothing was reduced",
                                    q);
  }
  for (int q = 0; q < c->size; q++) {
    const uint64_t *o = header_of(all, q);
    if (o[HDR_COUNT] != me[HDR_COUNT] || o[HDR_DT] != me[HDR_DT] || o[HDR_OP] != me[HDR_OP])
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_comm_allreduce: the ranks' calls differ: this rank (%d) reduces %llu %s "
                    "by %s, rank %d %llu %s by %s; every rank must pass the same count, dtype "
                    "and op. Nothing was reduced; the communicator stays usable",
                    c->rank, (unsigned long long)me[HDR_COUNT], dt_name(me[HDR_DT]),
                    op_name(me[HDR_OP]), q, (unsigned long long)o[HDR_COUNT], dt_name(o[HDR_DT]),
                    op_name(o[HDR_OP]));
  }
  return ZS_OK;
}

/* Refuses what no backend could do (the exchange then tells every rank). */
static zs_status check_args(const zs_comm *c, const void *send, const void *recv, size_t count,
                            zs_host_dtype dt, zs_reduce_op op) {
  if (dt != ZS_HOST_F32 && dt != ZS_HOST_F64 && dt != ZS_HOST_I64)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_comm_allreduce: dtype %d is not a host dtype: use ZS_HOST_F32, ZS_HOST_F64 "
                  "or ZS_HOST_I64",
                  (int)dt);
  if (op != ZS_RED_SUM && op != ZS_RED_MAX && op != ZS_RED_MIN && op != ZS_RED_MEAN)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_comm_allreduce: op %d is not a reduction: use ZS_RED_SUM, ZS_RED_MEAN, "
                  "ZS_RED_MAX or ZS_RED_MIN",
                  (int)op);
  if (op == ZS_RED_MEAN && dt == ZS_HOST_I64)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_allreduce: ZS_RED_MEAN of ZS_HOST_I64 would round: "
                                      "sum with ZS_RED_SUM and divide, or reduce ZS_HOST_F64");
  if (count && (!send || !recv))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_allreduce: send or recv is NULL with count %zu",
                  count);
  if (count > SIZE_MAX / 8 / ((size_t)c->size + 1))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_allreduce: count %zu is too large", count);
  const size_t bytes = count * elem_size(dt);
  const char *s = send, *r = recv;
  if (count && s != r && s < r + bytes && r < s + bytes)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_allreduce: send and recv overlap: pass the same "
                                      "pointer (in place) or separate arrays");
  return ZS_OK;
}

/* See zshard.h. */
zs_status zs_comm_allreduce(zs_comm *c, const void *send, void *recv, size_t count,
                            zs_host_dtype dt, zs_reduce_op op) {
  if (!c || !c->impl)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_allreduce: comm is NULL: create one with "
                                      "zs_comm_init_mpi or zs_comm_init_env");
  zs_comm_impl *ci = c->impl;
  if (ci->host_broken)
    return zs_err(ZS_ERR_COMM,
                  "zs_comm_allreduce: an earlier zs_comm_allreduce on this communicator failed or "
                  "timed out, so the ranks' calls no longer match: destroy the communicator");
  const zs_status mine = check_args(c, send, recv, count, dt, op);
  ci->host_seq++;
  if (c->size == 1) {
    if (mine == ZS_OK) reduce_blocks(send, recv, count, 1, dt, op); /* in place is fine */
    return mine;
  }
  char why[512] = "";
  if (mine != ZS_OK) snprintf(why, sizeof why, "%s", zs_last_error());
  const size_t bytes = mine == ZS_OK ? count * elem_size(dt) : 0;
  const int inline_values = bytes <= HDR_INLINE;
  union {
    uint64_t hdr[HDR_N];
    char b[HDR_BYTES];
  } block;
  memset(&block, 0, sizeof block);
  block.hdr[HDR_BAD] = mine != ZS_OK;
  block.hdr[HDR_COUNT] = count;
  block.hdr[HDR_DT] = (uint64_t)dt;
  block.hdr[HDR_OP] = (uint64_t)op;
  block.hdr[HDR_POSTED] = zs_clock_wall_us();
  const double wait_us = ci->boot_timeout_s * 1e6; /* a timeout of years: no deadline */
  block.hdr[HDR_DEADLINE] = wait_us < 1e18 ? block.hdr[HDR_POSTED] + (uint64_t)wait_us : UINT64_MAX;
  if (inline_values && bytes) memcpy(block.b + HDR_N * sizeof(uint64_t), send, bytes);
  char *all = malloc((size_t)c->size * HDR_BYTES);
  char *vals = inline_values ? malloc((size_t)c->size * HDR_INLINE) : NULL;
  if (!all || (inline_values && !vals)) {
    /* this rank cannot take part: its peers time out and break the communicator */
    free(all);
    free(vals);
    ci->host_broken = 1;
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_comm_allreduce: out of host memory for the headers");
  }
  zs_status rc = exchange_headers(c, ci, block.b, all);
  if (rc == ZS_OK) rc = agree(c, all, mine, why);
  if (rc == ZS_ERR_TIMEOUT) ci->host_broken = 1; /* the peer that gave up broke it */
  if (rc == ZS_OK && inline_values && count) {   /* every rank's values came with the headers */
    for (int q = 0; q < c->size; q++)
      memcpy(vals + (size_t)q * bytes, all + (size_t)q * HDR_BYTES + HDR_N * sizeof(uint64_t),
             bytes);
    reduce_blocks(vals, recv, count, c->size, dt, op);
  }
  free(all);
  free(vals);
  if (rc != ZS_OK || inline_values) return rc;
  if (ci->world != MPI_COMM_NULL) return mpi_reduce(c, ci, send, recv, count, dt, op);
  return rdv_reduce(c, ci, send, recv, count, dt, op);
}

double zs_comm_timeout(const zs_comm *c) {
  return ((const zs_comm_impl *)c->impl)->boot_timeout_s;
}

/* See zshard.h. */
zs_status zs_comm_set_timeout(zs_comm *c, double timeout_s) {
  if (!c || !c->impl) return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_set_timeout: comm is NULL");
  if (!(timeout_s > 0) || !isfinite(timeout_s))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_set_timeout: %g is not a positive number of seconds",
                  timeout_s);
  ((zs_comm_impl *)c->impl)->boot_timeout_s = timeout_s;
  return ZS_OK;
}
