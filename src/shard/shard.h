/* The shard layer's view of an engine: a unit's buffers and what src/shard needs to gather,
 * prefetch, reduce and publish them (the plan, the device, the groups, the memory owner and
 * how to report a failure that only src/shard can call unrecoverable). src/shard includes only
 * layers below it; the engine fills a zs_shard_ctx and hands it down, and a test can fill one
 * without an engine. */
#ifndef ZS_SHARD_SHARD_H
#define ZS_SHARD_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "device/device.h"
#include "mem/ledger.h"
#include "mem/mem.h"
#include "shard/layout.h"
#include "shard/opt_pack.h"
#include "shard/plan.h"
#include "shard/state_table.h"
#include "zshard.h"

#define ZS_NAME_MAX 64

typedef struct zs_shard_ctx zs_shard_ctx;

/* Records per tensor of the values written since the last agreement: params, then each state,
   then the gradient (ZS_SET_GRAD_SLOT: zs_unit_set_grad). */
#define ZS_SET_SLOTS (2 + ZS_OPT_MAX_STATE)
#define ZS_SET_GRAD_SLOT (1 + ZS_OPT_MAX_STATE)

struct zs_unit {
  zs_engine *e;      /* the owner (opaque here) */
  zs_shard_ctx *ctx; /* what src/shard works with */
  int index;
  char name[ZS_NAME_MAX];
  int ntensors;
  zs_tensor_desc *t; /* copies; names owned below */
  char **tnames;
  zs_layout lay; /* flat offsets, padding, this rank's shard */
  int frozen;    /* zs_unit_freeze: params only; from commit on its table says so (frozen.h) */
  /* The optimizer state arrays it keeps: the most its tensors' groups' optimizers keep (kept by
     zs_unit_set_group); from commit on its table's slots past it are ZS_LIFE_NONE (placement.h). */
  int nstate;
  /* Per tensor: the state arrays its group's optimizer keeps (its part of nstate; a unit whose
     tensors keep different counts, or keep them over a prefix (part), packs its arrays:
     opt_pack.h, zs_unit_opt_at). */
  int *keeps;
  /* Per tensor: the elements of each array it keeps, its first ones (SIZE_MAX: all; fewer where
     its group's optimizer keeps a prefix: zs_optimizer.state_elems; a tp slice its share of the
     whole tensor's prefix, tp_slice.h). part_most: the most any tp rank's slice keeps (tp rank
     0's), which sizes the arrays, so that every rank allocates the same bytes. */
  size_t *part, *part_most;
  /* Per tensor k and array i, at [k * ZS_OPT_MAX_STATE + i]: the index in packed array i of the
     tensor's first element in the optimizer range (set at commit: zs_unit_pack_index). */
  size_t *pack_at;

  /* Which states this unit holds, where, over which range (a copy of the plan's table made at
     commit; per-unit placement is an entry of it). Each state's buffer is the field named in
     zs_unit_slot; a state that does not exist, or a transient one not live now, is NULL. The
     padding tail of every buffer is zero and stays zero. */
  zs_state_table st;
  void *param_full, *param_shard; /* ZS_ST_PARAM_FULL, ZS_ST_PARAM_SHARD */
  void *grad_full, *grad_shard;   /* ZS_ST_GRAD_FULL, ZS_ST_GRAD_SHARD */
  /* ZS_ST_GRAD_STAGE: the micro-step's own buffer, folded onto grad_full by its reduction and
     freed: in deterministic mode in global micro-batch order (any number of += per micro-step and
     any split of the global batch keep one rank's bits), else locally (grad_accum_fp32). */
  void *grad_stage;
  float *master;               /* ZS_ST_MASTER */
  void *opt[ZS_OPT_MAX_STATE]; /* ZS_ST_OPT(i): the optimizer's state arrays (their dtype) */
  uint16_t *rem;               /* ZS_ST_MASTER_REM (ZS_MASTER_REMAINDER; NULL otherwise) */
  size_t opt_off, opt_n;       /* the optimizer states' range (zs_state_range of ZS_ST_MASTER) */
  /* On the NVMe tier (tier/nvme_tier.h): the files of its optimizer state over opt_n elements,
     nv[0] the fp32 master or (ZS_MASTER_REMAINDER) the 16-bit remainders, NULL where the master
     is the params (lean mode; ZS_MASTER_PARAMS with the params in the host arena); nv[1 + i] the
     optimizer's state i in its dtype. The slots of the states there (master or rem, the state
     arrays) are NULL. All NULL for a unit whose state is in memory. */
  struct zs_nvme_file *nv[1 + ZS_OPT_MAX_STATE];

