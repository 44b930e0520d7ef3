/* The nccl backend's divergence check: the ring of headers and verdicts (nccl_sig.h). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "comm/nccl_sig.h"
#include "comm/nccl_sig_kernels.h"

#define NSIG_SLOTS_MAX 256
#define NSIG_ROW_BYTES_MAX (8u << 20) /* the ring's device rows: fewer slots for large groups */

struct zs_nsig {
  int rank, size;
  uint64_t slots;
  uint64_t *rows;       /* device: slots x size x ZS_SIG_WORDS */
  zs_nsig_verdict *v;   /* host, mapped: slots verdicts */
  zs_nsig_verdict *v_d; /* the same, as the device sees it */
  uint64_t *mine;       /* host: this rank's header of each slot, for the message */
  uint64_t issued;      /* checks queued so far */
  uint64_t checked;     /* checks before this one all landed and agreed */
  int dirty;            /* a check begun and not ended: its row may still be queued */
};

/* The verdicts' mapped host memory: cudaHostAlloc and cudaFreeHost may wait for the whole
   device, a peer's stuck collective on another communicator included, so blocks are taken once
   and, when a group closes, kept in this process-wide list for the next group instead of freed.
   Guarded by pool_lock (groups may open and close on several threads). */
typedef struct pool_block {
  struct pool_block *next;
  zs_nsig_verdict *v;
  size_t n;
} pool_block;
static pool_block *pool_free;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* n zeroed verdicts from the pool, or newly allocated (0 or the CUDA error). */
static cudaError_t pool_take(size_t n, zs_nsig_verdict **out) {
  pthread_mutex_lock(&pool_lock);
  pool_block **p = &pool_free;
  while (*p && (*p)->n < n)
    p = &(*p)->next;
  pool_block *b = *p;
  if (b) *p = b->next;
  pthread_mutex_unlock(&pool_lock);
  cudaError_t e = cudaSuccess;
  if (b) {
    *out = b->v;
    free(b);
  } else {
    e = cudaHostAlloc((void **)out, n * sizeof **out, cudaHostAllocMapped | cudaHostAllocPortable);
  }
  if (e == cudaSuccess) memset(*out, 0, n * sizeof **out); /* done 0: no check lands as 0 */
  return e;
}

/* v (n verdicts) back to the pool; lost if the list's node cannot be allocated. */
static void pool_give(zs_nsig_verdict *v, size_t n) {
  pool_block *b = malloc(sizeof *b);
  if (!b) return;
  b->v = v;
  b->n = n;
  pthread_mutex_lock(&pool_lock);
  b->next = pool_free;
  pool_free = b;
  pthread_mutex_unlock(&pool_lock);
}

/* Whether check k's verdict has landed (its kernel writes done = k + 1 last). */
static int landed(const zs_nsig *s, uint64_t k) {
  return __atomic_load_n(&s->v[k % s->slots].done, __ATOMIC_ACQUIRE) == k + 1;
}

zs_status zs_nsig_open(int rank, int size, void *stream, zs_nsig **out) {
  *out = NULL;
  zs_nsig *s = calloc(1, sizeof *s);
  if (!s) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the divergence check");
  s->rank = rank;
  s->size = size;
  const size_t slot_bytes = (size_t)size * ZS_SIG_WORDS * sizeof(uint64_t);
  s->slots = NSIG_SLOTS_MAX;
  while (s->slots > 8 && s->slots * slot_bytes > NSIG_ROW_BYTES_MAX)
    s->slots /= 2;
  s->mine = calloc(s->slots * ZS_SIG_WORDS, sizeof *s->mine);
  cudaError_t e = s->mine ? cudaSuccess : cudaErrorMemoryAllocation;
  if (e == cudaSuccess) e = pool_take(s->slots, &s->v);
  if (e == cudaSuccess) e = cudaHostGetDevicePointer((void **)&s->v_d, s->v, 0);
  if (e == cudaSuccess)
    e = cudaMallocAsync((void **)&s->rows, s->slots * slot_bytes, (cudaStream_t)stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream); /* ready on any stream */
  if (e != cudaSuccess) {
    const unsigned long long slots = s->slots;
    zs_nsig_close(s, stream, 0);
    return zs_err(ZS_ERR_DEVICE,
                  "allocating the divergence check's %llu slots for a %d-rank nccl group failed: "
                  "%s",
                  slots, size, cudaGetErrorString(e));
  }
  *out = s;
  return ZS_OK;
}

