/* jemalloc extent hooks of a host arena: every extent jemalloc uses comes from a region of
 * NUMA-bound (and, on CUDA builds, pinned) memory that this file obtains and returns.
 *
 * Policy, so pinned pages stay pinned and resident for the arena's life:
 *  - alloc:   a fresh region per call (bound before first touch, then pinned), within capacity;
 *  - dalloc / destroy: the extent's bytes go back to its region, and a region whose bytes have all
 *    come back is unpinned and unmapped. host_arena.c disables decay, so jemalloc only does this
 *    while the arena is destroyed (and for its own metadata);
 *  - commit:  nothing to do (regions are always committed);
 *  - decommit, purge_lazy, purge_forced: refused (return true), so jemalloc keeps the pages;
 *  - split:   allowed (both halves stay in one region);
 *  - merge:   allowed only inside one region, so each extent always lies in a single region
 *             (cudaHostRegister ranges and hwloc_free lengths stay per region). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "offload/host_arena_impl.h"

/* The arena a hook call belongs to: `hooks` is the first member of zs_host_arena. */
static zs_host_arena *zs_arena_of(extent_hooks_t *h) {
  return (zs_host_arena *)(void *)h;
}

/* Region containing address p, or NULL. Caller holds hook_mu. */
static zs_region *zs_region_find(zs_host_arena *a, const void *p) {
  for (zs_region *r = a->regions; r; r = r->next)
    if ((const char *)p >= r->use && (const char *)p < r->use + r->use_len) return r;
  return NULL;
}

/* Unpins and unmaps one region (already unlinked). Caller holds hook_mu. */
static void zs_region_release(zs_host_arena *a, zs_region *r) {
#ifdef ZS_HAVE_CUDA
  if (r->pinned) zs_host_unpin(r->base);
#endif
  hwloc_free(a->topo, r->base, r->len);
  a->reserved -= r->len;
  free(r);
}

/* Maps `len` bytes: bound to the arena's node, or plain when binding is off or refused (and
   allowed). NULL with hook_rc / hook_msg set on failure. Caller holds hook_mu. */
static void *zs_region_map(zs_host_arena *a, size_t len) {
  if (!a->bind) return hwloc_alloc(a->topo, len);
  void *p = hwloc_alloc_membind(a->topo, len, a->place.nodeset, HWLOC_MEMBIND_BIND,
                                HWLOC_MEMBIND_STRICT | HWLOC_MEMBIND_BYNODESET);
  if (p || errno == ENOMEM) return p;
  int e = errno;
  if (a->flags & ZS_HOST_ARENA_ALLOW_UNBOUND) {
    snprintf(a->fallback, sizeof a->fallback,
             "binding to node %d refused (%s): memory is not bound (ALLOW_UNBOUND)", a->place.node,
             strerror(e));
    a->bind = 0;
    return hwloc_alloc(a->topo, len);
  }
  a->hook_rc = ZS_ERR_UNSUPPORTED;
  snprintf(a->hook_msg, sizeof a->hook_msg,
           "the OS refused to bind memory to NUMA node %d (%s): run where mbind is allowed or "
           "create the arena with ZS_HOST_ARENA_ALLOW_UNBOUND",
           a->place.node, strerror(e));
  errno = e;
  return NULL;
}

/* Pins a new region if the arena pins; on refusal either records the fallback or fails.
   Returns 0 on success. Caller holds hook_mu. */
static int zs_region_pin(zs_host_arena *a, zs_region *r) {
#ifdef ZS_HAVE_CUDA
  if (!a->want_pin) return 0;
  if (zs_host_pin(r->base, r->len) == ZS_OK) {
    r->pinned = 1;
    a->any_pinned = 1;
    return 0;
  }
  if (a->flags & ZS_HOST_ARENA_ALLOW_UNPINNED) {
    snprintf(a->fallback, sizeof a->fallback,
             "pinning refused, memory is unpinned "
             "(ALLOW_UNPINNED): %.120s",
             zs_last_error());
    a->want_pin = 0;
    return 0;
  }
  a->hook_rc = ZS_ERR_DEVICE;
  snprintf(a->hook_msg, sizeof a->hook_msg, "%s", zs_last_error());
  return -1;
#else
  (void)a;
  (void)r;
  return 0;
#endif
}

