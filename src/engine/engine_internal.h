/* The engine and unit objects (internal). Invariants are stated beside the fields. */
#ifndef ZS_ENGINE_ENGINE_INTERNAL_H
#define ZS_ENGINE_ENGINE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "device/device.h"
#include "mem/ledger.h"
#include "mem/mem.h"
#include "offload/host_arena.h"
#include "offload/nvme_dir.h"
#include "optim/optim.h"
#include "shard/layout.h"
#include "shard/plan.h"
#include "shard/placement.h"
#include "shard/shard.h"
#include "tier/tier.h"
#include "base/config.h"
#include "zshard.h"
#include "zshard_facts.h"

/* The public call a rank is in, carried in every collective's header (comm.h, divergence check):
   set at the entry of each public call that can communicate. */
typedef enum {
  ZS_CALL_NONE = 0,
  ZS_CALL_CREATE,
  ZS_CALL_COMMIT,
  ZS_CALL_GATHER,
  ZS_CALL_GRADS_READY,
  ZS_CALL_GRADS_FLUSH,
  ZS_CALL_STEP,
  ZS_CALL_GET_PARAM,
  ZS_CALL_SAVE,
  ZS_CALL_LOAD,
  ZS_CALL_EXPORT,
  ZS_CALL_DESTROY,
  ZS_CALL_BROADCAST_PARAMS,
  ZS_CALL_GET_STATE,
  ZS_CALL_GET_GRAD,
  ZS_CALL_BEGIN_STEP,
  ZS_CALL_SAVE_WAIT,
  ZS_CALL_ALL_REDUCE,
  ZS_CALL_ALL_GATHER,
  ZS_CALL_REDUCE_SCATTER,
  ZS_CALL_N
} zs_call;

typedef enum {
  ZS_ENGINE_BUILDING = 0,
  ZS_ENGINE_READY,
  ZS_ENGINE_IN_STEP,
  ZS_ENGINE_FAILED
} zs_engine_state;

struct zs_engine {
  zs_config cfg;
  zs_comm *comm;
  zs_dev dev;
  /* The mesh (engine.c's open_groups; docs/PARALLEL.md): tp_size consecutive ranks form a
     tensor-parallel group; the data-parallel "world" every layer below works over is the ranks at
     the same place in their tp groups, and shard and replica groups split it. */
  zs_coll *all;     /* every rank; the same object as world when tp_size is 1 */
  zs_coll *tp;      /* the tensor-parallel group, NULL when tp_size is 1 */
  zs_coll *world;   /* the data-parallel ranks (every rank without tensor parallelism) */
  zs_coll *shard;   /* ranks that split a unit (shard_group_size, or world) */
  zs_coll *replica; /* ranks that hold the same shard (hybrid), NULL when world == shard group */
  int all_rank, all_size, tp_rank, tp_size;
  int world_rank, world_size; /* in the data-parallel world */
  int shard_rank, shard_size; /* position in the shard group; S = shard_size */
  zs_engine_state state;
  zs_plan
      plan;   /* what exists and what runs, from the config (shard/plan.h): never branch on stage */
  zs_mem mem; /* every buffer of the engine, its ledger and its deferred frees (mem/mem.h) */
  zs_host_arena *arena; /* offload: pinned NUMA-local host memory */
  zs_optim *optim;      /* the optimizer: its CPU workers, the offload copy pipeline */
  zs_tiers tiers;       /* the tiers' context (tier/tier.h): sh, optim, and the NVMe tier or NULL */

  uint64_t *peers; /* all_size rows of ZS_PEER_WORDS: each rank's placement (peers.c) */

  zs_unit **units;
  int nunits, cap_units;
  /* Parameter groups (groups.c): groups[1 .. ngroups - 1] as zs_engine_add_group took them;
     group 0 is the configuration's (ngroups >= 1). */
  zs_param_group groups[ZS_MAX_PARAM_GROUPS]; /* (their optimizer NULL: group_opt says) */
  int group_opt[ZS_MAX_PARAM_GROUPS];         /* each group's optimizer id (zs_config.optimizer) */
  int ngroups;
  unsigned char *user_meta; /* zs_engine_set_user_meta's bytes, or the last load's; NULL: none */
  size_t user_meta_bytes;

