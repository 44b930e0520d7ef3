/* The engine's memory owner: every buffer the engine allocates goes through one zs_mem, which
 * books it in the ledger (by category) and takes it from the device (zs_dev) or from the host
 * tier (the offload arena, attached as a zs_mem_host). It also owns the rule that keeps a failed
 * engine from a use-after-free: once broken (zs_mem_break, called by the engine's one failure
 * function), a free is deferred, because an abandoned collective may still write into the buffer;
 * zs_mem_drain performs the deferred frees once the collectives are torn down. No caller has to
 * remember to mark anything before a free. Not thread-safe (the engine's calls are one thread's).
 */
#ifndef ZS_MEM_MEM_H
#define ZS_MEM_MEM_H

#include <stddef.h>

#include "device/device.h"
#include "mem/ledger.h"
#include "zshard.h"

/* A free waiting for the collectives to be torn down. */
typedef struct {
  void *p;
  zs_mem_cat cat;
  size_t bytes;
  int host; /* from the host tier */
} zs_mem_deferred;

/* The host tier's allocator (the engine attaches its offload arena): alloc gives bytes of host
   memory or fails with a message; free returns what alloc gave; charge (NULL: bytes as asked) is
   what an allocation of `bytes` holds, which the ledger books (the arena: whole pages). */
typedef struct {
  zs_status (*alloc)(void *impl, size_t bytes, void **p);
  void (*free)(void *impl, void *p);
  void *impl;
  size_t (*charge)(size_t bytes);
} zs_mem_host;

typedef struct {
  zs_ledger ledger; /* what is allocated now (deferred frees included), and peaks */
  zs_dev *dev;      /* the device allocator (not owned) */
  zs_mem_host host; /* the host tier (offload); alloc NULL when there is none */
  int broken;       /* set by zs_mem_break: frees are deferred until zs_mem_drain */
  zs_mem_deferred *deferred;
  int ndeferred, cap_deferred;
} zs_mem;

/* An empty owner allocating from dev (a host tier is attached later, by setting m->host). */
void zs_mem_init(zs_mem *m, zs_dev *dev);

/* bytes of device memory (ordered on stream; NULL: synchronous) booked in category c. */
zs_status zs_mem_alloc(zs_mem *m, zs_mem_cat c, size_t bytes, void **p, void *stream);
/* Frees (or, broken, defers) device memory from zs_mem_alloc; p NULL is a no-op. */
void zs_mem_free(zs_mem *m, zs_mem_cat c, void *p, size_t bytes, void *stream);
/* bytes of host-tier memory booked as host_pinned at what the tier holds for it (its charge);
   the host allocator's error (wrapped) when it
   refuses, ZS_ERR_STATE when there is no host tier. */
zs_status zs_mem_alloc_host(zs_mem *m, size_t bytes, void **p);
/* Frees (or, broken, defers) host-tier memory from zs_mem_alloc_host; p NULL is a no-op. */
void zs_mem_free_host(zs_mem *m, void *p, size_t bytes);

/* Whether status s, returned by an operation that used a buffer, means that an abandoned
   collective may still write into it (a communication, timeout or device failure). */
int zs_mem_may_be_written(zs_status s);
/* zs_mem_free of a buffer the operation that returned s used: deferred as well when s says a
   collective may still write into it (zs_mem_may_be_written), broken or not. */
void zs_mem_free_after(zs_mem *m, zs_status s, zs_mem_cat c, void *p, size_t bytes, void *stream);

/* From now on every free is deferred (the engine failed: its groups are aborted). */
void zs_mem_break(zs_mem *m);
/* Performs every deferred free (in the order they were asked for) and ends the deferring: call
   once nothing can write into the buffers any more (the collectives are destroyed). */
void zs_mem_drain(zs_mem *m);

#endif