/* extent alloc: a new region of `size` bytes aligned to `alignment`. Never at a fixed address. */
static void *zs_hook_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t alignment,
                           bool *zero, bool *commit, unsigned arena_ind) {
  zs_host_arena *a = zs_arena_of(h);
  if (new_addr) return NULL; /* in-place growth: regions are separate mappings */
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t slack = alignment > page ? alignment - page : 0;
  if (size > SIZE_MAX - slack - page) return NULL;
  size_t len = (size + slack + page - 1) / page * page;
  pthread_mutex_lock(&a->hook_mu);
  void *ret = NULL;
  zs_region *r = NULL;
  if (a->capacity && (len > a->capacity || a->reserved > a->capacity - len)) {
    a->hook_rc = ZS_ERR_OUT_OF_MEMORY;
    snprintf(a->hook_msg, sizeof a->hook_msg,
             "a new region of %zu bytes would exceed the capacity: %zu of %zu bytes reserved, "
             "%zu available",
             len, a->reserved, a->capacity, a->capacity - a->reserved);
    goto out;
  }
  r = calloc(1, sizeof *r);
  if (!r) {
    a->hook_rc = ZS_ERR_OUT_OF_MEMORY;
    snprintf(a->hook_msg, sizeof a->hook_msg, "no memory for a region record");
    goto out;
  }
  r->len = len;
  r->base = zs_region_map(a, len);
  if (!r->base) {
    if (a->hook_rc == ZS_OK) {
      a->hook_rc = ZS_ERR_OUT_OF_MEMORY;
      snprintf(a->hook_msg, sizeof a->hook_msg,
               "the OS refused %zu more bytes on NUMA node %d (%s); %zu bytes reserved so far", len,
               a->place.node, strerror(errno), a->reserved);
    }
    goto out;
  }
  if (zs_region_pin(a, r) != 0) {
    hwloc_free(a->topo, r->base, r->len);
    goto out;
  }
  uintptr_t b = (uintptr_t)r->base;
  r->use = (char *)((b + alignment - 1) / alignment * alignment);
  r->use_len = size;
  r->out = size;
  r->next = a->regions;
  a->regions = r;
  a->reserved += len;
  if (a->reserved > a->peak_reserved) a->peak_reserved = a->reserved;
  if (*zero) memset(r->use, 0, size); /* memory from the OS is zero, but do not rely on it */
  *commit = true;
  ret = r->use;
  r = NULL;
out:
  free(r);
  pthread_mutex_unlock(&a->hook_mu);
  return ret;
}

/* The bytes [addr, addr+size) come back from jemalloc; frees the region once all have. */
static void zs_hook_return(zs_host_arena *a, void *addr, size_t size) {
  pthread_mutex_lock(&a->hook_mu);
  zs_region *r = zs_region_find(a, addr);
  if (r) { /* r is NULL only if jemalloc returned memory it never got from us: ignore */
    r->out -= size < r->out ? size : r->out;
    if (r->out == 0) {
      zs_region **pp = &a->regions;
      while (*pp != r)
        pp = &(*pp)->next;
      *pp = r->next;
      zs_region_release(a, r);
    }
  }
  pthread_mutex_unlock(&a->hook_mu);
}

/* extent dalloc: accept the extent back (false = done). */
static bool zs_hook_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed,
                           unsigned arena_ind) {
  zs_hook_return(zs_arena_of(h), addr, size);
  return false;
}

/* extent destroy: same as dalloc (jemalloc's final word on a retained extent). */
static void zs_hook_destroy(extent_hooks_t *h, void *addr, size_t size, bool committed,
                            unsigned arena_ind) {
  zs_hook_return(zs_arena_of(h), addr, size);
}

/* extent commit: regions are always committed. */
static bool zs_hook_commit(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
                           unsigned arena_ind) {
  return false;
}

/* extent decommit / purge: refused, so pinned pages are never given back while the arena lives. */
static bool zs_hook_refuse(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
                           unsigned arena_ind) {
  return true;
}

/* extent split: both halves stay in the same region. */
static bool zs_hook_split(extent_hooks_t *h, void *addr, size_t size, size_t size_a, size_t size_b,
                          bool committed, unsigned arena_ind) {
  return false;
}

/* extent merge: only two pieces of one region (false = merged). */
static bool zs_hook_merge(extent_hooks_t *h, void *addr_a, size_t size_a, void *addr_b,
                          size_t size_b, bool committed, unsigned arena_ind) {
  zs_host_arena *a = zs_arena_of(h);
  pthread_mutex_lock(&a->hook_mu);
  zs_region *ra = zs_region_find(a, addr_a), *rb = zs_region_find(a, addr_b);
  pthread_mutex_unlock(&a->hook_mu);
  return !(ra && ra == rb);
}

void zs_host_arena_hooks_init(zs_host_arena *a) {
  a->hooks.alloc = zs_hook_alloc;
  a->hooks.dalloc = zs_hook_dalloc;
  a->hooks.destroy = zs_hook_destroy;
  a->hooks.commit = zs_hook_commit;
  a->hooks.decommit = zs_hook_refuse;
  a->hooks.purge_lazy = zs_hook_refuse;
  a->hooks.purge_forced = zs_hook_refuse;
  a->hooks.split = zs_hook_split;
  a->hooks.merge = zs_hook_merge;
}

void zs_host_arena_release_regions(zs_host_arena *a) {
  pthread_mutex_lock(&a->hook_mu);
  while (a->regions) {
    zs_region *r = a->regions;
    a->regions = r->next;
    zs_region_release(a, r);
  }
  pthread_mutex_unlock(&a->hook_mu);
}