  int micro_steps;    /* of the current step */
  int64_t opt_steps;  /* completed optimizer steps (the optimizer's t) */
  int64_t steps_done; /* completed zs_engine_step calls, skipped ones included (checkpoints) */
  double step_t0;
  double check_t0;          /* the groups' header-exchange seconds at begin_step (check_seconds) */
  double comm_t0;           /* ... and their operation seconds (comm_seconds) */
  double io_t0;             /* ... and the NVMe tier's waits for the disk (io_seconds) */
  zs_shard_ctx sh;          /* what src/shard sees of the engine (shard/shard.h) */
  zs_call call;             /* the public call this rank is in (calls.c) */
  int call_unit;            /* its unit's index, or -1 */
  int call_arr;             /* the state array it moves (zs_arr + 1: zs_unit_get_state), or 0 */
  zs_coll_sig_src sig;      /* the context of every header on the engine's groups */
  int aborted;              /* zs_engine_abort was called (destroy's goodbye says so) */
  struct zs_flight *flight; /* the flight recorder's ring (flight_dump.h), or NULL */
  int flight_written;       /* the record was written (or tried): once per engine */
  struct zs_nvml *nvml;     /* zs_engine_device_usage's NVML handle, opened at its first call */
  char nvml_why[512];       /* why it could not be opened ("" before the first try) */
  zs_status nvml_rc;        /* ... and the status that said so */
  int set_pending;          /* a unit's set_hash holds a record (zs_unit_set_param since the last
                               agreement on the values: calls.c) */
  uint64_t *agree_rows;     /* the step agreement's rows (world_size x its words), kept */
  /* zs_engine_allgather_u64's host buffer on the CPU device (xchg_words words), kept until
     destroy has torn the groups down: an all-gather abandoned by a timeout may still write it. */
  uint64_t *xchg;
  size_t xchg_words;
  /* Its device buffer on CUDA (xchg_dev_words words, at least ZS_XCHG_WORDS per rank), made at
     the first exchange (creation's placement exchange) and kept until destroy, for the same
     reason and so that no exchange (the NVMe tier's per-step agreement) allocates or frees. */
  uint64_t *xchg_dev;
  size_t xchg_dev_words;
  int budget_free_ranks; /* offload_budget_bytes was ZS_BUDGET_FREE: the ranks whose least free
                            memory it became at commit (0: a budget the caller gave) */
  /* zs_engine_facts_get's numbers (facts.c): create fills the engine's, commit the placement's,
     the NVMe tier's step its I/O; zs_engine_info's text is written from them. */
  zs_engine_facts facts;
  /* An asynchronous save staged and not yet committed (ckpt_async.c), and the outcome of one
     that a later call committed or dropped, kept for zs_engine_save_wait (ZS_OK: none). */
  struct zs_ckpt_job *save_job;
  float *save_staging; /* its host staging, kept from save to save (booked in host_pinned) */
  size_t save_staging_floats;
  zs_status save_rc;
  char save_msg[1024];
  zs_nvme_reclaimed nvme_reclaimed; /* dead runs' tier directories commit removed (all ranks) */
  unsigned char origins[ZS_CONFIG_NORIGINS]; /* zs_config_origin's, by zs_config_field_index */
  char info[2048];
};

/* Placement words of each rank in zs_engine.peers: hashes of the host name, of the cgroup
   membership and of the GPU's PCI bus id (0 on the CPU device), and the offload NUMA node (-1). */
enum { ZS_PEER_HOST = 0, ZS_PEER_CGROUP, ZS_PEER_GPU, ZS_PEER_NODE, ZS_PEER_WORDS };
/* Words per rank the device buffer of zs_engine_allgather_u64 is first sized for: the largest
   exchange's (commit's configuration agreement, calls.c's CFG_MAX words), so that it is allocated
   once, at creation. */
