/* Pinned, NUMA-aware host memory for offloaded optimizer state and parameters.
 *
 * Every allocation is a region of its own: whole pages mapped on one NUMA node (the node nearest
 * the GPU, found with hwloc; see zs_host_arena_info for how it was chosen), bound before first
 * touch and registered with cudaHostRegister on CUDA builds so device<->host copies are
 * asynchronous DMA; freeing it unpins and unmaps it. So the arena reserves exactly
 * zs_host_charge(bytes) (base/host_charge.h) per live allocation and nothing else, which is what
 * the ledger books and the planner counts. The engine allocates its host state once, at commit,
 * so a mapping and a pinning per allocation cost nothing per step.
 *
 * `cur`/`peak` count the bytes callers asked for and have not freed; `reserved` the pages mapped.
 * `capacity` (0 = unlimited) caps `reserved`: a request that would pass it fails with
 * ZS_ERR_OUT_OF_MEMORY and a message naming the bytes asked, reserved, handed out and available.
 * All calls are thread-safe.
 *
 * Typical use (the engine's offload path):
 *   zs_host_arena *a; zs_pool *pool;
 *   zs_host_arena_create(dev, 0, 0, &a);
 *   zs_pool_create(0, zs_host_arena_node(a), &pool);   // workers on the same node
 *   zs_host_arena_alloc(a, bytes, &p); ... zs_host_arena_free(a, p);
 *   zs_host_arena_destroy(a);
 */
#ifndef ZS_OFFLOAD_HOST_ARENA_H
#define ZS_OFFLOAD_HOST_ARENA_H

#include <stddef.h>

#include "zshard.h"

typedef struct zs_host_arena zs_host_arena;

/* Flags for zs_host_arena_create. */
enum {
  /* Never pin (plain pageable memory), even on a CUDA device. Reported in the info string. */
  ZS_HOST_ARENA_NO_PIN = 1u << 0,
  /* If cudaHostRegister refuses (RLIMIT_MEMLOCK, driver limits), keep the memory unpinned and say
     so in the info string instead of failing the allocation. */
  ZS_HOST_ARENA_ALLOW_UNPINNED = 1u << 1,
  /* If binding to the node fails (mbind refused, e.g. by a container), use unbound memory and say
     so instead of failing. */
  ZS_HOST_ARENA_ALLOW_UNBOUND = 1u << 2,
  /* Bind even on a single-NUMA-node machine (where it changes nothing; used by tests). */
  ZS_HOST_ARENA_FORCE_BIND = 1u << 3,
};

/* Alignment of every pointer zs_host_arena_alloc returns. */
#define ZS_HOST_ARENA_ALIGN 64

/* Creates an arena for CUDA device `cuda_device` (-1 = the CPU device: unpinned, the calling
   thread's node). capacity: most bytes the arena may reserve, 0 = unlimited. Reserves nothing
   yet. Errors: ZS_ERR_INVALID_ARG (bad flags / NULL out / no such device), ZS_ERR_UNSUPPORTED
   (a CUDA device on a build without CUDA, hwloc refused), ZS_ERR_OUT_OF_MEMORY,
   ZS_ERR_DEVICE (CUDA errors). Nothing is left behind on failure. */
zs_status zs_host_arena_create(int cuda_device, size_t capacity, unsigned flags,
                               zs_host_arena **out);
/* *p = `bytes` of arena memory, page-aligned (so ZS_HOST_ARENA_ALIGN-aligned), contents
   unspecified; reserves zs_host_charge(bytes). bytes == 0 gives a unique one-page allocation.
   ZS_ERR_OUT_OF_MEMORY (capacity or OS exhausted; nothing allocated, *p = NULL), ZS_ERR_DEVICE
   (pinning failed without ALLOW_UNPINNED). */
zs_status zs_host_arena_alloc(zs_host_arena *a, size_t bytes, void **p);
/* Returns p, which must be a pointer zs_host_arena_alloc gave out and not yet freed (an interior
   or foreign pointer is refused with ZS_ERR_INVALID_ARG and nothing changes). NULL is a no-op. */
zs_status zs_host_arena_free(zs_host_arena *a, void *p);
/* Bytes handed out now (as asked), their peak, and bytes reserved from the OS (the live regions'
   whole pages: the sum of zs_host_charge over the live allocations). Any output may be NULL.
   ZS_ERR_INVALID_ARG for a NULL arena. */
zs_status zs_host_arena_stats(const zs_host_arena *a, size_t *cur, size_t *peak, size_t *reserved);
/* OS index of the NUMA node the memory is on (-1 for NULL). */
int zs_host_arena_node(const zs_host_arena *a);
/* 1 if the arena pins its regions (CUDA build, device >= 0, no NO_PIN, no pinning fallback taken).
 */
int zs_host_arena_pinned(const zs_host_arena *a);
/* One line: node and why it was chosen, binding, pinning, capacity, and any fallback taken. Owned
   by the arena; valid until the next call on it. */
const char *zs_host_arena_info(const zs_host_arena *a);
/* Frees every allocation still outstanding (unpins and unmaps its region). NULL is a no-op. No
 * other call on `a` may run concurrently. */
void zs_host_arena_destroy(zs_host_arena *a);

#endif
