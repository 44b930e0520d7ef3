/* The collective flight recorder: each engine's ring of its last collectives (docs/COLLECTIVES.md
 * §8). src/comm records every collective of a group attached with zs_coll_set_flight (coll.c:
 * when it was called, when its data started to move, when it ended, and how); the owner names the
 * call behind each one from its context words and writes the ring out when it fails. Recording
 * is a few stores per collective and allocates nothing after zs_flight_create. */
#ifndef ZS_COMM_FLIGHT_H
#define ZS_COMM_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

/* An entry's state. */
typedef enum {
  ZS_FLIGHT_CHECKING = 1, /* in the divergence check's header exchange, no data moved yet */
  ZS_FLIGHT_RUNNING,      /* its data is moving (a host backend's call has not returned) */
  ZS_FLIGHT_ENQUEUED,     /* enqueued on a stream (nccl), not yet waited for */
  ZS_FLIGHT_DONE,
  ZS_FLIGHT_FAILED /* status says how */
} zs_flight_state;

typedef struct {
  uint64_t seq;             /* per group, the divergence header's sequence number (the
                               check's "collective #N"): the same collective has the same seq
                               on every rank of a group that made the same calls */
  int op;                   /* the header's operation (coll_impl.h's zs_sig_op) */
  int group;                /* index of the group in its zs_flight */
  int state;                /* zs_flight_state */
  int status;               /* zs_status of a failed entry */
  uint64_t count, bytes;    /* elements (per rank block where the op has blocks), buffer bytes */
  uint64_t ctx[ZS_SIG_CTX]; /* the owner's context words when it was called */
  uint64_t called_us, started_us, ended_us; /* zs_clock_wall_us; 0: not reached */
} zs_flight_entry;

#define ZS_FLIGHT_GROUPS 8
typedef struct zs_flight {
  zs_flight_entry *ring;
  size_t cap; /* entries kept */
  uint64_t n; /* entries recorded so far (the ring holds the last min(n, cap)) */
  int ngroups;
  char group_name[ZS_FLIGHT_GROUPS][32];
  int group_rank[ZS_FLIGHT_GROUPS], group_size[ZS_FLIGHT_GROUPS];
  /* The group's members are world ranks group_first + k * group_stride, k < group_size. */
  int group_first[ZS_FLIGHT_GROUPS], group_stride[ZS_FLIGHT_GROUPS];
} zs_flight;

/* A ring of cap >= 1 entries; ZS_ERR_OUT_OF_MEMORY. */
zs_status zs_flight_create(size_t cap, zs_flight **out);
void zs_flight_destroy(zs_flight *f);
/* Records c's collectives in f from now on, as group `name` whose members are world ranks
   first + k * stride. f NULL (or ZS_FLIGHT_GROUPS groups already): c records nothing. */
void zs_coll_set_flight(zs_coll *c, zs_flight *f, const char *name, int first, int stride);
/* Entries held, oldest first: i in [0, zs_flight_held(f)). */
size_t zs_flight_held(const zs_flight *f);
const zs_flight_entry *zs_flight_at(const zs_flight *f, size_t i);
/* "all_gather", "reduce_scatter", ..., "check"; "running", "done", ... */
const char *zs_flight_op_name(int op);
const char *zs_flight_state_name(int state);

#endif
