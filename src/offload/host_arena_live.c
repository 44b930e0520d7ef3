/* The live-region table of a host arena: lets zs_host_arena_free refuse pointers it never handed
 * out and find each allocation's region. Open addressing with linear probing; freed slots become
 * tombstones (len 0) and the table is rebuilt when live + tombstones pass 3/4 of it. */
#include <stdint.h>
#include <stdlib.h>

#include "offload/host_arena_impl.h"

/* Slot of pointer p in a table of power-of-two capacity `cap`. */
static size_t zs_live_hash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

/* A slot holding a live region. */
static int zs_live_at(const zs_live_table *t, size_t i) {
  return t->keys[i] && t->vals[i].len != 0;
}

/* Rebuilds into a table of `cap` slots (dropping tombstones). 0 ok, -1 out of memory. */
static int zs_live_rehash(zs_live_table *t, size_t cap) {
  void **keys = calloc(cap, sizeof *keys);
  zs_region *vals = calloc(cap, sizeof *vals);
  if (!keys || !vals) {
    free(keys);
    free(vals);
    return -1;
  }
  size_t used = 0;
  for (size_t i = 0; i < t->cap; i++) {
    if (!zs_live_at(t, i)) continue;
    size_t j = zs_live_hash(t->keys[i], cap);
    while (keys[j])
      j = (j + 1) & (cap - 1);
    keys[j] = t->keys[i];
    vals[j] = t->vals[i];
    used++;
  }
  free(t->keys);
  free(t->vals);
  t->keys = keys;
  t->vals = vals;
  t->cap = cap;
  t->used = used;
  return 0;
}

int zs_live_put(zs_live_table *t, void *p, zs_region r) {
  if ((t->used + 1) * 4 > t->cap * 3) {
    size_t live = 0;
    for (size_t i = 0; i < t->cap; i++)
      live += (size_t)zs_live_at(t, i);
    size_t cap = t->cap ? t->cap : 64;
    while ((live + 1) * 2 > cap)
      cap *= 2;
    if (zs_live_rehash(t, cap) != 0) return -1;
  }
  size_t j = zs_live_hash(p, t->cap);
  while (zs_live_at(t, j))
    j = (j + 1) & (t->cap - 1);
  if (!t->keys[j]) t->used++;
  t->keys[j] = p;
  t->vals[j] = r;
  return 0;
}

int zs_live_take(zs_live_table *t, void *p, zs_region *r) {
  if (!t->cap) return -1;
  for (size_t j = zs_live_hash(p, t->cap); t->keys[j]; j = (j + 1) & (t->cap - 1)) {
    if (t->keys[j] == p && t->vals[j].len != 0) {
      *r = t->vals[j];
      t->vals[j].len = 0;
      return 0;
    }
  }
  return -1;
}

void zs_live_drain(zs_live_table *t, zs_host_arena *a,
                   void (*f)(zs_host_arena *a, void *p, const zs_region *r)) {
  for (size_t i = 0; i < t->cap; i++)
    if (zs_live_at(t, i)) f(a, t->keys[i], &t->vals[i]);
  free(t->keys);
  free(t->vals);
  t->keys = NULL;
  t->vals = NULL;
  t->cap = t->used = 0;
}
