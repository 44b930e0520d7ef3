/* Host arena API: a private jemalloc arena over NUMA-bound, pinned regions (see host_arena.h;
 * the regions and extent hooks are in host_arena_hooks.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/error.h"
#include "offload/host_arena_impl.h"

#define ZS_HOST_ARENA_FLAGS                                                                        \
  (ZS_HOST_ARENA_NO_PIN | ZS_HOST_ARENA_ALLOW_UNPINNED | ZS_HOST_ARENA_ALLOW_UNBOUND |             \
   ZS_HOST_ARENA_FORCE_BIND)

/* Largest step by which jemalloc grows the arena's reserved memory beyond a request. */
#define ZS_HOST_ARENA_GROW_LIMIT ((size_t)4 << 20)

/* Frees whatever zs_host_arena_create set up so far (also the tail of destroy). */
static void zs_host_arena_teardown(zs_host_arena *a) {
  if (a->have_ind) {
    char name[64];
    snprintf(name, sizeof name, "arena.%u.destroy", a->ind);
    mallctl(name, NULL, NULL, NULL, 0); /* frees outstanding allocations; returns extents */
  }
  zs_host_arena_release_regions(a); /* what jemalloc kept (e.g. its metadata) */
  zs_live_clear(&a->live);
  zs_numa_place_free(&a->place);
  if (a->topo) hwloc_topology_destroy(a->topo);
  pthread_mutex_destroy(&a->mu);
  pthread_mutex_destroy(&a->hook_mu);
  free(a);
}

/* Creates the jemalloc arena with our hooks and turns off decay, so free pages are never purged
   (purging is refused anyway; this also keeps jemalloc from trying on every call). */
static zs_status zs_host_arena_jemalloc(zs_host_arena *a) {
  extent_hooks_t *hp = &a->hooks;
  size_t sz = sizeof a->ind;
  int e = mallctl("arenas.create", &a->ind, &sz, &hp, sizeof hp);
  if (e != 0)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "jemalloc refused to create an arena (mallctl "
                  "arenas.create: %s)",
                  strerror(e));
  a->have_ind = 1;
  const char *knobs[2] = {"dirty_decay_ms", "muzzy_decay_ms"};
  for (int i = 0; i < 2; i++) {
    char name[64];
    ssize_t never = -1;
    snprintf(name, sizeof name, "arena.%u.%s", a->ind, knobs[i]);
    e = mallctl(name, NULL, NULL, &never, sizeof never);
    if (e != 0)
      return zs_err(ZS_ERR_UNSUPPORTED, "jemalloc: setting %s failed (%s)", name, strerror(e));
  }
  /* jemalloc grows an arena by ever larger regions; capping the growth step keeps each new region
     close to the request, so pinned memory tracks demand (a region per large allocation). */
  size_t grow = ZS_HOST_ARENA_GROW_LIMIT;
  char name[64];
  snprintf(name, sizeof name, "arena.%u.retain_grow_limit", a->ind);
  e = mallctl(name, NULL, NULL, &grow, sizeof grow);
  if (e != 0)
    return zs_err(ZS_ERR_UNSUPPORTED, "jemalloc: setting %s failed (%s)", name, strerror(e));
  a->mallocx_flags =
      MALLOCX_ARENA(a->ind) | MALLOCX_TCACHE_NONE | MALLOCX_ALIGN(ZS_HOST_ARENA_ALIGN);
  return ZS_OK;
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
  pthread_mutex_init(&a->hook_mu, NULL);
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
    snprintf(a->fallback, sizeof a->fallback,
             "pinning refused, memory is unpinned "
             "(ALLOW_UNPINNED): %.120s",
             zs_last_error());
    a->want_pin = 0;
  }
#endif
  zs_host_arena_hooks_init(a);
  ZS_CHECK_GOTO(zs_host_arena_jemalloc(a), rc, fail);
  *out = a;
  return ZS_OK;
fail:
  zs_host_arena_teardown(a);
  return zs_err_wrap(rc, "zs_host_arena_create");
}

