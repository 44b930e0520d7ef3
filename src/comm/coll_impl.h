/* Internal to src/comm: the collective object, the backend vtable every backend fills in, and the
 * helpers they share (timing, back-off, broken state). The engine includes comm.h, never this. */
#ifndef ZS_COMM_COLL_IMPL_H
#define ZS_COMM_COLL_IMPL_H

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
  char broken_why[ZS_BROKEN_MAX];
  void *impl; /* backend state */
};

/* Allocates a coll with the given identity; impl is attached by the caller. */
zs_status zs_coll_alloc(const zs_coll_ops *ops, const char *backend, zs_comm *comm,
                        zs_device device, int rank, int size, double timeout_s, zs_coll **out);
/* Marks c broken, remembering the current zs_last_error() as the reason for later calls. */
void zs_coll_mark_broken(zs_coll *c);
/* Monotonic clock in seconds. */
double zs_now_s(void);
/* Polling of a wait: MPI and CUDA progress only while we poll, so the first ZS_SPIN_S seconds
   spin with sched_yield (a large message needs many progress calls; yielding lets ranks that
   share a core run, as MPI's own blocking calls do), then sleeps grow to 1 ms (a stuck peer
   must not burn a core until the timeout). */
typedef struct {
  double t0;
  long ns;
} zs_backoff;
#define ZS_SPIN_S 1.0
void zs_backoff_init(zs_backoff *b);
void zs_backoff_wait(zs_backoff *b);
/* "f32", "bf16", "u64", "byte". */
const char *zs_cdt_name(zs_cdt dt);
/* Seconds coll/comm destroy waits for abandoned (timed-out) requests before leaking them. */
double zs_drain_seconds(void);

/* Backend constructors (each in its own file). */
zs_status zs_self_open(zs_comm *comm, zs_device device, double timeout_s, zs_coll **out);
zs_status zs_mpi_open(zs_comm *comm, zs_device device, double timeout_s, zs_coll **out);
#ifdef ZS_HAVE_CUDA
zs_status zs_nccl_open(zs_comm *comm, double timeout_s, zs_coll **out);
#endif

#endif
