/* zs_comm_allreduce: reductions of the caller's own host values (a logged loss, token counts)
 * over the communicator, on either bootstrap, with one deterministic order.
 *
 * Every rank's contribution is brought together and summed in rank order 0, 1, ..., world - 1
 * (floats accumulated in double, rounded once), so the result is the same bits on every rank and
 * on every backend. Transport:
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
#include <stdlib.h>
#include <string.h>

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

/* MPI: all-gather the bytes, reduce locally. The scratch holds the send copy and the blocks, so
   a timed-out request (MPI may still touch it) owns only library memory. */
static zs_status mpi_reduce(zs_comm *c, zs_comm_impl *ci, const void *send, void *recv,
                            size_t count, zs_host_dtype dt, zs_reduce_op op) {
  const size_t bytes = count * elem_size(dt);
  if (bytes > (size_t)INT32_MAX)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_comm_allreduce: %zu bytes per rank exceed MPI's int count: reduce fewer "
                  "values per call",
                  bytes);
  char *scratch = malloc(bytes * ((size_t)c->size + 1));
  if (!scratch)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_comm_allreduce: out of host memory for %zu bytes",
                  bytes * ((size_t)c->size + 1));
  memcpy(scratch, send, bytes);
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
  if (rc == ZS_OK) reduce_blocks(scratch + bytes, recv, count, c->size, dt, op);
  if (rc != ZS_OK) ci->host_broken = 1;
  free(scratch);
  return rc;
}

/* Env: gather at rank 0 over the rendezvous, reduce there, send the result back, in chunks of at
   most 1 MiB per rank. */
static zs_status rdv_reduce(zs_comm *c, zs_comm_impl *ci, const void *send, void *recv,
                            size_t count, zs_host_dtype dt, zs_reduce_op op) {
  const size_t es = elem_size(dt), per = HR_CHUNK_BYTES / es;
  if (!ci->rdv)
    ZS_CHECK(zs_rdv_open(ci->master_addr, ci->master_port, c->rank, c->size, ci->boot_timeout_s,
                         &ci->rdv));
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

/* Refuses what no backend could do, before any message is sent (so every rank refuses alike). */
static zs_status check_args(const zs_comm *c, const void *send, const void *recv, size_t count,
                            zs_host_dtype dt, zs_reduce_op op) {
  if (!c || !c->impl)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_allreduce: comm is NULL: create one with "
                                      "zs_comm_init_mpi or zs_comm_init_env");
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
  const zs_comm_impl *ci = c->impl;
  if (ci->host_broken)
    return zs_err(ZS_ERR_COMM,
                  "zs_comm_allreduce: an earlier zs_comm_allreduce on this communicator failed or "
                  "timed out, so the ranks' calls no longer match: destroy the communicator");
  return ZS_OK;
}

/* See zshard.h. */
zs_status zs_comm_allreduce(zs_comm *c, const void *send, void *recv, size_t count,
                            zs_host_dtype dt, zs_reduce_op op) {
  ZS_CHECK(check_args(c, send, recv, count, dt, op));
  zs_comm_impl *ci = c->impl;
  ci->host_seq++;
  if (count == 0) return ZS_OK;
  if (c->size == 1) {
    reduce_blocks(send, recv, count, 1, dt, op); /* element by element: in place is fine */
    return ZS_OK;
  }
  if (ci->world != MPI_COMM_NULL) return mpi_reduce(c, ci, send, recv, count, dt, op);
  return rdv_reduce(c, ci, send, recv, count, dt, op);
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
