/* The flight recorder's ring (flight.h); coll.c records into it. */
#include "comm/flight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "comm/coll_impl.h"

zs_status zs_flight_create(size_t cap, zs_flight **out) {
  *out = NULL;
  zs_flight *f = calloc(1, sizeof *f);
  if (f && cap) f->ring = calloc(cap, sizeof *f->ring);
  if (!f || !cap || !f->ring) {
    free(f);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "no memory for a flight recorder of %zu entries", cap);
  }
  f->cap = cap;
  *out = f;
  return ZS_OK;
}

void zs_flight_destroy(zs_flight *f) {
  if (!f) return;
  free(f->ring);
  free(f);
}

void zs_coll_set_flight(zs_coll *c, zs_flight *f, const char *name, int first, int stride) {
  if (!c) return;
  c->flight = NULL;
  if (!f || f->ngroups >= ZS_FLIGHT_GROUPS) return;
  const int g = f->ngroups++;
  snprintf(f->group_name[g], sizeof f->group_name[g], "%s", name);
  f->group_rank[g] = c->rank;
  f->group_size[g] = c->size;
  f->group_first[g] = first;
  f->group_stride[g] = stride;
  c->flight = f;
  c->flight_group = g;
}

size_t zs_flight_held(const zs_flight *f) {
  return !f ? 0 : f->n < f->cap ? (size_t)f->n : f->cap;
}

const zs_flight_entry *zs_flight_at(const zs_flight *f, size_t i) {
  const size_t held = zs_flight_held(f);
  if (i >= held) return NULL;
  return &f->ring[(size_t)((f->n - held + i) % f->cap)];
}

const char *zs_flight_op_name(int op) {
  static const char *names[] = {"none",       "all_gather", "reduce_scatter", "all_reduce",
                                "all_to_all", "broadcast",  "barrier",        "split",
                                "check",      "goodbye"};
  return op >= 0 && op < (int)(sizeof names / sizeof names[0]) ? names[op] : "unknown";
}

const char *zs_flight_state_name(int state) {
  switch (state) {
  case ZS_FLIGHT_CHECKING:
    return "checking";
  case ZS_FLIGHT_RUNNING:
    return "running";
  case ZS_FLIGHT_ENQUEUED:
    return "enqueued";
  case ZS_FLIGHT_DONE:
    return "done";
  case ZS_FLIGHT_FAILED:
    return "failed";
  }
  return "unknown";
}