void zs_nsig_close(zs_nsig *s, void *stream, double drain_s) {
  if (!s) return;
  const double deadline = zs_clock_now_s() + drain_s;
  zs_backoff bo;
  zs_backoff_init(&bo);
  while (s->issued && !landed(s, s->issued - 1) && zs_clock_now_s() < deadline)
    zs_backoff_wait(&bo);
  int idle = !s->dirty;
  for (uint64_t k = s->issued > s->slots ? s->issued - s->slots : 0; k < s->issued; k++)
    idle = idle && landed(s, k);
  if (idle) { /* no kernel uses the rows or the verdicts any more */
    if (s->rows && cudaFreeAsync(s->rows, (cudaStream_t)stream) != cudaSuccess)
      (void)cudaGetLastError();
    if (s->v) pool_give(s->v, s->slots);
  }
  free(s->mine);
  free(s);
}

zs_status zs_nsig_poll(zs_nsig *s, const zs_coll *c, int every) {
  for (; s->checked < s->issued && landed(s, s->checked); s->checked++) {
    const zs_nsig_verdict *v = &s->v[s->checked % s->slots];
    if (v->q >= 0)
      return zs_sig_diverged(c, s->mine + s->checked % s->slots * ZS_SIG_WORDS, v->theirs,
                             (size_t)v->q, 1);
  }
  for (uint64_t k = s->checked; every && k < s->issued; k++) {
    const zs_nsig_verdict *v = &s->v[k % s->slots];
    if (landed(s, k) && v->q >= 0)
      return zs_sig_diverged(c, s->mine + k % s->slots * ZS_SIG_WORDS, v->theirs, (size_t)v->q, 1);
  }
  return ZS_OK;
}

zs_status zs_nsig_begin(zs_nsig *s, const zs_coll *c, ncclComm_t comm, const uint64_t *h,
                        void *stream, void **send, void **recv) {
  ZS_CHECK(zs_nsig_poll(s, c, 0));
  if (s->issued - s->checked >= s->slots) { /* the slot's last check must have landed */
    const double deadline = c->timeout_s > 0 ? zs_clock_now_s() + c->timeout_s : 0;
    zs_backoff bo;
    zs_backoff_init(&bo);
    while (s->issued - s->checked >= s->slots) {
      ZS_CHECK(zs_nsig_poll(s, c, 1));
      ncclResult_t st = ncclSuccess, r = ncclCommGetAsyncError(comm, &st);
      if (r != ncclSuccess || (st != ncclSuccess && st != ncclInProgress))
        return zs_err(ZS_ERR_COMM,
                      "the divergence check of collective #%llu (rank %d of a %d-rank nccl "
                      "group) found NCCL failed (%s): a peer died or the network failed",
                      (unsigned long long)h[1], c->rank, c->size,
                      ncclGetErrorString(r != ncclSuccess ? r : st));
      if (deadline > 0 && zs_clock_now_s() > deadline)
        return zs_err(ZS_ERR_TIMEOUT,
                      "the divergence check of collective #%llu (rank %d of a %d-rank nccl "
                      "group) waited %.1f s for the check %llu collectives before it: a peer "
                      "stopped answering; end the job, or raise comm_timeout_s if it is only "
                      "slow",
                      (unsigned long long)h[1], c->rank, c->size, c->timeout_s,
                      (unsigned long long)s->slots);
      zs_backoff_wait(&bo);
    }
  }
  const uint64_t slot = s->issued % s->slots;
  memcpy(s->mine + slot * ZS_SIG_WORDS, h, ZS_SIG_WORDS * sizeof *h);
  zs_nsig_row row;
  memset(&row, 0, sizeof row);
  memcpy(row.w, h, ZS_SIG_WORDS * sizeof *h);
  uint64_t *rows = s->rows + slot * (uint64_t)s->size * ZS_SIG_WORDS;
  uint64_t *me = rows + (size_t)s->rank * ZS_SIG_WORDS;
  s->dirty = 1; /* until zs_nsig_end: the row and the all-gather may be queued */
  const int e = zs_nsig_put(me, row, ZS_SIG_WORDS, stream);
  if (e != 0)
    return zs_err(ZS_ERR_DEVICE, "queueing the divergence check's header failed: %s",
                  cudaGetErrorString((cudaError_t)e));
  *send = me;
  *recv = rows;
  return ZS_OK;
}

zs_status zs_nsig_end(zs_nsig *s, void *stream) {
  const uint64_t slot = s->issued % s->slots;
  const uint64_t *rows = s->rows + slot * (uint64_t)s->size * ZS_SIG_WORDS;
  const int e = zs_nsig_compare(rows, s->size, s->rank, ZS_SIG_WORDS, ZS_SIG_POSTED, s->v_d + slot,
                                s->issued + 1, stream);
  if (e != 0)
    return zs_err(ZS_ERR_DEVICE, "queueing the divergence check's comparison failed: %s",
                  cudaGetErrorString((cudaError_t)e));
  s->issued++;
  s->dirty = 0;
  return ZS_OK;
}
