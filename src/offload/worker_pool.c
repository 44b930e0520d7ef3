/* Worker pool bound to a NUMA node's cores, with a blocking parallel-for (see worker_pool.h).
 *
 * Synchronisation: one mutex `mu` guards the job description, `gen` and `active`. A run publishes
 * a job and bumps `gen`; each worker notices the new generation, claims items from the atomic
 * `next` until it passes n_items, then decrements `active`; the last one wakes the caller. `run_mu`
 * keeps concurrent zs_pool_run calls from overlapping. */
#include "offload/worker_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "offload/numa_place.h"

#define ZS_POOL_MAX_THREADS 4096

typedef struct {
  zs_pool *pool;
  int id;
} zs_worker_arg;

struct zs_pool {
  int n;               /* workers started */
  pthread_t *threads;  /* n */
  zs_worker_arg *args; /* n */
  pthread_mutex_t mu;  /* guards everything below up to `next` */
  pthread_cond_t wake; /* workers: a new generation or stop */
  pthread_cond_t done; /* caller: active reached 0, or a worker finished starting */
  pthread_mutex_t run_mu;
  unsigned long gen;
  int stop;
  int active;               /* workers still inside the current job */
  int started, bind_errors; /* start-up handshake */
  zs_pool_fn fn;
  void *ctx;
  size_t n_items;
  atomic_size_t next;    /* next unclaimed item */
  hwloc_topology_t topo; /* kept for the workers' hwloc_set_cpubind */
  hwloc_cpuset_t bind;   /* NULL when unbound */
  int node;
  char cpulist[256];
  char info[600];
};

/* Claims and runs items of the current job until none are left. */
static void zs_pool_drain(zs_pool *p, int id) {
  for (;;) {
    size_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (i >= p->n_items) break;
    p->fn(p->ctx, i, id);
  }
}

/* Worker thread: bind, report, then wait for generations until stop. */
static void *zs_pool_worker(void *argp) {
  zs_worker_arg *a = argp;
  zs_pool *p = a->pool;
  int bad = p->bind && hwloc_set_cpubind(p->topo, p->bind, HWLOC_CPUBIND_THREAD) != 0;
  pthread_mutex_lock(&p->mu);
  p->started++;
  p->bind_errors += bad;
  unsigned long seen = p->gen;
  pthread_cond_broadcast(&p->done);
  for (;;) {
    while (!p->stop && p->gen == seen)
      pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) break;
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    zs_pool_drain(p, a->id);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0) pthread_cond_broadcast(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Tells the first `started` workers to stop and joins them. */
static void zs_pool_stop(zs_pool *p, int started) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < started; i++)
    pthread_join(p->threads[i], NULL);
}

/* Frees what zs_pool_prepare allocated (threads already joined). */
static void zs_pool_free(zs_pool *p) {
  if (p->bind) hwloc_bitmap_free(p->bind);
  if (p->topo) hwloc_topology_destroy(p->topo);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->run_mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p->threads);
  free(p->args);
  free(p);
}

/* Keeps slice idx of cnt of the cores in *set (cores [idx*n/cnt, (idx+1)*n/cnt), or core
   idx mod n when there are fewer cores than sharers). */
static zs_status zs_pool_slice(hwloc_topology_t topo, hwloc_cpuset_t set, int idx, int cnt) {
  const int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
  if (n <= 0 || cnt <= 1) return ZS_OK;
  int lo = n >= cnt ? (int)((long)idx * n / cnt) : idx % n;
  int hi = n >= cnt ? (int)((long)(idx + 1) * n / cnt) : lo + 1;
  hwloc_cpuset_t keep = hwloc_bitmap_alloc();
  if (!keep) return zs_err(ZS_ERR_OUT_OF_MEMORY, "hwloc bitmap allocation failed");
  for (int i = lo; i < hi; i++) {
    hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE, (unsigned)i);
    if (core) hwloc_bitmap_or(keep, keep, core->cpuset);
  }
  hwloc_bitmap_and(set, set, keep);
  hwloc_bitmap_free(keep);
  return ZS_OK;
}

