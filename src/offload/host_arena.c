/* Host arena API: one NUMA-bound, pinned region per allocation (see host_arena.h; regions are
 * mapped in host_arena_region.c, tracked in host_arena_live.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/host_charge.h"
#include "offload/host_arena_impl.h"

#define ZS_HOST_ARENA_FLAGS                                                                        \
  (ZS_HOST_ARENA_NO_PIN | ZS_HOST_ARENA_ALLOW_UNPINNED | ZS_HOST_ARENA_ALLOW_UNBOUND |             \
   ZS_HOST_ARENA_FORCE_BIND)

void zs_host_arena_note_unpinned(zs_host_arena *a) {
  snprintf(a->fallback, sizeof a->fallback,
           "pinning refused, memory is unpinned (ALLOW_UNPINNED): %.120s", zs_last_error());
  a->want_pin = 0;
}

/* Unmaps one region and takes it off the books (a drain's callback). */
static void release(zs_host_arena *a, void *p, const zs_region *r) {
  zs_region_close(a, p, r);
  a->reserved -= r->len;
  a->cur -= r->bytes;
}

/* Frees whatever zs_host_arena_create set up so far (also the tail of destroy). */
static void zs_host_arena_teardown(zs_host_arena *a) {
  zs_live_drain(&a->live, a, release);
  zs_numa_place_free(&a->place);
  if (a->topo) hwloc_topology_destroy(a->topo);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

zs_status zs_host_arena_create(int cuda_device, size_t capacity, unsigned flags,
                               zs_host_arena **out) {
  if (!out) return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_create: out is NULL");
  *out = NULL;
  if (flags & ~(unsigned)ZS_HOST_ARENA_FLAGS)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_create: unknown flags 0x%x",
                  flags & ~(unsigned)ZS_HOST_ARENA_FLAGS);
  if (cuda_device < -1)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_host_arena_create: device %d: use -1 (CPU) or a CUDA "
                  "ordinal",
                  cuda_device);
#ifndef ZS_HAVE_CUDA
  if (cuda_device >= 0)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_host_arena_create: CUDA device %d, but zshard was "
                  "built without CUDA: use -1 (CPU device)",
                  cuda_device);
#endif
  zs_host_arena *a = calloc(1, sizeof *a);
  if (!a) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_host_arena_create: %zu bytes", sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  a->flags = flags;
  a->cuda_device = cuda_device;
  a->capacity = capacity;
  zs_status rc;
  ZS_CHECK_GOTO(zs_topo_open(&a->topo), rc, fail);
  ZS_CHECK_GOTO(zs_numa_place_for_device(a->topo, cuda_device, &a->place), rc, fail);
  a->bind = a->place.nnodes > 1 || (flags & ZS_HOST_ARENA_FORCE_BIND);
  a->want_pin = cuda_device >= 0 && !(flags & ZS_HOST_ARENA_NO_PIN);
#ifdef ZS_HAVE_CUDA
  if (a->want_pin && (rc = zs_host_pin_prepare(cuda_device)) != ZS_OK) {
    if (!(flags & ZS_HOST_ARENA_ALLOW_UNPINNED)) goto fail;
    zs_host_arena_note_unpinned(a);
  }
#endif
  *out = a;
  return ZS_OK;
fail:
  zs_host_arena_teardown(a);
  return zs_err_wrap(rc, "zs_host_arena_create");
}

