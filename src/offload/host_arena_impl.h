/* Internals shared by host_arena.c (API), host_arena_region.c (mapping, binding and pinning one
 * region) and host_arena_live.c (the live-region table). Not for use outside src/offload. */
#ifndef ZS_OFFLOAD_HOST_ARENA_IMPL_H
#define ZS_OFFLOAD_HOST_ARENA_IMPL_H

#include <pthread.h>

#include "offload/host_arena.h"
#include "offload/numa_place.h"

/* One live allocation: a region of its own, `len` bytes mapped at the pointer handed out
   (zs_host_charge(bytes): whole pages), `bytes` of them asked for. */
typedef struct {
  size_t bytes, len;
  int pinned;
} zs_region;

/* Live regions by pointer: open addressing, tombstones on free (len 0). */
typedef struct {
  void **keys;
  zs_region *vals;
  size_t cap, used; /* used counts live + tombstones */
} zs_live_table;

struct zs_host_arena {
  unsigned flags;
  int cuda_device;
  size_t capacity;

  hwloc_topology_t topo;
  zs_numa_place place;
  int bind;     /* regions are mapped with hwloc_alloc_membind(BIND) */
  int want_pin; /* regions are registered with CUDA (cleared by an ALLOW_UNPINNED fallback) */

  /* All below guarded by mu. */
  pthread_mutex_t mu;
  zs_live_table live;
  size_t cur, peak;          /* bytes asked for */
  size_t reserved, peak_rsv; /* bytes mapped: the sum of the live regions' len */
  char fallback[200];        /* a pin/bind fallback taken, for the info string */
  char info[1024];
};

/* host_arena.c: records that pinning was refused and the arena goes on unpinned (ALLOW_UNPINNED;
   the reason is the thread's last error). Caller holds mu or owns a. */
void zs_host_arena_note_unpinned(zs_host_arena *a);

/* host_arena_region.c: maps (bound, then pinned) a region of r->len bytes into *p, or says why
   not (message set, nothing left mapped); unmaps (unpinned first) one. Caller holds mu. */
zs_status zs_region_open(zs_host_arena *a, zs_region *r, void **p);
void zs_region_close(zs_host_arena *a, void *p, const zs_region *r);

/* host_arena_live.c: the live-region table. */
int zs_live_put(zs_live_table *t, void *p, zs_region r);   /* 0 ok, -1 out of memory */
int zs_live_take(zs_live_table *t, void *p, zs_region *r); /* 0 found and removed, -1 unknown */
/* Calls f on every live region and empties the table. */
void zs_live_drain(zs_live_table *t, zs_host_arena *a,
                   void (*f)(zs_host_arena *a, void *p, const zs_region *r));

/* host_pin_cuda.c (CUDA builds): page-lock [p, p+len) for the device / undo it. */
#ifdef ZS_HAVE_CUDA
zs_status zs_host_pin(void *p, size_t len);
void zs_host_unpin(void *p);
/* Initialises CUDA and the device's primary context (cudaInitDevice: the calling thread's current
   device is left as it was), so that no pinning is CUDA's first call: the first GPU run's arena
   test, which made none before its first allocation, hung there for 60 s. (A thread whose
   current device has no context yet still creates it at its first pinning: the engine makes its
   device current first.) */
zs_status zs_host_pin_prepare(int device);
#endif

#endif