/* Resolves the node and thread count; fills bind, cpulist, info. */
static zs_status zs_pool_place(zs_pool *p, int nthreads, int numa_node, int share_idx,
                               int share_cnt) {
  zs_status rc = zs_topo_open(&p->topo);
  if (rc != ZS_OK) return rc;
  const char *how = "unbound";
  zs_numa_place pl = {0};
  hwloc_const_cpuset_t cores_in = hwloc_topology_get_topology_cpuset(p->topo);
  p->node = -1;
  if (numa_node != ZS_POOL_UNBOUND) {
    rc = zs_numa_place_node(p->topo, numa_node == ZS_POOL_CALLER_NODE ? -1 : numa_node, &pl);
    if (rc != ZS_OK) return rc;
    if (hwloc_bitmap_iszero(pl.cpuset)) {
      zs_numa_place_free(&pl);
      return zs_err(ZS_ERR_INVALID_ARG,
                    "NUMA node %d has no CPUs this process may use: pick a "
                    "node with cores",
                    pl.node);
    }
    p->node = pl.node;
    p->bind = pl.cpuset; /* ownership moves to the pool */
    pl.cpuset = NULL;
    rc = zs_pool_slice(p->topo, p->bind, share_idx, share_cnt);
    if (rc != ZS_OK) {
      zs_numa_place_free(&pl);
      return rc;
    }
    cores_in = p->bind;
    how = pl.how;
    hwloc_bitmap_list_snprintf(p->cpulist, sizeof p->cpulist, p->bind);
  }
  int cores = hwloc_get_nbobjs_inside_cpuset_by_type(p->topo, cores_in, HWLOC_OBJ_CORE);
  if (cores <= 0) cores = hwloc_get_nbobjs_inside_cpuset_by_type(p->topo, cores_in, HWLOC_OBJ_PU);
  p->n = nthreads > 0 ? nthreads : (cores > 0 ? cores : 1);
  if (p->node >= 0 && share_cnt > 1)
    snprintf(p->info, sizeof p->info,
             "%d workers bound to NUMA node %d, share %d of %d ranks on it (CPUs %s; %s)", p->n,
             p->node, share_idx, share_cnt, p->cpulist, how);
  else if (p->node >= 0)
    snprintf(p->info, sizeof p->info, "%d workers bound to NUMA node %d (CPUs %s; %s)", p->n,
             p->node, p->cpulist, how);
  else
    snprintf(p->info, sizeof p->info, "%d workers, unbound", p->n);
  zs_numa_place_free(&pl);
  return ZS_OK;
}

zs_status zs_pool_create(int nthreads, int numa_node, zs_pool **out) {
  return zs_pool_create_shared(nthreads, numa_node, 0, 1, out);
}

zs_status zs_pool_create_shared(int nthreads, int numa_node, int share_idx, int share_cnt,
                                zs_pool **out) {
  if (!out) return zs_err(ZS_ERR_INVALID_ARG, "zs_pool_create: out is NULL");
  if (share_cnt < 1 || share_idx < 0 || share_idx >= share_cnt)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_pool_create: share %d of %d: need 0 <= index < count",
                  share_idx, share_cnt);
  *out = NULL;
  if (nthreads < 0 || nthreads > ZS_POOL_MAX_THREADS)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_pool_create: %d threads: use 0 (one per core) .. %d",
                  nthreads, ZS_POOL_MAX_THREADS);
  if (numa_node < ZS_POOL_CALLER_NODE)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_pool_create: NUMA node %d: use an OS node index, "
                  "ZS_POOL_UNBOUND or ZS_POOL_CALLER_NODE",
                  numa_node);
  zs_pool *p = calloc(1, sizeof *p);
  if (!p) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_pool_create: %zu bytes", sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->run_mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->next, 0);
  zs_status rc = zs_pool_place(p, nthreads, numa_node, share_idx, share_cnt);
  if (rc != ZS_OK) {
    zs_pool_free(p);
    return rc;
  }
  p->threads = calloc((size_t)p->n, sizeof *p->threads);
  p->args = calloc((size_t)p->n, sizeof *p->args);
  if (!p->threads || !p->args) {
    int n = p->n;
    zs_pool_free(p);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_pool_create: thread table for %d workers", n);
  }
  int started = 0;
  for (; started < p->n; started++) {
    p->args[started] = (zs_worker_arg){p, started};
    int e = pthread_create(&p->threads[started], NULL, zs_pool_worker, &p->args[started]);
    if (e != 0) {
      zs_pool_stop(p, started);
      int n = p->n;
      zs_pool_free(p);
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_pool_create: starting worker %d of %d failed (%s)",
                    started, n, strerror(e));
    }
  }
  pthread_mutex_lock(&p->mu);
  while (p->started < p->n)
    pthread_cond_wait(&p->done, &p->mu);
  int bad = p->bind_errors;
  pthread_mutex_unlock(&p->mu);
  if (bad) {
    int node = p->node;
    char cpus[sizeof p->cpulist];
    snprintf(cpus, sizeof cpus, "%s", p->cpulist);
    zs_pool_stop(p, started);
    zs_pool_free(p);
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_pool_create: the OS refused to bind %d worker(s) to "
                  "NUMA node %d (CPUs %s): use ZS_POOL_UNBOUND or check the process's CPU "
                  "affinity",
                  bad, node, cpus);
  }
  *out = p;
  return ZS_OK;
}

zs_status zs_pool_run(zs_pool *p, size_t n_items, zs_pool_fn fn, void *ctx) {
  if (!p || !fn) return zs_err(ZS_ERR_INVALID_ARG, "zs_pool_run: pool and fn must not be NULL");
  if (n_items == 0) return ZS_OK;
  pthread_mutex_lock(&p->run_mu);
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->n_items = n_items;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  p->active = p->n;
  p->gen++;
  pthread_cond_broadcast(&p->wake);
  while (p->active > 0)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->run_mu);
  return ZS_OK;
}

int zs_pool_size(const zs_pool *p) {
  return p ? p->n : 0;
}
int zs_pool_node(const zs_pool *p) {
  return p ? p->node : -1;
}
const char *zs_pool_cpulist(const zs_pool *p) {
  return p ? p->cpulist : "";
}
const char *zs_pool_info(const zs_pool *p) {
  return p ? p->info : "";
}

void zs_pool_destroy(zs_pool *p) {
  if (!p) return;
  zs_pool_stop(p, p->n);
  zs_pool_free(p);
}
