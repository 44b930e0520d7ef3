/* The live-pointer table of a host arena: lets zs_host_arena_free refuse pointers it never handed
 * out (jemalloc would corrupt itself on them) and remember each allocation's asked-for size for
 * the byte accounting. Open addressing with linear probing; freed slots become tombstones and the
 * table is rebuilt when live + tombstones pass 3/4 of it. */
#include <stdint.h>
#include <stdlib.h>

#include "offload/host_arena_impl.h"

#define ZS_LIVE_TOMB SIZE_MAX

/* Slot of pointer p in a table of power-of-two capacity `cap`. */
static size_t zs_live_hash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

/* Rebuilds into a table of `cap` slots (dropping tombstones). 0 ok, -1 out of memory. */
static int zs_live_rehash(zs_live_table *t, size_t cap) {
  void **keys = calloc(cap, sizeof *keys);
  size_t *sizes = calloc(cap, sizeof *sizes);
  if (!keys || !sizes) {
    free(keys);
    free(sizes);
    return -1;
  }
  size_t used = 0;
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->keys[i] || t->sizes[i] == ZS_LIVE_TOMB) continue;
    size_t j = zs_live_hash(t->keys[i], cap);
    while (keys[j])
      j = (j + 1) & (cap - 1);
    keys[j] = t->keys[i];
    sizes[j] = t->sizes[i];
    used++;
  }
  free(t->keys);
  free(t->sizes);
  t->keys = keys;
  t->sizes = sizes;
  t->cap = cap;
  t->used = used;
  return 0;
}

int zs_live_put(zs_live_table *t, void *p, size_t size) {
  if ((t->used + 1) * 4 > t->cap * 3) {
    size_t live = 0;
    for (size_t i = 0; i < t->cap; i++)
      live += t->keys[i] && t->sizes[i] != ZS_LIVE_TOMB;
    size_t cap = t->cap ? t->cap : 64;
    while ((live + 1) * 2 > cap)
      cap *= 2;
    if (zs_live_rehash(t, cap) != 0) return -1;
  }
  size_t j = zs_live_hash(p, t->cap);
  while (t->keys[j] && t->sizes[j] != ZS_LIVE_TOMB)
    j = (j + 1) & (t->cap - 1);
  if (!t->keys[j]) t->used++;
  t->keys[j] = p;
  t->sizes[j] = size;
  return 0;
}

int zs_live_take(zs_live_table *t, void *p, size_t *size) {
  if (!t->cap) return -1;
  for (size_t j = zs_live_hash(p, t->cap); t->keys[j]; j = (j + 1) & (t->cap - 1)) {
    if (t->keys[j] == p && t->sizes[j] != ZS_LIVE_TOMB) {
      *size = t->sizes[j];
      t->sizes[j] = ZS_LIVE_TOMB;
      return 0;
    }
  }
  return -1;
}

void zs_live_clear(zs_live_table *t) {
  free(t->keys);
  free(t->sizes);
  t->keys = NULL;
  t->sizes = NULL;
  t->cap = t->used = 0;
}
