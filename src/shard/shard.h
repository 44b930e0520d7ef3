/* The shard layer's view of an engine: a unit's buffers and what src/shard needs to gather,
 * prefetch, reduce and publish them (the plan, the device, the groups, ledger-booked memory and
 * how to report a failure). src/shard includes only layers below it; the engine fills a
 * zs_shard_ctx and hands it down, and a test can fill one without an engine. */
#ifndef ZS_SHARD_SHARD_H
#define ZS_SHARD_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "device/device.h"
#include "mem/ledger.h"
#include "shard/layout.h"
#include "shard/plan.h"
#include "zshard.h"

#define ZS_NAME_MAX 64

typedef struct zs_shard_ctx zs_shard_ctx;

struct zs_unit {
  zs_engine *e;      /* the owner (opaque here) */
  zs_shard_ctx *ctx; /* what src/shard works with */
  int index;
  char name[ZS_NAME_MAX];
  int ntensors;
  zs_tensor_desc *t; /* copies; names owned below */
  char **tnames;
  zs_layout lay; /* flat offsets, padding, this rank's shard */

  /* Device buffers (which exist: ctx->plan). Sizes: *_full = lay.padded elements, *_shard =
     lay.shard elements. plan.params_full: param_full persistent; else param_shard persistent and
     param_full only while gathered (buffers). plan.grads_full: grad_full persistent (with
     ZS_REDUCE_OWN_SLOT the reduced shard lives inside it at lay.shard_off); else grad_shard
     persistent and grad_full only between zs_unit_grad and the reduction (buffers). The padding
     tail of every buffer is zero and stays zero. */
  void *param_full, *param_shard;
  void *grad_full, *grad_shard;
  /* Deterministic mode with full (persistent) gradients: the zeroed per-micro-step buffer
     zs_unit_grad hands out (buffers); the micro-step's reduction folds it onto grad_full in global
     micro-batch order and frees it, so any number of += per micro-step and any split of the
     global batch keep one rank's bits. */
  void *grad_stage;
  float *master, *m, *v; /* fp32 optimizer state over [opt_off, opt_off + opt_n) of the unit */
  size_t opt_off, opt_n;
  int opt_on_host;   /* master/m/v live in the host arena (ZS_OFFLOAD_OPTIMIZER) */
  int param_on_host; /* param_shard lives in the host arena (ZS_OFFLOAD_PARAMS) */

  int gathered;      /* stage 3: param_full holds (or is receiving) the gathered params */
  int held;          /* gathered by the caller and not released yet (every stage) */
  void *ev_gathered; /* stage 3 on CUDA: recorded on the comm stream after the all-gather */
  int fwd_micro;     /* in a step: the micro-step (grads_ready_count) of its last forward gather;
                        a gather in the same micro-step is its backward. -1 at begin_step */
  int grads_ready_count; /* calls of zs_unit_grads_ready in this step */
  int grad_shard_valid;  /* stage 2-3: grad_shard holds a reduced value this step */
};

struct zs_shard_ctx {
  const zs_config *cfg; /* dtypes, deterministic, prefetch_units, max_live_bytes, bucket_bytes */
  const zs_plan *plan;
  zs_dev *dev;
  zs_coll *world;   /* all ranks */
  zs_coll *shard;   /* ranks that split a unit */
  zs_coll *replica; /* ranks that hold the same shard (hybrid), or NULL */
  int world_rank, world_size, shard_rank, shard_size;
  zs_unit **units; /* in forward order */
  int nunits;
  int in_step;                /* between begin_step and step: gathers know forward from backward */
  int sig_unit;               /* the unit an all-gather of params moves now, or -1 (its header) */
  int sig_prefetch;           /* ... and whether that all-gather is a prefetch */
  size_t live_gathered_bytes; /* bytes of every gathered unit (held or prefetched) */
  /* The owner's services: memory booked in its ledger (frees are deferred once it failed, while
     an abandoned collective may still write), and failure: hard = a half-done operation its
     peers went on with (always fails the engine), else only communication/device failures do. */
  zs_status (*alloc)(void *owner, zs_mem_cat c, size_t bytes, void **p, void *stream);
  void (*free)(void *owner, zs_mem_cat c, void *p, size_t bytes, void *stream);
  zs_status (*fail)(void *owner, zs_status s, int hard);
  void *owner;
};

static inline zs_status zs_sh_alloc(zs_shard_ctx *x, zs_mem_cat c, size_t bytes, void **p,
                                    void *stream) {
  return x->alloc(x->owner, c, bytes, p, stream);
}
static inline void zs_sh_free(zs_shard_ctx *x, zs_mem_cat c, void *p, size_t bytes, void *stream) {
  if (p) x->free(x->owner, c, p, bytes, stream);
}
static inline zs_status zs_sh_fail(zs_shard_ctx *x, zs_status s) {
  return x->fail(x->owner, s, 0);
}
static inline zs_status zs_sh_fail_hard(zs_shard_ctx *x, zs_status s) {
  return x->fail(x->owner, s, 1);
}

static inline zs_cdt zs_cdt_of(zs_dtype dt) {
  return dt == ZS_BF16 ? ZS_CDT_BF16 : ZS_CDT_F32;
}
static inline void *zs_ptr_add(void *p, size_t elems, zs_dtype dt) {
  return (char *)p + elems * zs_dtype_size(dt);
}
/* The caller gathers u (not held yet): stage 3 all-gathers it unless prefetched, makes the
   compute stream wait for its all-gather, and prefetches the window ahead (dropping prefetched
   units outside it). Keeps the memory rule of zshard.h. */
zs_status zs_shard_gather_user(zs_unit *u);
/* The caller releases u: stage 3 frees its gathered copy. */
void zs_shard_release_user(zs_unit *u);
/* Ends every hold, frees every stage-3 gathered copy and forgets the traversal (after a step). */
void zs_shard_drop_all(zs_shard_ctx *x);
/* Before new values are written into u's shard: drops a prefetched copy; returns 1 when the
   caller holds u gathered (its full copy must be refreshed with the new values), else 0. */
int zs_shard_invalidate(zs_unit *u);
/* The zeroed full gradient a sharded gradient's backward writes (buffers), unless it exists. */
zs_status zs_shard_grad_buffer(zs_unit *u);
/* The zeroed staging buffer of a deterministic full gradient (buffers), unless it exists. */
zs_status zs_shard_grad_stage(zs_unit *u);
/* Reduces u's gradient after a micro-step (plan.reduce_every_micro), or after the last. */
zs_status zs_shard_reduce(zs_unit *u, int last_micro);
zs_status zs_shard_publish(zs_shard_ctx *x);
zs_status zs_shard_gather_master(zs_unit *u, float *full);

#endif
