/* The regions of a host arena: each allocation is one mapping of whole pages of its own, bound to
 * the arena's NUMA node before first touch (hwloc_alloc_membind) and, on CUDA builds, pinned
 * (cudaHostRegister), and unpinned and unmapped when it is freed. One region per allocation keeps
 * the arena's reservation equal to the sum of its live allocations' zs_host_charge: nothing is
 * retained, split or rounded to a size class, and no allocator metadata lives in pinned memory. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/huge_pages.h"
#include "offload/host_arena_impl.h"

/* Maps `len` bytes into *out: bound to the arena's node, or plain when binding is off or refused
   (and allowed). */
static zs_status region_map(zs_host_arena *a, size_t len, void **out) {
  void *p;
  *out = NULL;
  if (!a->bind) {
    p = hwloc_alloc(a->topo, len);
  } else {
    p = hwloc_alloc_membind(a->topo, len, a->place.nodeset, HWLOC_MEMBIND_BIND,
                            HWLOC_MEMBIND_STRICT | HWLOC_MEMBIND_BYNODESET);
    if (!p && errno != ENOMEM) {
      const int e = errno;
      if (!(a->flags & ZS_HOST_ARENA_ALLOW_UNBOUND))
        return zs_err(ZS_ERR_UNSUPPORTED,
                      "the OS refused to bind memory to NUMA node %d (%s): run where mbind is "
                      "allowed or create the arena with ZS_HOST_ARENA_ALLOW_UNBOUND",
                      a->place.node, strerror(e));
      snprintf(a->fallback, sizeof a->fallback,
               "binding to node %d refused (%s): memory is not bound (ALLOW_UNBOUND)",
               a->place.node, strerror(e));
      a->bind = 0;
      p = hwloc_alloc(a->topo, len);
    }
  }
  if (!p)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "the OS refused %zu more bytes on NUMA node %d (%s)", len,
                  a->place.node, strerror(errno));
  zs_advise_huge_pages(p, len);
  *out = p;
  return ZS_OK;
}

/* Pins a new region if the arena pins; a refusal either falls back (ALLOW_UNPINNED: the arena
   stops pinning, and says so) or fails with the pinning's message. */
static zs_status region_pin(zs_host_arena *a, void *p, zs_region *r) {
#ifdef ZS_HAVE_CUDA
  if (!a->want_pin) return ZS_OK;
  const zs_status rc = zs_host_pin(p, r->len);
  if (rc == ZS_OK) {
    r->pinned = 1;
    return ZS_OK;
  }
  if (!(a->flags & ZS_HOST_ARENA_ALLOW_UNPINNED)) return rc;
  zs_host_arena_note_unpinned(a);
  return ZS_OK;
#else
  (void)a;
  (void)p;
  (void)r;
  return ZS_OK;
#endif
}

zs_status zs_region_open(zs_host_arena *a, zs_region *r, void **p) {
  zs_status rc = region_map(a, r->len, p);
  if (rc != ZS_OK) return rc;
  rc = region_pin(a, *p, r);
  if (rc != ZS_OK) {
    hwloc_free(a->topo, *p, r->len);
    *p = NULL;
  }
  return rc;
}

void zs_region_close(zs_host_arena *a, void *p, const zs_region *r) {
#ifdef ZS_HAVE_CUDA
  if (r->pinned) zs_host_unpin(p);
#endif
  hwloc_free(a->topo, p, r->len);
}