  int gathered;      /* sharded params: param_full holds (or is receiving) the gathered params */
  int held;          /* gathered by the caller and not released yet (every stage) */
  void *ev_gathered; /* sharded params on CUDA: recorded on the comm stream after the all-gather */
  int fwd_micro;     /* in a step: the micro-step (grads_ready_count) of its last forward gather;
                        a gather in the same micro-step is its backward. -1 at begin_step */
  int grads_ready_count; /* calls of zs_unit_grads_ready in this step */
  int no_grad;           /* zs_unit_no_grad in this step: no reduction, norm or update */
  int64_t opt_steps;     /* the optimizer steps this unit took (its t; frozen units count too) */
  int grad_shard_valid;  /* stage 2-3: grad_shard holds a reduced value this step */
  /* Per tensor, ZS_SET_SLOTS records each (slot 0 the params, 1 + i the optimizer's state i, then
     the gradient): a
     hash of the values zs_unit_set_param / zs_unit_set_state last wrote since the ranks last
     agreed on them (src/engine/calls.c), 0 when none; the step's agreement compares them. */
  uint64_t *set_hash;
  /* Per tensor: its parameter group (zs_unit_set_group; 0, the configuration's, by default). */
  int *group;
  /* Per tensor: its tensor-parallel layout (zs_tp_layout; ZS_TP_REPLICATED by default). */
  int *tp;
  /* Per tensor: the shard rank that runs its group optimizer's whole step (tier/whole.h), -1 for
     an elementwise optimizer or a tensor without elements; set at commit, the same on every rank.
   */
  int *whole_owner;
  /* Per tensor split over the tp group with a whole step: the tp rank of the owner's tp group that
     computes it (tier/whole.h; set at commit, the same on every rank); -1 otherwise. */
  int *whole_tp;
  /* In a step, from zs_tier_whole_begin to zs_tier_whole_end: the whole steps' channels, each
     over the padded unit (fp32, ZS_MEM_BUFFERS; channel 0 at element a of the flat unit,
     whole_dir[a], is what the update reads as its gradient); else NULL. */
  float *whole_dir;
  int whole_channels;
  /* The floats of its whole steps' buffers (whole_dir, then the largest such tensor's scratch),
     for the planner; 0 without whole steps. Set at commit. */
  size_t whole_floats;
};

struct zs_shard_ctx {
  const zs_config *cfg; /* dtypes, deterministic, prefetch_units, max_live_bytes, bucket_bytes */
  const zs_plan *plan;
  zs_dev *dev;
  zs_coll *world;   /* the data-parallel ranks (all ranks without tensor parallelism) */
  zs_coll *shard;   /* ranks that split a unit */
  zs_coll *replica; /* ranks that hold the same shard (hybrid), or NULL */
  int world_rank, world_size, shard_rank, shard_size;
  /* The tp group (NULL when tp_size is 1), this rank's place in it and its size: a whole step
     joins a split tensor's slices over it (tier/whole.h). */
  zs_coll *tp;
  int tp_rank, tp_size;
  /* Called on a unit's local gradient (grad: its flat layout in dt) once it is final, before it is
     reduced, on stream (the engine's tp partial sums); NULL: none. */
  zs_status (*pre_reduce)(void *owner, zs_unit *u, void *grad, zs_dtype dt, void *stream);
  zs_unit **units; /* in forward order */
  int nunits;
  int in_step;                /* between begin_step and step: gathers know forward from backward */
  int last_gather;            /* in a step: the unit of the caller's last gather (-1: none yet) */
  int sig_unit;               /* the unit an all-gather of params moves now, or -1 (its header) */
  int sig_prefetch;           /* ... and whether that all-gather is a prefetch */
  size_t live_gathered_bytes; /* bytes of every gathered unit (held or prefetched) */
  /* Every buffer src/shard allocates comes from the owner's memory (booked in its ledger; its
     frees defer by themselves once the owner failed, and zs_mem_free_after defers the free of a
     buffer a failed collective used). */
  zs_mem *mem;
  /* The one exception, on CUDA: the device words of a master gather's status agreement
     (tier/master_gather.c, shard_size + 1 of them), allocated at its first use outside the ledger
     (as the engine's own agreement buffers) and kept, so that no NVMe-tier gather allocates or
     frees device memory (cudaFree waits for the whole device); the owner frees it (zs_dev_free) at
     destroy, once its groups are gone. NULL until then. */
  uint64_t *status_dev;
  /* The owner's failure service, for the one decision only src/shard can make: a gather its peers
     went on with failed on this rank, so the owner is failed whatever the status (returns s).
     Every other failure is returned, and the owner's public call marks it once. */
  zs_status (*fail_hard)(void *owner, zs_status s);
  void *owner;
};

