/* Internal to src/comm: what a backend sees: the collective object, the vtable every backend
 * fills in, and the helpers they share (coll_common.c: allocation, broken state, dtype names;
 * sig.c: the divergence check; backoff.h: polling). The dispatcher (coll.c) is above the
 * backends and calls them through the vtable; the engine includes comm.h, never this. */
#ifndef ZS_COMM_COLL_IMPL_H
#define ZS_COMM_COLL_IMPL_H

#include "comm/backoff.h"
#include "comm/comm.h"
#include "base/error.h"

/* One backend. Arguments reach these functions already validated by coll.c (non-NULL buffers for
   count > 0, allowed aliasing, reducible dtype, root in range, coll not broken, count > 0). */
typedef struct zs_coll_ops {
  const char *name;
  zs_status (*all_gather)(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                          void *stream);
  zs_status (*reduce_scatter)(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                              void *stream);
  zs_status (*all_reduce)(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                          void *stream);
  zs_status (*all_to_all)(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                          void *stream);
  zs_status (*broadcast)(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root, void *stream);
  zs_status (*barrier)(zs_coll *c);
  zs_status (*sync)(zs_coll *c, void *stream);
  zs_status (*split)(zs_coll *c, int color, int key, zs_coll **out);
  void (*destroy)(zs_coll *c); /* releases impl only; coll.c frees the zs_coll itself */
  void (*cancel)(zs_coll *c);  /* ends in-flight device work at once (nccl); NULL: nothing to do */
  /* Starts the all-gather of n host words per rank into all (size * n, this rank's row filled
     in); exchange_wait waits for it with the timeout. At most one is in flight per coll. On
     ZS_ERR_TIMEOUT the backend keeps `all` (MPI may still write it) and frees it later: the
     caller must forget it. NULL: the backend cannot exchange headers (self has no peers; nccl
     moves device memory only). */
  zs_status (*exchange_post)(zs_coll *c, uint64_t *all, size_t n, const char *what);
  zs_status (*exchange_wait)(zs_coll *c, uint64_t *all, const char *what);
  /* The device's form of the check (nccl): queues the exchange and comparison of header h
     (ZS_SIG_WORDS words) on stream ahead of the data; for an operation with no data on a
     stream (barrier, split, check) on the backend's own stream, and waits for the verdict. A
     verdict that differs fails a later call. NULL: the host exchange above, if any. */
  zs_status (*sig_enqueue)(zs_coll *c, const uint64_t *h, void *stream);
} zs_coll_ops;

#define ZS_BROKEN_MAX 512

struct zs_coll {
  const zs_coll_ops *ops;
  const char *backend; /* "mpi", "mpi-staged", "nccl", "self" */
  zs_comm *comm;       /* the bootstrap handle this coll came from (outlives it) */
  zs_device device;
  int rank, size;
  double timeout_s; /* <= 0: waits are unbounded (still polled) */
  int broken;       /* set after a timeout or transport error: every later op fails at once */
  int desync;       /* broken by an error (not only by zs_coll_abort): no header exchange either */
  char broken_why[ZS_BROKEN_MAX];
  void *impl; /* backend state */
  /* Signature check (sig.c): every collective first all-gathers a small header (sequence
     number, operation, count, dtype, root, the owner's call) and refuses, on every rank at once,
     when the ranks' headers differ, before any data moves. */
  int sig_on;                     /* the check wanted (zs_coll_set_check, ZS_COMM_CHECK) and the
                                     backend has a host exchange or sig_enqueue */
  int sig_hash_on;                /* more than one rank: headers are built and hashed */
  uint64_t sig_seq;               /* headers built so far on this group */
  uint64_t sig_hash;              /* running hash of every header built (compared by the owner) */
  int sig_unhashed;               /* zs_coll_hash_pause: headers go to sig_role_hash instead */
  uint64_t sig_role_hash;         /* running hash of the headers built while paused */
  uint64_t *sig_buf;              /* size * ZS_SIG_WORDS words, reused; NULL after a timeout */
  double sig_seconds;             /* wall time spent in header exchanges so far */
  double op_seconds;              /* ... and in the operations and syncs (zs_coll_op_seconds) */
  uint64_t bus_bytes;             /* the operations' ring bytes per rank (zs_coll_bus_bytes) */
  const zs_coll_sig_src *sig_src; /* the owner's call, or NULL */
  void (*timer)(void *ctx, void *stream, int end); /* zs_coll_set_timer's, or NULL */
  void *timer_ctx;
  struct zs_flight *flight; /* the flight recorder (flight.h), or NULL */
  int flight_group;         /* this group's index in it */
  uint64_t flight_seq;      /* one-rank group: collectives recorded so far */
};

/* Header words: magic, sequence, op|dtype|root, count, the owner's ZS_SIG_CTX words, and last
   (not compared, not hashed) the wall-clock microsecond at which the rank posted it and the one
   at which it gives up waiting (0: never). */
#define ZS_SIG_WORDS (6 + ZS_SIG_CTX)
#define ZS_SIG_POSTED (4 + ZS_SIG_CTX)
#define ZS_SIG_DEADLINE (5 + ZS_SIG_CTX)
/* Operation codes of a header. */
typedef enum {
  ZS_SIG_ALL_GATHER = 1,
  ZS_SIG_REDUCE_SCATTER,
  ZS_SIG_ALL_REDUCE,
  ZS_SIG_ALL_TO_ALL,
  ZS_SIG_BROADCAST,
  ZS_SIG_BARRIER,
  ZS_SIG_SPLIT,
  ZS_SIG_CHECK,
  ZS_SIG_ABORT /* a rank leaving an aborted or failed engine (count: zs_coll_goodbye's reason) */
} zs_sig_op;
/* Exchanges and compares the headers of the collective about to start on stream (a no-op when
   the check is off). ZS_ERR_COMM naming both sides when the ranks differ; the backend's error
   otherwise. The caller marks the group broken on failure. */
zs_status zs_sig_check(zs_coll *c, zs_sig_op op, size_t count, zs_cdt dt, int root, void *stream);
/* ZS_ERR_COMM naming this rank's header mine and rank q's theirs; queued: the data collectives
   were queued before the verdict (nccl), else none moved. */
zs_status zs_sig_diverged(const zs_coll *c, const uint64_t *mine, const uint64_t *theirs, size_t q,
                          int queued);
/* Sets c->sig_on from ZS_COMM_CHECK and the backend (called by zs_coll_alloc). */
void zs_sig_init(zs_coll *c);

/* Allocates a coll with the given identity; impl is attached by the caller. */
zs_status zs_coll_alloc(const zs_coll_ops *ops, const char *backend, zs_comm *comm,
                        zs_device device, int rank, int size, double timeout_s, zs_coll **out);
/* Frees the object allocated by zs_coll_alloc, not its impl (the backend's destroy does that). */
void zs_coll_free(zs_coll *c);
/* Marks c broken and out of step (no goodbye either), remembering the current zs_last_error() as
   the reason for later calls. */
void zs_coll_mark_broken(zs_coll *c);
/* "f32", "bf16", "u64", "byte". */
const char *zs_cdt_name(zs_cdt dt);

#endif
