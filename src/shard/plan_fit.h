/* Will it fit, and how? The per-rank need of a model under a configuration (the plan's persistent
 * bytes, its bound on transient buffers, and the caller's activations) against the memory a rank
 * has, and one sentence that says so: "does not fit: needs 93.4 GiB on each GPU at stage 3 with
 * 4 ranks; fits with 8 ranks or with optimizer offload". zs_engine_commit's refusal, the public
 * zs_plan_model and the zshard-plan tool all speak through this file, so they always agree.
 * Pure arithmetic: nothing is allocated. */
#ifndef ZS_SHARD_PLAN_FIT_H
#define ZS_SHARD_PLAN_FIT_H

#include <stddef.h>

#include "shard/placement.h"
#include "shard/plan.h"
#include "shard/plan_memory.h"

/* What one rank needs. device_total: params + grads + optimizer + buffers + activations;
   host_total: the offloaded state (host_pinned). */
typedef struct {
  size_t cat[ZS_MEM_NCAT];
  size_t activations;
  size_t device_total, host_total;
  size_t host_cap;    /* zs_config.offload_host_bytes (0: none): host_total must stay within it */
  zs_placement place; /* where an offload budget puts the units (placement.h); active 0 without */
} zs_plan_need;

/* What one rank has. On the CPU device the "device" is host memory: everything draws on
   device_bytes and host_bytes is not used. SIZE_MAX: unlimited. */
typedef struct {
  zs_device device;
  size_t device_bytes, host_bytes;
} zs_plan_room;

/* The need of the units under c with `world` ranks (shard groups of c->shard_group_size, 0 =
   the world). ZS_ERR_INVALID_ARG (message set) when c is no plan or the group does not divide
   the world. */
zs_status zs_plan_need_of(const zs_config *c, int world, const zs_plan_units *u, size_t act,
                          zs_plan_need *n);
/* 1 when the need fits the room (and, with an offload budget, the budget; with a host cap, the
   cap). */
int zs_plan_fits(const zs_plan_need *n, const zs_plan_room *r);
/* The verdict sentence for c with `world` ranks into msg (cap bytes): "fits: ..." or "does not
   fit: ...; fits <alternatives>" where the alternatives are the first higher stage, the fewest
   more ranks (up to 4096x) and the least offload that fit; with an offload budget the model's
   least budget too ("fits with an offload budget of 1.2 GiB"). Returns 1 when it fits, 0 when not,
   -1 when c is no plan (msg: the reason). */
int zs_plan_verdict(const zs_config *c, int world, const zs_plan_units *u, size_t act,
                    const zs_plan_room *r, char *msg, size_t cap);
/* Bytes for people: "93.4 GiB", "512.0 MiB", "48 bytes". */
void zs_plan_human(size_t bytes, char *out, size_t cap);

#endif
