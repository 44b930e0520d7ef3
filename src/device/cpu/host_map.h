/* The CPU device's memory: engine buffers are host memory. Small ones come from jemalloc; each
 * large one is a mapping of its own, sized to the page, returned to the kernel when freed. So the
 * address space a buffer takes is its bytes rounded to the page, not an allocator's size class
 * (up to 25% more, and a page more for cache-oblivious placement) nor a share of the virtual
 * memory jemalloc retains (opt.retain, on by default on Linux, grows its mappings geometrically
 * and never unmaps them): under RLIMIT_AS the engine's buffers then cost what the ledger and the
 * planner count them at, plus at most one page each. Not for use outside src/device. */
#ifndef ZS_DEVICE_CPU_HOST_MAP_H
#define ZS_DEVICE_CPU_HOST_MAP_H

#include <stddef.h>

/* Buffers of at least this many bytes get a mapping of their own (below: jemalloc). */
#define ZS_CPU_MAP_MIN ((size_t)64 << 10)

/* bytes (> 0) of host memory, 256-byte aligned, uninitialised (a mapping's pages are zero); NULL
   when the system refuses (the caller reports it). Every buffer carries a 256-byte header in front
   of it (what to free and how). Thread-safe. */
void *zs_cpu_alloc(size_t bytes);
/* Frees a buffer of zs_cpu_alloc (NULL: no-op). Thread-safe. */
void zs_cpu_free(void *p);

#endif
