/* Internals shared by host_arena.c (API, live-pointer table) and host_arena_hooks.c (regions and
 * jemalloc extent hooks). Not for use outside src/offload. */
#ifndef ZS_OFFLOAD_HOST_ARENA_IMPL_H
#define ZS_OFFLOAD_HOST_ARENA_IMPL_H

#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdbool.h>

#include "offload/host_arena.h"
#include "offload/numa_place.h"

/* One contiguous piece of OS memory (hwloc_alloc_membind / hwloc_alloc), pinned as a whole.
   jemalloc sees [use, use + use_len); the bytes before `use` are alignment slack. `out` counts
   the bytes of [use, use + use_len) jemalloc still holds: when dalloc/destroy bring it to 0 the
   region goes back to the OS. Extents are never merged across regions, so every extent lies in
   exactly one region. */
typedef struct zs_region {
  void *base;
  size_t len;
  char *use;
  size_t use_len, out;
  int pinned;
  struct zs_region *next;
} zs_region;

/* Live allocations: open addressing on the pointer, tombstones on free (value SIZE_MAX). */
typedef struct {
  void **keys;
  size_t *sizes;
  size_t cap, used; /* used counts live + tombstones */
} zs_live_table;

struct zs_host_arena {
  extent_hooks_t hooks; /* first member: the hook callbacks cast their extent_hooks_t* back */
  unsigned flags;
  int cuda_device;
  size_t capacity;

  hwloc_topology_t topo;
  zs_numa_place place;
  int bind;       /* regions are allocated with hwloc_alloc_membind(BIND) */
  int want_pin;   /* regions are registered with CUDA */
  int any_pinned; /* at least one region is pinned */

  unsigned ind; /* jemalloc arena index */
  int have_ind;
  int mallocx_flags;

  /* Hook state, guarded by hook_mu (hooks run inside jemalloc on any thread). */
  pthread_mutex_t hook_mu;
  zs_region *regions;
  size_t reserved, peak_reserved;
  zs_status hook_rc; /* why the last region request failed (ZS_OK if it did not) */
  char hook_msg[320];
  char fallback[200]; /* a pin/bind fallback taken, for the info string */

  /* API state, guarded by mu (taken before hook_mu, never after). */
  pthread_mutex_t mu;
  zs_live_table live;
  size_t cur, peak;
  char info[1024];
};

/* host_arena_hooks.c: the hook table for a, and returning every region to the OS. */
void zs_host_arena_hooks_init(zs_host_arena *a);
void zs_host_arena_release_regions(zs_host_arena *a);

/* host_arena_live.c: the live-pointer table. */
int zs_live_put(zs_live_table *t, void *p, size_t size);   /* 0 ok, -1 out of memory */
int zs_live_take(zs_live_table *t, void *p, size_t *size); /* 0 found and removed, -1 unknown */
void zs_live_clear(zs_live_table *t);

/* host_pin_cuda.c (CUDA builds): page-lock [p, p+len) for the device / undo it. */
#ifdef ZS_HAVE_CUDA
zs_status zs_host_pin(void *p, size_t len);
void zs_host_unpin(void *p);
/* Initialises CUDA and the device's primary context (cudaInitDevice: the calling thread's current
   device is left as it was), so that no pinning, which runs inside jemalloc's extent hook, is
   CUDA's first call: the first GPU run's arena test, which made none before its first
   allocation, hung there for 60 s. (A thread whose current device has no context yet still
   creates it at its first pinning: the engine makes its device current first.) */
zs_status zs_host_pin_prepare(int device);
#endif

#endif
