/* A pool of worker threads bound to the cores of one NUMA node, with a parallel-for.
 *
 * The offload step runs the CPU optimizer on the host copy of the optimizer state; that memory
 * lives on the NUMA node nearest the GPU (host_arena.h), so the threads that stream through it are
 * bound to that node's cores. Lifecycle: zs_pool_create -> zs_pool_run (any number of times, from
 * any thread; concurrent calls are serialised) -> zs_pool_destroy.
 *
 * Work split: zs_pool_run hands out item indices 0..n_items-1 from a shared atomic counter, so
 * every item runs exactly once, on some worker, in no fixed order. The caller blocks until all
 * items are done; it does not run items itself (it may sit on another node). */
#ifndef ZS_OFFLOAD_WORKER_POOL_H
#define ZS_OFFLOAD_WORKER_POOL_H

#include <stddef.h>

#include "zshard.h"

typedef struct zs_pool zs_pool;

/* numa_node for zs_pool_create: no binding (workers may run on every CPU the process may use). */
#define ZS_POOL_UNBOUND (-1)
/* numa_node for zs_pool_create: the node of the CPU the calling thread runs on now. */
#define ZS_POOL_CALLER_NODE (-2)

/* Work function: item in [0, n_items), worker in [0, zs_pool_size). Must not call zs_pool_run on
   the same pool (it would deadlock) and cannot fail: record errors in ctx. */
typedef void (*zs_pool_fn)(void *ctx, size_t item, int worker);

/* Starts nthreads workers (0 = one per core of the node; ZS_POOL_UNBOUND: one per core of the
   machine), each bound with hwloc_set_cpubind to all PUs of NUMA node `numa_node` (OS index), or
   ZS_POOL_UNBOUND / ZS_POOL_CALLER_NODE. Errors: ZS_ERR_INVALID_ARG (no such node, a node without
   CPUs, nthreads < 0 or > 4096), ZS_ERR_UNSUPPORTED (binding refused by the OS),
   ZS_ERR_OUT_OF_MEMORY (thread creation). Nothing is left behind on failure. */
zs_status zs_pool_create(int nthreads, int numa_node, zs_pool **out);
/* zs_pool_create for share_cnt processes that use the same node at once (ranks of one host):
   this pool takes slice share_idx of share_cnt of the node's cores (at least one core; with fewer
   cores than sharers, core share_idx mod cores), and nthreads 0 means one worker per core of that
   slice. Without this, every rank would start one worker per core of the whole node. */
zs_status zs_pool_create_shared(int nthreads, int numa_node, int share_idx, int share_cnt,
                                zs_pool **out);
/* Runs fn(ctx, i, worker) for every i in [0, n_items) on the workers and returns when all are
   done. n_items == 0 returns at once. ZS_ERR_INVALID_ARG for a NULL pool or fn. */
zs_status zs_pool_run(zs_pool *p, size_t n_items, zs_pool_fn fn, void *ctx);
/* Number of workers (0 for NULL). */
int zs_pool_size(const zs_pool *p);
/* OS index of the node the workers are bound to, -1 when unbound. */
int zs_pool_node(const zs_pool *p);
/* The logical CPUs the workers are bound to, as a Linux cpulist ("0-3,8"); "" when unbound.
   Owned by the pool. */
const char *zs_pool_cpulist(const zs_pool *p);
/* One line: workers, node, CPUs, how the node was chosen. Owned by the pool. */
const char *zs_pool_info(const zs_pool *p);
/* Stops and joins the workers and frees the pool. NULL is a no-op. Not while a run is active. */
void zs_pool_destroy(zs_pool *p);

#endif