#define ZS_XCHG_WORDS 64
/* All-gathers n words per rank over the world into all (world_size * n, rank-major), whatever
   the device (on CUDA through the kept device buffer xchg_dev: no allocation per call).
   Collective over the world. A failure is returned: the caller marks it. */
zs_status zs_engine_allgather_u64(zs_engine *e, const uint64_t *mine, size_t n, uint64_t *all);
/* The same over group g of size gsize in which this rank is grank (e->all: every rank). */
zs_status zs_engine_allgather_u64_on(zs_engine *e, zs_coll *g, int grank, int gsize,
                                     const uint64_t *mine, size_t n, uint64_t *all);
/* The gradient of unit u's ZS_TP_PARTIAL_GRAD tensors in grad (dtype dt, the unit's flat
   layout) summed over the tp group on stream, before the engine reduces it (mesh.c; the shard
   layer's pre_reduce). */
zs_status zs_engine_tp_partial_sum(void *owner, zs_unit *u, void *grad, zs_dtype dt, void *stream);
/* Whether tensor t of u is split over the tp group (ZS_TP_SPLIT_DIM0/1 with tp_size > 1). */
int zs_engine_tp_split(const zs_unit *u, int t);
/* Tensor t of u as the whole tensor: a split dimension tp_size times the slice's. */
zs_tensor_desc zs_engine_tp_whole(const zs_unit *u, int t);
/* A hash of every tensor's tp layout (mesh.c), for commit's agreement. */
uint64_t zs_engine_tp_hash(const zs_engine *e);
/* Whether tensor t of u counts in this rank's part of the global gradient norm: split tensors on
   every tp rank, the others on tp rank 0 only. */
int zs_engine_tp_in_norm(const zs_engine *e, const zs_unit *u, int t);
/* Tensor t of u whole (host_whole: tp_size times its slice's elements) from every tp rank's
   slice (host_slice: this rank's), by its layout; collective over the tp group, t split. Its
   collectives carry the engine's current call (zs_engine_call) in their divergence headers. A
   rank without a slice (NULL) gives zeros; one without a whole (NULL) keeps nothing; either way
   it takes part. ZS_ERR_OUT_OF_MEMORY: the join went through but host_whole is not filled (the
   engine is sound); other errors: the collective failed. */
zs_status zs_engine_tp_join(zs_engine *e, const zs_unit *u, int t, const float *host_slice,
                            float *host_whole);
/* Commit's disk step before the NVMe tier opens (nvme_disk.c), with prior this rank's outcome so
   far: each rank reclaims dead runs' tier directories under nvme_path (zs_nvme_reclaim; every
   rank's sum into e->nvme_reclaimed); then the ranks whose nvme_path is on one disk of one host
   check its free space against their files' bytes together, before any rank reserves them.
   Collective over the world, whatever prior is; every rank gets the same verdict (zs_engine_agree).
 */
zs_status zs_engine_nvme_disk(zs_engine *e, zs_status prior);
/* Fills e->peers (collective over every rank, e->all); node: this rank's offload node or -1. */
zs_status zs_peers_gather(zs_engine *e, int node);
/* Among the ranks on this host with the same word `what` (ZS_PEER_*): *cnt of them, this rank
   is number *idx (in world-rank order). */
void zs_peers_share(const zs_engine *e, int what, int *idx, int *cnt);
/* Compares what this rank will hold after commit with the memory its device (and, for offload,
   the host) has; ZS_ERR_OUT_OF_MEMORY naming the bytes and what would fit (src/engine/fit.c).
   Collective over the world: every rank measures after a barrier, and all refuse when one does. */
zs_status zs_engine_check_fit(zs_engine *e);
/* The memory this rank may count on (fit.c): *dev on its device, *host for offloaded state (on
   the CPU device the same number), each divided among the ranks that share it; *what (n bytes)
   says where the numbers come from. 0 when nothing could be measured. Not collective. */