static inline zs_status zs_sh_alloc(zs_shard_ctx *x, zs_mem_cat c, size_t bytes, void **p,
                                    void *stream) {
  return zs_mem_alloc(x->mem, c, bytes, p, stream);
}
static inline void zs_sh_free(zs_shard_ctx *x, zs_mem_cat c, void *p, size_t bytes, void *stream) {
  zs_mem_free(x->mem, c, p, bytes, stream);
}
/* Frees a buffer the operation that returned s used (deferred when s is a failure a collective
   may still write after). */
static inline void zs_sh_free_after(zs_shard_ctx *x, zs_status s, zs_mem_cat c, void *p,
                                    size_t bytes, void *stream) {
  zs_mem_free_after(x->mem, s, c, p, bytes, stream);
}
static inline zs_status zs_sh_fail_hard(zs_shard_ctx *x, zs_status s) {
  return x->fail_hard(x->owner, s);
}

/* The field holding state s of u (state_table.h). */
static inline void **zs_unit_slot(zs_unit *u, zs_state s) {
  switch (s) {
  case ZS_ST_PARAM_FULL:
    return &u->param_full;
  case ZS_ST_PARAM_SHARD:
    return &u->param_shard;
  case ZS_ST_GRAD_FULL:
    return &u->grad_full;
  case ZS_ST_GRAD_SHARD:
    return &u->grad_shard;
  case ZS_ST_GRAD_STAGE:
    return &u->grad_stage;
  case ZS_ST_MASTER:
    return (void **)&u->master;
  case ZS_ST_OPT0:
  case ZS_ST_OPT1:
    return &u->opt[s - ZS_ST_OPT0];
  case ZS_ST_MASTER_REM:
    return (void **)&u->rem;
  default:
    return NULL;
  }
}
/* Bytes of state s of u (its layout is sharded: after commit). */
static inline size_t zs_unit_state_bytes(const zs_unit *u, zs_state s) {
  return zs_state_bytes(&u->st, s, u->lay.padded, u->lay.shard);
}
/* u's tensors as packing sees them (opt_pack.h). */
static inline zs_pack_unit zs_unit_pack_of(const zs_unit *u) {
  const zs_pack_unit p = {u->ntensors, u->lay.numel, u->keeps, u->part};
  return p;
}
/* The overlap [*a, *b) of flat [lo, hi) with the elements of array i that tensor k of u keeps
   (its first zs_pack_part; none where it keeps fewer arrays): 0 when empty. */
static inline int zs_unit_kept_overlap(const zs_unit *u, int k, int i, size_t lo, size_t hi,
                                       size_t *a, size_t *b) {
  const zs_pack_unit p = zs_unit_pack_of(u);
  const size_t e = u->lay.off[k] + zs_pack_part(&p, k);
  if (u->keeps[k] <= i || !zs_layout_overlap(&u->lay, k, lo, hi < e ? hi : e, a, b)) return 0;
  return 1;
}
/* Fills u->pack_at for u's optimizer range (after commit laid it out). */
static inline void zs_unit_pack_index(zs_unit *u) {
  const zs_pack_unit p = zs_unit_pack_of(u);
  for (int k = 0; k < u->ntensors; k++) {
    size_t a, b;
    if (!zs_layout_overlap(&u->lay, k, u->opt_off, u->opt_off + u->opt_n, &a, &b)) a = u->opt_off;
    for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
      u->pack_at[k * ZS_OPT_MAX_STATE + i] = zs_pack_kept(&p, i, u->opt_off, a);
  }
}
/* The element of u's optimizer array i that holds flat element x of tensor k (inside its
   optimizer range; k keeps array i): x's offset in the range, or its index in the packed array. */