zs_status zs_host_arena_alloc(zs_host_arena *a, size_t bytes, void **p) {
  if (!a || !p) return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_alloc: arena and p must be set");
  *p = NULL;
  pthread_mutex_lock(&a->mu);
  zs_status rc = ZS_OK;
  pthread_mutex_lock(&a->hook_mu);
  a->hook_rc = ZS_OK;
  size_t reserved = a->reserved;
  pthread_mutex_unlock(&a->hook_mu);
  if (a->capacity && bytes > a->capacity) { /* cannot fit however jemalloc packs it */
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY,
                "host arena: cannot allocate %zu bytes: larger than the arena's capacity of %zu "
                "bytes (%zu handed out, %zu reserved); create it with a larger capacity",
                bytes, a->capacity, a->cur, reserved);
    goto out;
  }
  void *q = mallocx(bytes ? bytes : 1, a->mallocx_flags);
  if (!q) {
    pthread_mutex_lock(&a->hook_mu);
    zs_status why = a->hook_rc == ZS_OK ? ZS_ERR_OUT_OF_MEMORY : a->hook_rc;
    char msg[sizeof a->hook_msg];
    snprintf(msg, sizeof msg, "%s",
             a->hook_rc == ZS_OK ? "jemalloc could not serve it" : a->hook_msg);
    pthread_mutex_unlock(&a->hook_mu);
    rc = zs_err(why, "host arena: cannot allocate %zu bytes: %s; %zu bytes handed out", bytes, msg,
                a->cur);
    goto out;
  }
  if (zs_live_put(&a->live, q, bytes) != 0) {
    dallocx(q, MALLOCX_TCACHE_NONE);
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "host arena: no memory to track allocation %zu", bytes);
    goto out;
  }
  a->cur += bytes;
  if (a->cur > a->peak) a->peak = a->cur;
  *p = q;
out:
  pthread_mutex_unlock(&a->mu);
  return rc;
}

zs_status zs_host_arena_free(zs_host_arena *a, void *p) {
  if (!p) return ZS_OK;
  if (!a) return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_free: arena is NULL");
  pthread_mutex_lock(&a->mu);
  size_t size;
  zs_status rc = ZS_OK;
  if (zs_live_take(&a->live, p, &size) != 0) {
    rc = zs_err(ZS_ERR_INVALID_ARG,
                "zs_host_arena_free: %p was not handed out by this arena "
                "or was already freed: pass the exact pointer "
                "zs_host_arena_alloc returned",
                p);
  } else {
    dallocx(p, MALLOCX_TCACHE_NONE);
    a->cur -= size;
  }
  pthread_mutex_unlock(&a->mu);
  return rc;
}

zs_status zs_host_arena_stats(const zs_host_arena *a, size_t *cur, size_t *peak, size_t *reserved) {
  if (!a) return zs_err(ZS_ERR_INVALID_ARG, "zs_host_arena_stats: arena is NULL");
  zs_host_arena *m = (zs_host_arena *)a; /* the mutexes are not part of the value */
  pthread_mutex_lock(&m->mu);
  if (cur) *cur = a->cur;
  if (peak) *peak = a->peak;
  pthread_mutex_lock(&m->hook_mu);
  if (reserved) *reserved = a->reserved;
  pthread_mutex_unlock(&m->hook_mu);
  pthread_mutex_unlock(&m->mu);
  return ZS_OK;
}

int zs_host_arena_node(const zs_host_arena *a) {
  return a ? a->place.node : -1;
}

int zs_host_arena_pinned(const zs_host_arena *a) {
  if (!a) return 0;
  zs_host_arena *m = (zs_host_arena *)a;
  pthread_mutex_lock(&m->hook_mu);
  int pinned = a->want_pin; /* cleared if a pinning fallback was taken */
  pthread_mutex_unlock(&m->hook_mu);
  return pinned;
}

const char *zs_host_arena_info(const zs_host_arena *a) {
  if (!a) return "";
  zs_host_arena *m = (zs_host_arena *)a;
  pthread_mutex_lock(&m->mu);
  pthread_mutex_lock(&m->hook_mu);
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
  snprintf(m->info, sizeof m->info, "NUMA node %d (%s); %s; %s; %s; jemalloc arena %u%s%s",
           a->place.node, a->place.how, bind, pin, cap, a->ind, a->fallback[0] ? "; " : "",
           a->fallback);
  pthread_mutex_unlock(&m->hook_mu);
  pthread_mutex_unlock(&m->mu);
  return a->info;
}

void zs_host_arena_destroy(zs_host_arena *a) {
  if (a) zs_host_arena_teardown(a);
}