int zs_engine_available(zs_engine *e, size_t *dev, size_t *host, char *what, size_t n);
/* offload_budget_bytes = ZS_BUDGET_FREE (budget_free.c): measures this rank's free device memory
   (zs_engine_available less the CUDA reserve, or the test hook's number), agrees on the least
   over the world and makes it the budget (e->cfg.offload_budget_bytes, e->budget_free_ranks set);
   a no-op for any other budget. ZS_ERR_OUT_OF_MEMORY on every rank when one measured nothing.
   Collective over the world; call it after the configuration agreement, before the fit check. */
zs_status zs_engine_budget_free(zs_engine *e);
/* Records the public call this rank is in (u NULL: none) for the collectives' headers. */
void zs_engine_call(zs_engine *e, zs_call call, const zs_unit *u);
/* Attaches the engine's call context to its groups' headers (after they are open). */
void zs_engine_sig_attach(zs_engine *e);
/* Every rank agrees on the step's shape before the update (micro_steps, the grads_ready calls,
   the step number, the groups' running hashes of collective headers): ZS_ERR_COMM naming both
   sides when they differ. The same exchange carries one word combining the records of
   zs_engine_set_record; when they differ, a second all-gather of the per-tensor records names
   the first tensor set differently and ZS_ERR_INVALID_ARG is returned on every rank (records
   kept; the caller abandons the step). Equal records are cleared. Collective over the world, on
   every backend (the per-collective check of comm.h is MPI's only); its buffers are kept from the
   first step on. */
zs_status zs_engine_agree_step(zs_engine *e);
/* Records a hash of the n fp32 values written into tensor t of u, in record slot `slot` (0: the
   params, zs_unit_set_param; 1 + i: the optimizer's state i, zs_unit_set_state), replacing the
   slot's last record, for the next step's agreement (calls.c). Local. */
void zs_engine_set_record(zs_unit *u, int t, int slot, const float *host, size_t n);
/* The refusals every call on tensor t of u with a host buffer shares (params.c): u NULL, t out of
   range, host NULL (ZS_ERR_INVALID_ARG, the sentence naming fn). */
zs_status zs_engine_check_tensor(const zs_unit *u, int t, const void *host, const char *fn);
/* Checks tensor i of unit `unit` as zs_engine_add_unit does: a name that is set, not empty and
   short enough, 1-4 dims, none negative (ZS_ERR_INVALID_ARG with the sentence). Its callers check
   names' uniqueness and the element count themselves. */
zs_status zs_engine_check_desc(const char *unit, int i, const zs_tensor_desc *t);
/* Forgets the records (every slot; params_only: slot 0's): those values are known to be equal on
   every rank (agreed at a step, loaded from a checkpoint; broadcast params). Local. */
void zs_engine_set_clear(zs_engine *e, int params_only);
/* Waits (with the timeout) for every collective queued on the engine's groups: world, shard,
   replica. */
zs_status zs_engine_sync_groups(zs_engine *e);
/* Forgets the gradients' records (zs_unit_set_grad): a new step's gradients replace them. */
void zs_engine_set_clear_grads(zs_engine *e);
/* Every rank resolved the same configuration (the sharding, dtypes, precision modes with lean
   mode's rounding_seed, and the optimizer and its hyperparameters: cfg_words in calls.c):
   ZS_ERR_INVALID_ARG naming the first field that differs, with both values, on every rank (all
   see every row). Collective over the world; called by zs_engine_commit before it allocates. */
zs_status zs_engine_agree_config(zs_engine *e);
/* Group id's configuration (groups.c): the engine's, with the group's hyperparameters in place
   of optim's lr (times lr_scale), weight_decay, betas, eps and sgd.momentum; group 0 (and an id
   out of range) the engine's own. */
void zs_engine_group_config(const zs_engine *e, int id, zs_config *out);
/* How many of the configuration's state arrays tensor t of u keeps: its group's optimizer's count
   (the first ones; a unit keeps the most of its tensors'). *gc (NULL: not wanted) gets the group's
   configuration. */
int zs_engine_tensor_nstate(const zs_unit *u, int t, zs_config *gc);
/* The elements of each state array tensor t keeps under its group's configuration gc, its first
   ones (zs_optimizer.state_elems of the whole tensor; SIZE_MAX: all); t split by layout over T tp
   ranks: tp rank q's slice's share of them (zs_tp_prefix_share). */