static inline size_t zs_unit_opt_at(const zs_unit *u, int i, int k, size_t x) {
  if (!u->st.s[ZS_ST_OPT(i)].packed) return x - u->opt_off;
  size_t a = u->opt_off, b;
  zs_layout_overlap(&u->lay, k, u->opt_off, u->opt_off + u->opt_n, &a, &b);
  return u->pack_at[k * ZS_OPT_MAX_STATE + i] + (x - a);
}
/* Whether state s of u lives in the host arena. */
static inline int zs_unit_on_host(const zs_unit *u, zs_state s) {
  return u->st.s[s].tier == ZS_TIER_HOST;
}
/* Whether u's optimizer state (its master or a state array) lives in the host arena. */
static inline int zs_unit_opt_on_host(const zs_unit *u) {
  int h = zs_unit_on_host(u, ZS_ST_MASTER);
  for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
    h = h || zs_unit_on_host(u, ZS_ST_OPT(i));
  return h;
}
/* The address of flat element a (inside its range) in the persistent state of u's role `role`
   (params or gradients: either of its states, zs_state_home). */
static inline void *zs_unit_home_at(zs_unit *u, zs_state role, size_t a) {
  const zs_state h = zs_state_home(&u->st, role);
  size_t off, n;
  zs_state_range(&u->st, h, &u->lay, &off, &n);
  return (char *)*zs_unit_slot(u, h) + (a - off) * zs_dtype_size(u->st.s[h].dtype);
}

static inline zs_cdt zs_cdt_of(zs_dtype dt) {
  return dt == ZS_BF16 ? ZS_CDT_BF16 : ZS_CDT_F32;
}
static inline void *zs_ptr_add(void *p, size_t elems, zs_dtype dt) {
  return (char *)p + elems * zs_dtype_size(dt);
}
/* The caller gathers u (not held yet): with sharded params it is all-gathered unless prefetched,
   makes the compute stream wait for its all-gather, and prefetches the window ahead (dropping
   prefetched units outside it). Keeps the memory rule (docs/MEMORY.md §1). */
zs_status zs_shard_gather_user(zs_unit *u);
/* The caller releases u: with sharded params its gathered copy is freed. */
void zs_shard_release_user(zs_unit *u);
/* Ends every hold, frees every stage-3 gathered copy and forgets the traversal (after a step). */
void zs_shard_drop_all(zs_shard_ctx *x);
/* Before new values are written into u's shard: drops a prefetched copy; returns 1 when the
   caller holds u gathered (its full copy must be refreshed with the new values), else 0. */
int zs_shard_invalidate(zs_unit *u);
/* The zeroed full gradient a sharded gradient's backward writes (buffers), unless it exists. */
zs_status zs_shard_grad_buffer(zs_unit *u);
/* The zeroed staging buffer of a staged full gradient (buffers), unless it exists. */
zs_status zs_shard_grad_stage(zs_unit *u);
/* Frees u's transient gradient buffers (the full buffer of a sharded gradient, the staging
   buffer) without reducing them: the unit gets no gradient this step (zs_unit_no_grad). */
void zs_shard_grad_drop(zs_unit *u);
/* Reduces u's gradient after a micro-step (plan.reduce_every_micro), or after the last. A failure
   is returned (the caller marks it: a half-done reduction cannot be retried). */
zs_status zs_shard_reduce(zs_unit *u, int last_micro);
/* All-gathers every unit's updated params (plan.publish). A failure is returned (the caller
   marks it). */
zs_status zs_shard_publish(zs_shard_ctx *x);

#endif