zs_status zs_host_arena_alloc(zs_host_arena *a, size_t bytes, void **p) {
  if (!a || !p) return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_alloc: arena and p must be set");
  *p = NULL;
  zs_region r = {bytes, zs_host_charge(bytes), 0};
  pthread_mutex_lock(&a->mu);
  zs_status rc = ZS_OK;
  if (a->capacity && (r.len > a->capacity || a->reserved > a->capacity - r.len)) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY,
                "host arena: cannot allocate %zu bytes (%zu in whole pages): the arena's capacity "
                "is %zu bytes, %zu reserved, %zu available (%zu handed out); create it with a "
                "larger capacity",
                bytes, r.len, a->capacity, a->reserved,
                a->reserved < a->capacity ? a->capacity - a->reserved : 0, a->cur);
    goto out;
  }
  void *q = NULL;
  if ((rc = zs_region_open(a, &r, &q)) != ZS_OK) {
    rc =
        zs_err_wrap(rc, "host arena: cannot allocate %zu bytes (%zu reserved)", bytes, a->reserved);
    goto out;
  }
  if (zs_live_put(&a->live, q, r) != 0) {
    zs_region_close(a, q, &r);
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "host arena: no memory to track allocation %zu", bytes);
    goto out;
  }
  a->cur += bytes;
  a->reserved += r.len;
  if (a->cur > a->peak) a->peak = a->cur;
  if (a->reserved > a->peak_rsv) a->peak_rsv = a->reserved;
  *p = q;
out:
  pthread_mutex_unlock(&a->mu);
  return rc;
}

zs_status zs_host_arena_free(zs_host_arena *a, void *p) {
  if (!p) return ZS_OK;
  if (!a) return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_free: arena is NULL");
  pthread_mutex_lock(&a->mu);
  zs_region r;
  zs_status rc = ZS_OK;
  if (zs_live_take(&a->live, p, &r) != 0)
    rc = zs_err(ZS_ERR_INVALID_ARG,
                "zs_host_arena_free: %p was not handed out by this arena or was already freed: "
                "pass the exact pointer zs_host_arena_alloc returned",
                p);
  else
    release(a, p, &r);
  pthread_mutex_unlock(&a->mu);
  return rc;
}

zs_status zs_host_arena_stats(const zs_host_arena *a, size_t *cur, size_t *peak, size_t *reserved) {
  if (!a) return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_stats: arena is NULL");
  zs_host_arena *m = (zs_host_arena *)a; /* the mutexes are not part of the value */
  pthread_mutex_lock(&m->mu);
  if (cur) *cur = a->cur;
  if (peak) *peak = a->peak;
  if (reserved) *reserved = a->reserved;
  pthread_mutex_unlock(&m->mu);
  return ZS_OK;
}

int zs_host_arena_node(const zs_host_arena *a) {
  return a ? a->place.node : -1;
}

int zs_host_arena_pinned(const zs_host_arena *a) {
  if (!a) return 0;
  zs_host_arena *m = (zs_host_arena *)a;
  pthread_mutex_lock(&m->mu);
  int pinned = a->want_pin; /* cleared if a pinning fallback was taken */
  pthread_mutex_unlock(&m->mu);
  return pinned;
}

const char *zs_host_arena_info(const zs_host_arena *a) {
  if (!a) return "";
  zs_host_arena *m = (zs_host_arena *)a;
  pthread_mutex_lock(&m->mu);
  char bind[96], pin[96], cap[64];
  if (a->bind)
    snprintf(bind, sizeof bind, "memory bound to node %d", a->place.node);
  else if (a->place.nnodes <= 1)
    snprintf(bind, sizeof bind, "not bound (single NUMA node)");
  else
    snprintf(bind, sizeof bind, "not bound");
  if (a->cuda_device < 0)
    snprintf(pin, sizeof pin, "unpinned (CPU device)");
  else if (a->flags & ZS_HOST_ARENA_NO_PIN)
    snprintf(pin, sizeof pin, "unpinned (NO_PIN)");
  else if (a->want_pin)
    snprintf(pin, sizeof pin, "pinned with cudaHostRegister for GPU %d", a->cuda_device);
  else
    snprintf(pin, sizeof pin, "unpinned");
  if (a->capacity)
    snprintf(cap, sizeof cap, "capacity %zu bytes", a->capacity);
  else
    snprintf(cap, sizeof cap, "capacity unlimited");
  snprintf(m->info, sizeof m->info, "NUMA node %d (%s); %s; %s; %s; a region per allocation%s%s",
           a->place.node, a->place.how, bind, pin, cap, a->fallback[0] ? "; " : "", a->fallback);
  pthread_mutex_unlock(&m->mu);
  return a->info;
}

void zs_host_arena_destroy(zs_host_arena *a) {
  if (a) zs_host_arena_teardown(a);
}