size_t zs_engine_state_part(const zs_config *gc, const zs_tensor_desc *t, int layout, int T, int q);
/* u's keeps, part, part_most and nstate from its tensors' groups and tp layouts (after either
   changes). */
void zs_engine_unit_state(zs_unit *u);
/* A hash of every group's values (by their bits) and every tensor's group, for the agreement at
   commit. */
uint64_t zs_engine_groups_hash(const zs_engine *e);
/* The planner's report and placement (plan_api.c) of the units us under c (completed and
   validated) on world_size ranks: zs_plan_model's and zs_plan_placement's, for bare sizes
   and for units of tensors (plan_units_api.c) alike. */
zs_status zs_plan_report_of(const zs_config *c, int world_size, const zs_plan_units *us,
                            size_t activation_bytes, size_t device_bytes, size_t host_bytes,
                            zs_plan_report *out);
zs_status zs_plan_placement_of(const zs_config *c, int world_size, const zs_plan_units *us,
                               unsigned char *host);
/* The data-parallel ranks a plan over world_size ranks shards over (world_size / c->tp_size) into
 *dp; ZS_ERR_INVALID_ARG (fn: the call it names) where tp_size does not divide world_size. */
zs_status zs_plan_dp_ranks(const char *fn, const zs_config *c, int world_size, int *dp);
/* Whether c, a group's configuration under the engine's cfg, is one the engine runs: c checked as
   a configuration, its optimizer keeping at most cfg's state arrays and running the precision
   mode (ZS_ERR_INVALID_ARG with the sentence). zs_engine_add_group and zs_plan_model_units. */
zs_status zs_engine_group_check(const zs_config *cfg, const zs_config *c);
/* Tensor t of unit `unit` (layout: its zs_tp_layout, over tp_size T) under c (its group's
   configuration) in a whole step: ZS_ERR_INVALID_ARG with the sentence (fn: the call it names)
   for a vector on an optimizer that updates matrices only; else raises *chans to its optimizer's
   input channels and *work to its scratch floats, the whole tensor's and, split, the join's
   (tp_slice.h; nothing for an elementwise optimizer, an empty tensor or a frozen unit). The
   engine's plan and zs_plan_model_units share it. */
zs_status zs_engine_whole_tensor(const char *fn, const char *unit, const zs_tensor_desc *t,
                                 int layout, int T, const zs_config *c, int frozen, int *chans,
                                 size_t *work);
/* The floats of a unit's whole-step buffers (tier/whole.h): its padded elements in the most
   channels of its tensors, and the largest scratch; 0 without whole tensors (work 0). */
static inline size_t zs_engine_whole_floats(int chans, size_t work, size_t padded) {
  return work ? padded * (size_t)chans + work : 0;
}
/* Owners are spread over the first this many ranks of a shard group. */
#define ZS_WHOLE_MAX_RANKS 4096
/* Which shard rank runs each tensor's whole step (zs_unit.whole_owner) and each unit's
   whole_floats, for the groups whose optimizer needs whole tensors; ZS_ERR_INVALID_ARG naming a
   tensor with fewer than 2 dims there. Local, the same on every rank; commit calls it before its
   fit check. */
zs_status zs_engine_whole_plan(zs_engine *e);
/* Wall seconds the engine's groups spent in divergence-check header exchanges so far. */
double zs_engine_check_seconds(const zs_engine *e);
/* Wall seconds the engine's groups have spent in their operations and syncs (zs_coll_op_seconds).
 */
double zs_engine_comm_seconds(const zs_engine *e);
/* Seconds the engine's NVMe tier has waited for the disk since it opened (0 without one). */
double zs_engine_io_seconds(const zs_engine *e);
/* Destroy's last exchange on every group still in step (zs_coll_goodbye): an agreement from a
   healthy engine (a peer still inside a collective call learns that this one left), a goodbye
   naming zs_engine_abort or the failure from a failed one. Errors fail e. */
void zs_engine_goodbye(zs_engine *e);

#endif
