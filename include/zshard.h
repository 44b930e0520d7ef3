/* zshard — a memory-sharding training engine (ZeRO / FSDP style) for C training loops.
 *
 * The engine's public API; the GPT-2 training kernels are in zshard_kernels.h (libzshard_kernels,
 * which uses this API; this header and libzshard never need the kernels). Each comment states
 * what a call does, its units, defaults and errors; the rest is in docs/: COLLECTIVES.md
 * (collectivity, divergence, failures), MEMORY.md (memory rule, ledger, offload, budget, NVMe
 * tier, frozen units), OPTIMIZER.md (gradient, determinism, updates, precision modes),
 * ARCHITECTURE.md (the inside).
 *
 * Conventions, true of every call unless its comment says otherwise:
 *  - Errors: a call that can fail returns zs_status; on failure zs_last_error() (per thread)
 *    holds a sentence naming the cause and the fix. The library never prints, exits or aborts. A
 *    refused call (ZS_ERR_INVALID_ARG, ZS_ERR_STATE) changes nothing.
 *  - Collectivity follows the sharding switches (shard_params, shard_grads, shard_optimizer),
 *    not the stage: "sharded params" means shard_params in effect (stage 3, or ZS_SHARD_YES).
 *    Collective calls say so, and over which group: every rank of it must make them, in the same
 *    order, with the same units. Calls not marked collective are local to the rank.
 *  - Ranks that diverge (call, unit, order, micro_steps, grads_ready count) get a non-OK status on
 *    every rank: ZS_ERR_COMM naming both sides with the divergence check (comm_check): before
 *    any data moves on mpi, at the next collective call or wait on the group on nccl (data may
 *    have moved); else at the next zs_engine_step at the latest (data may have moved wrong), or
 *    ZS_ERR_TIMEOUT. Legal programs are never flagged. Then destroy the engine
 *    and the comm and exit. docs/COLLECTIVES.md §2; sampling on one rank: §3.
 *  - Failure: ZS_ERR_COMM, ZS_ERR_TIMEOUT or ZS_ERR_DEVICE from a collective, or from a wait
 *    behind one, fails the engine: its groups are aborted, later calls return ZS_ERR_STATE, and
 *    the only thing left to do is zs_engine_destroy (restart from a checkpoint).
 *  - Threads: an engine, its units and a kernels context are used by one thread at a time (no
 *    locks inside); different engines may live on different threads. zs_version, zs_status_str
 *    and zs_last_error are thread-safe.
 *  - Ownership: handles are opaque. The caller owns what it creates and destroys it (engines
 *    before their comm); units belong to their engine. Pointers the engine hands out stay valid
 *    until the call their comment names. Lifecycle: comm init -> engine create -> add units ->
 *    commit -> set params -> steps -> destroy. */
#ifndef ZSHARD_H
#define ZSHARD_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ZSHARD_VERSION_MAJOR/MINOR/PATCH and ZSHARD_VERSION_STRING of these headers (the build checks
   they equal project(VERSION)). zs_version() says which library is actually loaded.
   ABI rule: within one major version, a program built against an older header runs against a
   newer library: functions are only added, struct fields only appended (zs_config is sized by
   zs_config_default, the output structs keep reserved space), enum values only added. */
#include "zshard_version.h"

/* Every public function is exported with default visibility; everything else is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define ZS_API __attribute__((visibility("default")))
#else
#define ZS_API
#endif

/* ======== Status and errors ======== */

/* Status of every fallible call. */
typedef enum {
  ZS_OK = 0,
  ZS_ERR_INVALID_ARG, /* an argument is out of range, NULL, or inconsistent */
  ZS_ERR_OUT_OF_MEMORY,
  ZS_ERR_COMM,   /* a collective failed (peer died, transport error, ranks diverged) */
  ZS_ERR_DEVICE, /* CUDA / device failure */
  ZS_ERR_IO,     /* a file operation failed (full disk, I/O error, a file deleted or truncated under
                    zshard): the message names the file (the NVMe tier's also the offset) */
  ZS_ERR_CORRUPT,
  ZS_ERR_TIMEOUT, /* a peer stopped answering for longer than comm_timeout_s */
  ZS_ERR_STATE,   /* the call is not allowed in the engine's current state (call order) */
  ZS_ERR_UNSUPPORTED
} zs_status;

/* Short constant name of a status ("ZS_ERR_TIMEOUT"); never NULL. */
ZS_API const char *zs_status_str(zs_status s);
/* Thread-local message of the last failure on this thread, never NULL ("" when none yet). */
ZS_API const char *zs_last_error(void);
/* Records `message` as this thread's zs_last_error() and returns s: for libraries layered on
   zshard (zshard_kernels) that report through the same error channel. NULL message: "". */
ZS_API zs_status zs_error_report(zs_status s, const char *message);

/* ======== Versions ======== */

/* "MAJOR.MINOR.PATCH" of the library actually loaded (compare with ZSHARD_VERSION_STRING of the
   headers a program was built with). Never NULL; thread-safe. */
ZS_API const char *zs_version(void);

/* ======== Configuration ======== */

typedef enum { ZS_F32, ZS_BF16 } zs_dtype;
typedef enum { ZS_DEVICE_CPU, ZS_DEVICE_CUDA } zs_device;
enum { ZS_OFFLOAD_OPTIMIZER = 1u << 0, ZS_OFFLOAD_PARAMS = 1u << 1 };
/* Values of zs_config.master (optimizer-state precision, docs/OPTIMIZER.md §4). */
enum {
  ZS_MASTER_FP32 = 0,
  ZS_MASTER_PARAMS = 1,
  ZS_MASTER_REMAINDER = 2,
  ZS_MASTER_LEAN = 3,
};
/* zs_config.optimizer (each update: docs/OPTIMIZER.md §3; by name: zs_optimizer_id). */
enum { ZS_OPT_ADAMW = 0, ZS_OPT_SGD = 1, ZS_OPT_LION = 2 };
/* Values of the sharding switches in zs_config. */
enum { ZS_SHARD_AS_STAGE = 0, ZS_SHARD_YES = 1, ZS_SHARD_NO = 2 };

/* The hyperparameters every optimizer reads its own of (zs_config.optim). */
typedef struct {
  float lr, beta1, beta2, eps, weight_decay, max_grad_norm; /* max_grad_norm <= 0: no clip */
} zs_optim_hparams;

/* Engine configuration. Always start from zs_config_default() and change only what you mean.
   The tunables (listed there) start unset and take their environment variable or default at
   zs_engine_create; any value the program writes wins, even one equal to the default. */
#define ZS_CONFIG_VERSION 10   /* bumped with each field appended (10: ckpt_direct and the rate) */
#define ZS_UNSET INT_MIN       /* int and double tunables: take the env, else the default */
#define ZS_UNSET_SIZE SIZE_MAX /* size_t tunables: the same */
/* zs_config.offload_budget_bytes = ZS_BUDGET_FREE: the budget is what is free on the device at
   zs_engine_commit, the least over the ranks (docs/MEMORY.md §6). */
#define ZS_BUDGET_FREE (SIZE_MAX - 1)
/* The bytes of free GPU memory a ZS_BUDGET_FREE budget leaves to others on CUDA (per rank). */
#define ZS_BUDGET_FREE_RESERVE ((size_t)512 << 20)

typedef struct {
  size_t struct_size;      /* set by zs_config_default: sizeof(zs_config) of the caller's header;
                              fields beyond it (a newer library) take their defaults */
  unsigned struct_version; /* ZS_CONFIG_VERSION of the caller's header */
  int stage; /* 0..3: what is sharded; default 3. The shorthand of the three switches below:
                1 shards the optimizer state, 2 also the gradients, 3 also the params */
  /* Sharding switches: ZS_SHARD_AS_STAGE (0, default), ZS_SHARD_YES (over the shard group) or
     ZS_SHARD_NO (full everywhere). The optimizer state must be sharded whenever the gradients or
     the params are (e.g. stage 1 with shard_params = ZS_SHARD_YES: full grads, gathered params). */
  int shard_params, shard_grads, shard_optimizer;
  zs_device device;
  int device_index;      /* GPU ordinal; -1 = pick by local rank (default) */
  zs_dtype param_dtype;  /* dtype of gathered params and of grads handed to the user */
  zs_dtype reduce_dtype; /* dtype gradients are reduced in */
  unsigned offload;      /* ZS_OFFLOAD_* bits */
  int deterministic;     /* fixed-order reductions: the same bits for any split of a global batch
                            into ranks x micro-steps, any stage and offload (docs/OPTIMIZER.md §2) */
  int prefetch_units;    /* sharded params: units gathered ahead (0 = none); docs/MEMORY.md §1 */
  size_t bucket_bytes;   /* upper bound of one reduction message: larger units are reduced in
                            pieces, bounding reduction scratch to ~2x this (0 = whole units).
                            Pieces never change the bits. */
  size_t max_live_bytes; /* sharded params: limit on all gathered bytes (held + prefetched),
                            0 = none. docs/MEMORY.md §1. */
  int shard_group_size;  /* hybrid sharding: shard inside groups of this size; 0 = world */
  double comm_timeout_s; /* a peer silent this long becomes ZS_ERR_TIMEOUT, never a hang */
  /* Offload (docs/MEMORY.md §4): cap on pinned host bytes (0 = none), CPU optimizer workers (0 =
     this rank's share of its NUMA node's cores), elements per copy chunk, and whether to go on
     with unpinned host memory when pinning is refused. */
  size_t offload_host_bytes;
  int offload_threads;
  size_t offload_chunk;
  int offload_allow_unpinned;
  /* The optimizer's hyperparameters (`adamw`: the same storage, its older name; what each
     optimizer reads: docs/OPTIMIZER.md §3). Defaults, torch.optim.AdamW's: lr 1e-3, betas 0.9 and
     0.999, eps 1e-8, weight_decay 0.01, max_grad_norm 0 (no clipping). */
  union {
    zs_optim_hparams optim;
    zs_optim_hparams adamw;
  };
  /* Units the caller holds gathered at once, for the memory plan's bound (0 = 2, default; a loop
     that releases each unit before the next gather may say 1). Bounds nothing at run time. */
  int held_units;
  /* Committed checkpoints zs_engine_save keeps (the newest; 0 = all; default 2). */
  int ckpt_keep;
  /* The master's precision mode (docs/OPTIMIZER.md §4): ZS_MASTER_FP32 (default), PARAMS (fp32
     params are the master), REMAINDER (bf16 params + a 16-bit remainder, exact), LEAN (bf16
     params, stochastic rounding); the last two need bf16 params. */
  int master;
  /* The optimizer state's dtype, ZS_F32 (default) or ZS_BF16 (stored rounded to nearest even;
     docs/OPTIMIZER.md §5). */
  zs_dtype moment_dtype;
  /* Budgeted partial offload (docs/MEMORY.md §6): the device bytes this rank's engine may hold
     (model state and buffers); commit moves units to the host, largest saving first, until the
     rest fits. 0 = none (default). Needs sharded optimizer state and offload = 0. */
  size_t offload_budget_bytes;
  /* ZS_MASTER_LEAN's rounding seed (default 0; not in checkpoints: keep it when resuming). */
  uint64_t rounding_seed;
  /* The NVMe tier (docs/MEMORY.md §7): a local O_DIRECT directory for host-tier optimizer state
     over offload_host_bytes (> 0, with a host tier), streamed through each step; commit
     reclaims dead runs' tier directories there. NULL (default): none. Not copied: valid until
     zs_engine_destroy. */
  const char *nvme_path;
  /* The rank divergence check (docs/COLLECTIVES.md §2), every backend: 1 (default) on; 0 off
     from zs_engine_commit on. One small all-gather per collective (nccl: on the device). */
  int comm_check;
  /* The optimizer (zs_optimizer_id; default AdamW); sgd: SGD's momentum (0: no state), dampening,
     nesterov (needs momentum > 0, dampening 0), all 0 by default. */
  int optimizer;
  struct {
    float momentum, dampening;
    int nesterov;
  } sgd; /* read by ZS_OPT_SGD only */
  /* 1: bf16 params' gradients summed over micro-steps in fp32 (docs/OPTIMIZER.md §1); 0
     (default): in param_dtype. Not with AdamW in the remainder and lean modes. */
  int grad_accum_fp32;
  /* Muon's (docs/OPTIMIZER.md §3): momentum 0.95, nesterov 1, ns_steps 5 (1..100), adjust_lr
     ZS_MUON_LR_ORIGINAL (or ZS_MUON_LR_MATCH_ADAMW) by default. */
  struct {
    float momentum;
    int nesterov, ns_steps, adjust_lr;
  } muon;
  /* Adafactor's (docs/OPTIMIZER.md §3): beta2_decay -0.8, eps1 1.1920929e-7, eps2 1e-3, d 1. */
  struct {
    float beta2_decay, eps1, eps2, d;
  } adafactor;
  /* The flight recorder (docs/COLLECTIVES.md §8): with flight_dir set, the last flight_entries
     collectives (256; 0: none), written to flight_dir/flight-rank<R>.json when the engine fails. */
  const char *flight_dir;
  int flight_entries;
  /* Asynchronous checkpoints (zs_engine_save_wait says how): 1 makes zs_engine_save return once
     each rank's share is staged and commit it later; 0 (default): it returns committed.
     ckpt_staging_bytes bounds the staging per rank (0: the whole share); the part of a larger
     share beyond it is written before zs_engine_save returns. */
  int ckpt_async;
  size_t ckpt_staging_bytes;
  /* Beyond the newest ckpt_keep, also keep every checkpoint numbered a multiple of it (0, the
     default: none). */
  int ckpt_keep_every;
  /* Tensor parallelism (docs/PARALLEL.md): blocks of tp_size consecutive ranks hold slices of the
     same tensors (zs_unit_set_tp); everything else above (stages, hybrid groups, deterministic
     reductions) runs over the data-parallel ranks, those at the same place in their blocks.
     1 (default): none. Must divide the world size. */
  int tp_size;
  /* With ckpt_async: 1 (default) writes the rank files' data with O_DIRECT through io_uring where
     the file system takes it (one that refuses O_DIRECT, and a kernel without io_uring, get the
     page cache), so a background write puts no page-cache copy or writeback work on the cores that
     train; 0: through the page cache. The files are the same. */
  int ckpt_direct;
  /* With ckpt_async, the most bytes per second each rank's background write goes out at (0, the
     default: as fast as the disk takes them). Spreads a write that slows the steps it overlaps
     (host memory bandwidth, the disk) over more of them: the same bytes, committed later. */
  size_t ckpt_write_rate;
} zs_config;
enum { ZS_MUON_LR_ORIGINAL = 0, ZS_MUON_LR_MATCH_ADAMW = 1 };

/* Fills every field with its default (stage 3, CPU, fp32, comm_timeout_s 300, prefetch 1,
   offload_chunk 4Mi elements, ckpt_keep 2, comm_check 1, the optimizers' as their fields say, the
   rest 0) and struct_size/struct_version. The tunables stage, prefetch_units, deterministic,
   comm_timeout_s, bucket_bytes, max_live_bytes, offload_host_bytes, offload_threads,
   offload_chunk, offload_allow_unpinned, ckpt_keep, offload_budget_bytes, nvme_path, comm_check,
   flight_dir, flight_entries, ckpt_async, ckpt_staging_bytes, ckpt_keep_every, ckpt_direct and
   ckpt_write_rate are left unset: at zs_engine_create one still unset takes its environment
   variable (ZS_STAGE; empty is unset), else its default; a bad value fails zs_engine_create naming
   it. A value the program writes wins, even under the variable; writing ZS_UNSET back unsets it.
   zs_engine_info says each value's origin. A config zs_config_default did not fill is refused. */
ZS_API void zs_config_default(zs_config *c);
/* The zs_config.optimizer id of the optimizer named name ("adamw", "sgd", "lion", "muon",
   "adafactor"); an unknown name is ZS_ERR_INVALID_ARG, the message listing the names. */
ZS_API zs_status zs_optimizer_id(const char *name, int *id);
/* The name of optimizer id; NULL for an id no optimizer has (so 0, 1, ... until NULL lists all). */
ZS_API const char *zs_optimizer_name(int id);

typedef struct zs_comm zs_comm;
typedef struct zs_engine zs_engine;
typedef struct zs_unit zs_unit;

/* ======== Engine lifecycle ======== */

/* One tensor of a unit: a name (non-empty, unique in its unit, < 64 characters), up to 4 dims,
   all >= 0 (a zero-element tensor holds and updates nothing). no_weight_decay exempts it from
   weight decay. */
typedef struct {
  const char *name;
  int ndim;
  int64_t shape[4];
  int no_weight_decay;
} zs_tensor_desc;

/* Creates an engine over comm (which must outlive it). The config is validated and copied.
   Collective over the world (opens its groups and exchanges the ranks' placement: host, cgroup,
   GPU, offload NUMA node; offload workers take this rank's share of its node's cores). A rank
   that refuses its own arguments (an invalid config, out NULL) says so through comm first
   (zs_comm_allreduce, bounded by comm_timeout_s), so its peers fail at once with
   ZS_ERR_INVALID_ARG naming it rather than wait in a group it never opens. */
ZS_API zs_status zs_engine_create(const zs_config *cfg, zs_comm *comm, zs_engine **out);
/* Registers a unit (a layer, a block): its tensors live back to back in one flat buffer. Units are
   used in the order they are added (forward order). Names must be unique. *out stays owned by e.
   Not collective, but every rank must add the same units in the same order, with the same names,
   shapes and no_weight_decay (zs_engine_commit compares them). Before commit only (ZS_ERR_STATE
   after); ZS_ERR_INVALID_ARG names the bad descriptor and nothing is added. */
ZS_API zs_status zs_engine_add_unit(zs_engine *e, const char *name, int ntensors,
                                    const zs_tensor_desc *t, zs_unit **out);
/* Fixes the layout, places units (budget, NVMe tier: docs/MEMORY.md §6-§7) and allocates every
   shard. Collective over the world: all refuse when one does. ZS_ERR_OUT_OF_MEMORY when this
   rank's state and buffers would not fit, naming the bytes and what would fit, nothing allocated
   (docs/MEMORY.md §3). Every configuration field that shapes or updates the state (all but the
   local tunables), the units (names, tensors, shapes, no_weight_decay), the groups, the tp
   layouts and the frozen units must resolve alike on every rank, else ZS_ERR_INVALID_ARG on every
   rank naming the first that differs and both values (of the model's: their hashes). */
ZS_API zs_status zs_engine_commit(zs_engine *e);
/* Marks the engine failed and aborts its collectives at once (their kernels stop waiting for
   peers), for a wait of the caller's own that timed out behind the engine's work; later calls
   return ZS_ERR_STATE, destroy still works. Not collective: the peers learn of it at the
   destroy that follows (docs/COLLECTIVES.md §4). ZS_ERR_INVALID_ARG for NULL. */
ZS_API zs_status zs_engine_abort(zs_engine *e);
/* Releases everything the engine holds (its groups, then its memory); with the check on, one
   last exchange (bounded by comm_timeout_s) lets peers fail or return at once naming this call
   or the abort (docs/COLLECTIVES.md §4). A staged asynchronous save is committed first (between
   steps; it waits for the writers and, failing, says nothing: call zs_engine_save_wait before
   destroy to learn the outcome). Destroy engines that share a comm in the same order on every
   rank. zs_last_error() is left as it was before the call. NULL is a no-op. */
ZS_API void zs_engine_destroy(zs_engine *e);

/* ======== Communicators ======== */

/* Bootstrap from mpirun/srun: initialises MPI if the caller has not (and then finalises it in
   zs_comm_destroy). argc/argv may be NULL. Collective over MPI_COMM_WORLD, whose fatal error
   handler is replaced by MPI_ERRORS_RETURN until the last zs_comm_destroy. Each wait on the other
   ranks is bounded by ZS_COMM_TIMEOUT_S (else 300 s): a missing rank gives ZS_ERR_TIMEOUT naming
   the step; MPI is then not finalised, later calls return ZS_ERR_STATE (docs/COLLECTIVES.md §5). */
ZS_API zs_status zs_comm_init_mpi(int *argc, char ***argv, zs_comm **out);
/* Bootstrap from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (torchrun style): a TCP
   rendezvous on MASTER_ADDR:MASTER_PORT hands out the NCCL unique id, when an engine opens its
   groups or at the first zs_comm_allreduce (no network traffic here). Only for CUDA engines with
   NCCL: more than one rank with no visible GPU is ZS_ERR_UNSUPPORTED here (the CPU device needs
   MPI: use mpirun); a CPU engine on a multi-rank env comm is refused at create. */
ZS_API zs_status zs_comm_init_env(zs_comm **out);
ZS_API int zs_comm_rank(const zs_comm *c); /* -1 for NULL */
ZS_API int zs_comm_size(const zs_comm *c); /* -1 for NULL */
/* Element types and reductions of zs_comm_allreduce (the caller's own host values). */
typedef enum { ZS_HOST_F32 = 0, ZS_HOST_F64, ZS_HOST_I64 } zs_host_dtype;
typedef enum { ZS_RED_SUM = 0, ZS_RED_MEAN, ZS_RED_MAX, ZS_RED_MIN } zs_reduce_op;
/* Reduces count host values across every rank of c into recv on every rank (a logged loss, token
   counts), on either bootstrap, with the same bits on every rank, backend and run
   (docs/COLLECTIVES.md §6). Collective over the world (same count, dtype and op). send == recv is
   allowed; other overlaps, NULL with count > 0, an unknown dtype or op, or an i64 mean on any
   rank, and a count, dtype or op that differs across ranks, are ZS_ERR_INVALID_ARG on every rank
   before any value moves (the ranks exchange their calls' headers first; c stays usable). A
   silent peer gives ZS_ERR_TIMEOUT (zs_comm_set_timeout), and so does a call a peer posts after
   this rank's deadline had passed (the hosts' wall clocks must agree to well within the timeout,
   as NTP keeps them); after it or ZS_ERR_COMM every later call on c returns ZS_ERR_COMM: destroy
   c. One thread per comm. */
ZS_API zs_status zs_comm_allreduce(zs_comm *c, const void *send, void *recv, size_t count,
                                   zs_host_dtype dt, zs_reduce_op op);
/* Sets the bound on the communicator's own waits (zs_comm_allreduce; the env rendezvous when an
   engine opens its groups) to timeout_s > 0 seconds; engines keep their own comm_timeout_s.
   Not collective (set the same value on every rank). ZS_ERR_INVALID_ARG for NULL or a bound
   that is not a positive number. */
ZS_API zs_status zs_comm_set_timeout(zs_comm *c, double timeout_s);
/* Releases the communicator (after every engine that uses it has been destroyed); finalises MPI
   when zs_comm_init_mpi initialised it (collective then). NULL is a no-op. */
ZS_API void zs_comm_destroy(zs_comm *c);

/* ======== Parameters ======== */

/* Sets tensor t of u from host fp32 values (numel of the tensor): the fp32 master and the compute
   copy (lean mode: the bf16 params alone, rounded to nearest even) and a gathered copy the caller
   holds; a prefetched copy is dropped. Valid after commit, outside a step. Not collective, but
   every rank must set the same values (else the next step refuses them) and the same tensors
   between the same collective calls (else ZS_ERR_COMM at the unit's next gather), see
   docs/COLLECTIVES.md §7. On CUDA it waits for the engine's streams: ZS_ERR_TIMEOUT after
   comm_timeout_s fails the engine. ZS_ERR_INVALID_ARG / ZS_ERR_STATE: nothing written. */
ZS_API zs_status zs_unit_set_param(zs_unit *u, int t, const float *host_full);
/* zs_unit_set_param with the element count of host_full, checked against the tensor's:
   a mismatch is ZS_ERR_INVALID_ARG and nothing is written. */
ZS_API zs_status zs_unit_set_param_n(zs_unit *u, int t, const float *host_full, int64_t n);
/* Reads the full fp32 master values of tensor t into host memory (lean mode: the bf16 params,
   widened). After commit, between steps or inside one (the values before its update). Collective
   within the shard group when the optimizer state is sharded (shard_optimizer, on whenever grads
   or params are sharded), local when it is full. ZS_ERR_COMM / ZS_ERR_TIMEOUT fail the engine, and
   so does no memory for the gather's buffer (its peers are in the gather). */
ZS_API zs_status zs_unit_get_param(zs_unit *u, int t, float *host_full);
/* Tensor t's optimizer state by its checkpoint name ("exp_avg", "exp_avg_sq", "momentum_buffer";
   "master": zs_unit_get_param) in fp32 (a frozen unit's, or an array its group's optimizer does
   not keep: zeros; an Adafactor matrix's "variance" past its rows + cols factors: zeros; a tp
   slice's: its part of the whole matrix's, zs_unit_get_state_whole), as zs_unit_get_param reads. */
ZS_API zs_status zs_unit_get_state(zs_unit *u, int t, const char *name, float *host_full);
/* Writes it (bf16 rounded to nearest even) as zs_unit_set_param writes (the values past an
   Adafactor matrix's factors are dropped); not "master", a frozen unit's, or an array its group's
   optimizer does not keep (ZS_ERR_INVALID_ARG). */
ZS_API zs_status zs_unit_set_state(zs_unit *u, int t, const char *name, const float *host_full);
/* Tensor t's gradient of this step as the optimizer reads it before clipping (the sum over every
   micro-step of every rank / (world * micro_steps)), in fp32. Inside a step, after the unit's last
   zs_unit_grads_ready (ZS_ERR_STATE otherwise, and for a frozen or zs_unit_no_grad unit).
   Collective as zs_unit_get_param; a failed gather fails the engine. */
ZS_API zs_status zs_unit_get_grad(zs_unit *u, int t, float *host_full);
/* Replaces it for this step's norm, clipping and update (stored as the sum the reductions leave,
   host_full times world * micro_steps, so zs_unit_get_grad may read it one rounding off; bf16
   rounded to nearest even).
   When zs_unit_get_grad may read; local, with the same values on every rank: zs_engine_step
   refuses ranks that differ (ZS_ERR_INVALID_ARG on every rank, the step abandoned). */
ZS_API zs_status zs_unit_set_grad(zs_unit *u, int t, const float *host_full);
/* Names instead of indices (any time after the unit was added; local): u's tensor named `name`,
   the unit added as `name` (an unknown name is ZS_ERR_INVALID_ARG, listing the names there are),
   tensor t's name (NULL out of range; the engine's) and u's tensor count (-1 for NULL). */
ZS_API zs_status zs_unit_tensor_index(const zs_unit *u, const char *name, int *idx);
ZS_API zs_status zs_engine_find_unit(zs_engine *e, const char *name, zs_unit **out);
ZS_API const char *zs_unit_tensor_name(const zs_unit *u, int t);
ZS_API int zs_unit_num_tensors(const zs_unit *u);

/* Where tensor t of unit u (the unit_index-th added) lives in the caller's host memory: set *host
   to its first of numel row-major fp32 values, or NULL to leave it out; return non-zero to refuse
   the call (ZS_ERR_INVALID_ARG naming it, nothing moved). Called once per tensor, in order, before
   any value moves. Per-type arrays across layers: *host = qkvw + layer * 3 * C * C. With
   tp_size > 1 a split tensor is the whole tensor (numel the whole's: the bulk calls set and read
   as zs_unit_set_param_whole and zs_unit_get_param_whole do, get collective over the mesh). */
typedef int (*zs_param_locate_fn)(void *user, const zs_unit *u, int unit_index, int t,
                                  const char *tensor_name, int64_t numel, float **host);
/* Sets every tensor the callback locates, from the caller's arrays: zs_unit_set_param_whole for
   each (zs_unit_set_param's rules; local; after commit, between steps). ZS_ERR_INVALID_ARG and
   ZS_ERR_STATE write nothing; a failure while writing fails the engine. */
ZS_API zs_status zs_engine_set_params(zs_engine *e, zs_param_locate_fn fn, void *user);
/* Reads zs_unit_get_param's values of every tensor the callback locates into the caller's
   arrays, one unit's fp32 master at a time. Collective as zs_unit_get_param (every unit, even one
   the callback skips), and over the tp group as zs_unit_get_param_whole for split tensors; after
   commit, between steps. ZS_ERR_INVALID_ARG / ZS_ERR_STATE before
   anything is read; ZS_ERR_COMM / ZS_ERR_TIMEOUT fail the engine. */
ZS_API zs_status zs_engine_get_params(zs_engine *e, zs_param_locate_fn fn, void *user);
/* Makes every unit's params (master and compute copy) equal to rank root's on every rank (FSDP's
   sync_module_states), as if every rank set root's zs_unit_get_param values; the optimizer state
   stays. Values set before it are no longer compared (docs/COLLECTIVES.md §7). Collective over
   every rank (the tp group too), same root; after commit, between steps; one unit's fp32 master at
   a time. ZS_ERR_INVALID_ARG and ZS_ERR_STATE change nothing; a failure while moving fails the
   engine. Sharded params on more than one rank: ZS_ERR_UNSUPPORTED. It sends root's compute copy:
   with bf16 params every master becomes those values widened (remainders are lost). With tp_size >
   1 root is a data-parallel rank (ZS_MESH_DP): each tp rank's slices come from root of its
   data-parallel group, and the tensors that are not split from tp rank 0's, so that they are equal
   on every rank. */
ZS_API zs_status zs_engine_broadcast_params(zs_engine *e, int root);
/* cudaStream_t the user's kernels must run on; NULL on the CPU device (and for NULL). */
ZS_API void *zs_engine_stream(zs_engine *e);

/* ======== The training step ======== */

/* Starts a step of micro_steps micro-batches (gradient accumulation count, >= 1): zeroes full
   gradients. Not collective, except while an asynchronous save is staged
   (zs_engine_save_pending): then every rank must call it in the same place among its
   collectives, and it commits the save once all writers are done (ZS_ERR_COMM/TIMEOUT fail the
   engine). ZS_ERR_STATE before commit, inside a step or after a failure; ZS_ERR_COMM (the engine
   failed) when the launcher that started this rank (mpirun) has died. */
ZS_API zs_status zs_engine_begin_step(zs_engine *e, int micro_steps);
/* Makes the full params of u usable on the engine stream. With sharded params it all-gathers
   them unless prefetched, and prefetches the next units (docs/MEMORY.md §1): collective over the
   shard group, the same units in the same order on every rank, in training, evaluation and
   sampling alike (COLLECTIVES.md §3); else local. A held unit: a no-op. Release it after its
   forward and its backward; zs_engine_step ends every hold. ZS_ERR_OUT_OF_MEMORY when
   max_live_bytes leaves no room (nothing changed); ZS_ERR_COMM / TIMEOUT / DEVICE, or the
   device's OUT_OF_MEMORY, fail the engine; ZS_ERR_STATE before commit or after a failure. */
ZS_API zs_status zs_unit_gather(zs_unit *u);
/* 1 when this rank holds u's full params now (gathered by the caller, or prefetched), else 0
   (also for NULL, and before commit). With full params (shard_params off) they are always
   there: 1. For memory introspection and tests. */
ZS_API int zs_unit_is_gathered(const zs_unit *u);
/* Device pointer to tensor t of a gathered unit, in param_dtype, valid until the unit's release
   (or the step); NULL (zs_last_error says why) if not gathered or a bad t. Not collective. */
ZS_API void *zs_unit_param(zs_unit *u, int t);
/* Device pointer the user's backward accumulates (+=) into, in param_dtype, zeroed by the engine:
   at the start of each step, or (sharded gradients, and where a full gradient is staged:
   deterministic mode, grad_accum_fp32) for each micro-step, so the backward may += into it.
   Valid until the unit's next zs_unit_grads_ready (or zs_unit_grads_flush): call it again in every
   micro-step. NULL outside a step, after the unit's last grads_ready or zs_unit_no_grad, for a
   frozen unit (ZS_ERR_INVALID_ARG), or for a bad t. Not collective. */
ZS_API void *zs_unit_grad(zs_unit *u, int t);
/* Done with the params for now (forward); with sharded params the gathered copy is freed. Not
   collective. ZS_ERR_STATE without a matching gather. */
ZS_API zs_status zs_unit_release(zs_unit *u);
/* Backward of this unit finished for this micro-step: its gradient may be reduced. Collective
   (every rank, same units, same order) when it reduces: every micro-step with sharded gradients
   (shard_grads) and in deterministic mode, else the last one (the earlier calls are local).
   ZS_ERR_STATE outside a step or past micro_steps calls; a failed reduction fails the engine
   (ZS_ERR_COMM / ZS_ERR_TIMEOUT / ZS_ERR_DEVICE). */
ZS_API zs_status zs_unit_grads_ready(zs_unit *u);
/* Reduces what u's zs_unit_grad holds so far in this micro-step into the gradient shard and frees
   the full gradient (a later zs_unit_grad hands out a fresh zeroed one): for a gradient arriving
   in parts far apart, a tied embedding (docs/MEMORY.md §1). Collective over the shard group with
   sharded gradients; a no-op with full gradients and in deterministic mode. ZS_ERR_STATE outside
   a step or after the unit's last grads_ready, ZS_ERR_INVALID_ARG for NULL; a failed reduction
   fails the engine like zs_unit_grads_ready. */
ZS_API zs_status zs_unit_grads_flush(zs_unit *u);
/* Unit u gets no gradient in this step (torch's grad None, not a zero gradient): the step leaves
   its params, optimizer state and step count t as they are and its gradient out of the norm
   (docs/OPTIMIZER.md §3). Inside a step, before the unit's first grads_ready (ZS_ERR_STATE
   otherwise); then zs_unit_grad refuses it and grads_ready / grads_flush are no-ops, as for a
   frozen unit. Every rank alike (zs_engine_step checks). Local. */
ZS_API zs_status zs_unit_no_grad(zs_unit *u);

/* Output structs keep their size within a major version: struct_version says what is filled. */
typedef struct {
  float grad_norm;       /* global L2 norm of the mean gradient, before clipping */
  int skipped_nonfinite; /* 1 if a gradient was NaN/Inf: the step was skipped, weights untouched */
  double step_seconds;   /* wall time from begin_step to the end of zs_engine_step */
  unsigned struct_version; /* 1: the fields above; 2: also check_seconds; 3: also comm_seconds
                              and update_seconds; 4: also io_seconds; 5: also gpu_* */
  unsigned gpu_missed;     /* GPU timing pairs left out of the gpu_* figures (not yet complete when
                              read, over 1024 in the step, or failed to record; INT_MAX: the step
                              went untimed, its events could not be made); 0 on the CPU */
  double check_seconds;    /* of step_seconds, this rank's wall time in the divergence check's
                              exchanges (0 with comm_check 0; on nccl the host's share: queueing
                              them, and a wait for a slot; docs/COLLECTIVES.md §2) */
  /* Of step_seconds, this rank's wall time in the engine's collectives (gathers, reductions,
     syncs; not the exchanges above), in the optimizer update (0 when skipped) and waiting for the
     NVMe tier's disk, each without the others: the rest is the caller's forward, backward, data. */
  double comm_seconds, update_seconds, io_seconds;
  /* CUDA (0 on the CPU), from timing events on the engine's streams, read at the step's end
     without a wait: the GPU time of the step's collectives, summed (those on different streams
     may overlap each other and compute), and the time the compute stream stood waiting for the
     comm stream's work (a gather, the reductions at the step's end): the exposed communication;
     the rest of gpu_comm_seconds ran hidden behind compute. On the host-staged mpi backend the
     collectives finish on the host before they return: exposed is then about 0, the waits are
     in comm_seconds. */
  double gpu_comm_seconds, gpu_exposed_seconds;
} zs_step_stats;
/* Ends the step: waits for the reductions, computes the global gradient norm, clips, runs the
   optimizer on this rank's share of its state (docs/OPTIMIZER.md §1-§3), publishes updated full
   params, and ends every hold. A
   non-finite gradient skips the update (st->skipped_nonfinite). st may be NULL. Collective over
   the world. ZS_ERR_STATE without begin_step or before every unit's micro_steps-th grads_ready
   (frozen units need none; nothing changes). Ranks whose step shapes (micro_steps, grads_ready
   calls, step number) differ: ZS_ERR_COMM naming both, nothing updated, the engine failed. Set
   values that differ across ranks: ZS_ERR_INVALID_ARG on every rank naming the tensor, the step
   abandoned, the engine usable (docs/COLLECTIVES.md §7). Any later failure fails the engine (the
   update may be half applied). */
ZS_API zs_status zs_engine_step(zs_engine *e, zs_step_stats *st);
/* Sets the learning rate used from the next zs_engine_step on (schedules). Not collective, but
   every rank must set the same value. ZS_ERR_INVALID_ARG for a negative or non-finite lr. */
ZS_API zs_status zs_engine_set_lr(zs_engine *e, float lr);

/* ======== Memory planning ======== */

typedef struct {
  size_t cur, peak;
} zs_bytes;
typedef struct {
  zs_bytes params, grads, optimizer, buffers, host_pinned, total;
  unsigned struct_version; /* 1: the fields above */
  unsigned reserved_u;
  zs_bytes reserved[6];
} zs_memory;
/* What the plan will allocate on this rank by category, from the units added so far (not
   collective): zs_plan_model's figures (below) for this engine; total their sum, cur = peak;
   ZS_ERR_INVALID_ARG for NULL. */
ZS_API zs_status zs_engine_plan_memory(const zs_engine *e, zs_memory *out);

/* What one rank needs for a model under a configuration, without an engine and without
   allocating anything (zs_plan_model; the zshard-plan tool prints it). params, grads, optimizer
   and host_pinned are exactly what zs_engine_commit allocates (zs_plan_model, which knows no
   shapes, counts an Adafactor configuration's state over every element where a matrix keeps its
   factors alone: a bound without an offload budget or the NVMe tier, and with them a placement
   that may move more units than commit's; zs_plan_model_units is exact); buffers is the bound on
   the transient buffers (docs/MEMORY.md §2); activations is what the caller said. device_total =
   params + grads + optimizer + buffers + activations, host_total = host_pinned (offloaded
   state). */
typedef struct {
  size_t params, grads, optimizer, buffers, activations, host_pinned;
  size_t device_total, host_total;
  int fits;          /* 1 when it fits the memory given (see zs_plan_model) */
  char verdict[512]; /* "fits: needs 1.2 GiB on each GPU at stage 3 with 4 ranks", or "does not
                        fit: needs 93.4 GiB ...; fits with 8 ranks or with optimizer offload":
                        zs_engine_commit refuses with the same sentence */
  unsigned struct_version; /* 1: the fields above; 2: also the placement below; 3: the NVMe
                              tier's too; 4: ckpt_staging */
  unsigned reserved_u;
  /* With an offload budget (zs_config.offload_budget_bytes; all 0 without): the units it places
     on the host (zs_plan_placement says which), and the least budget the model fits (every unit
     on the host). */
  size_t host_units, budget_floor;
  /* With the NVMe tier (zs_config.nvme_path; all 0 without): the units whose optimizer state it
     places on the tier, the disk bytes of that state (in the tier's files, not in host_pinned)
     and the host bytes of the tier's staging (in host_pinned). */
  size_t nvme_units, disk_bytes, nvme_staging;
  /* With ckpt_async: a bound on the host memory an asynchronous save stages on a rank (its share
     of a checkpoint, at most ckpt_staging_bytes), kept by the engine from the first save on and
     not in host_pinned above; 0 without. */
  size_t ckpt_staging;
  size_t reserved[2];
} zs_plan_report;
/* Plans nunits units (unit_numel[i] >= 0 elements each, forward order) under cfg (as given: no
   environment) on world_size ranks (every rank, as zs_engine_create counts them: with tp_size > 1
   one rank's units, its slices, over world_size / tp_size data-parallel ranks), with
   activation_bytes more of the caller's device memory per rank, against device_bytes and
   host_bytes per rank (SIZE_MAX: unlimited; the CPU device draws on device_bytes).
   ZS_ERR_INVALID_ARG for NULL, a bad count, a config the engine would refuse, a tp_size or shard
   group that does not divide the world (out untouched). Local; allocates nothing. */
ZS_API zs_status zs_plan_model(const zs_config *cfg, int world_size, const int64_t *unit_numel,
                               int nunits, size_t activation_bytes, size_t device_bytes,
                               size_t host_bytes, zs_plan_report *out);
/* Which units an offload budget (cfg->offload_budget_bytes, see zs_config) places on the host:
   host[i] = 1 for unit i (its optimizer state and, with sharded params, its param shard in the
   host arena), else 0; all 0 without a budget. Exactly zs_engine_commit's placement for these
   unit sizes (with Muon or Adafactor as the configuration's optimizer the planner bounds their
   step buffers, zs_plan_model, so it may put more units on the host than commit); a model over its
   budget has every unit on the host (and zs_plan_model says it does not fit). The same arguments
   and errors as zs_plan_model. Not collective; allocates nothing. */
ZS_API zs_status zs_plan_placement(const zs_config *cfg, int world_size, const int64_t *unit_numel,
                                   int nunits, unsigned char *host);

/* ======== Frozen units ======== */

/* Freezes (frozen != 0) or unfreezes u. A frozen unit has params only: no gradient, no fp32
   master, no optimizer state (on any tier); its params never change in a step (docs/MEMORY.md §8).
   Before zs_engine_commit only (ZS_ERR_STATE after); every rank must freeze the same units.
   ZS_ERR_INVALID_ARG for NULL. Not collective. */
ZS_API zs_status zs_unit_freeze(zs_unit *u, int frozen);
/* 1 when u is frozen, else 0 (also for NULL). */
ZS_API int zs_unit_is_frozen(const zs_unit *u);
/* zs_plan_model for a model with frozen units: unit_frozen[i] non-zero freezes unit i (NULL:
   none, exactly zs_plan_model). Same errors, not collective, allocates nothing. */
ZS_API zs_status zs_plan_model_frozen(const zs_config *cfg, int world_size,
                                      const int64_t *unit_numel, const int *unit_frozen, int nunits,
                                      size_t activation_bytes, size_t device_bytes,
                                      size_t host_bytes, zs_plan_report *out);
/* A unit for zs_plan_model_units: its tensors as zs_engine_add_unit takes them (names unread; a
   tp-split tensor's slice, as each rank registers it), each one's optimizer (a zs_optimizer_id;
   -1, or optimizer NULL: the configuration's), whether it is frozen, and each one's group's
   momentum (NULL: the configuration's sgd.momentum), which decides whether SGD keeps a buffer. */
typedef struct {
  int ntensors;
  const zs_tensor_desc *tensors;
  const int *optimizer; /* per tensor: the optimizer of its parameter group */
  int frozen;
  const float *momentum; /* per tensor: its parameter group's momentum (zs_param_group) */
} zs_plan_unit;
/* zs_plan_model for units given by their tensors and each tensor's group's optimizer: what
   zs_engine_plan_memory says of an engine with these units and groups. Unlike zs_plan_model,
   which knows no shapes or groups, it counts the whole-tensor step's buffers (Muon, Adafactor)
   of every tensor on such an optimizer, and an Adafactor matrix's state (its factors), from its
   shape (docs/MEMORY.md §2). Errors:
   zs_plan_model's, and zs_engine_add_group's and zs_engine_commit's for a tensor's optimizer
   (more state arrays than the configuration's, a precision mode it does not run, a vector on
   one that updates matrices), naming the unit and tensor by index. Not collective; allocates
   nothing that outlives the call. With cfg->tp_size > 1 it plans no tensor as split: see
   zs_plan_model_units_tp. */
ZS_API zs_status zs_plan_model_units(const zs_config *cfg, int world_size,
                                     const zs_plan_unit *units, int nunits, size_t activation_bytes,
                                     size_t device_bytes, size_t host_bytes, zs_plan_report *out);
/* zs_plan_placement for units of tensors (zs_plan_model_units' arguments and errors): which units
   an offload budget places on the host, exactly as zs_engine_commit places them. */
ZS_API zs_status zs_plan_placement_units(const zs_config *cfg, int world_size,
                                         const zs_plan_unit *units, int nunits,
                                         unsigned char *host);
/* zs_plan_model_units and zs_plan_placement_units with tensor parallelism: tp[i][k] is unit i's
   tensor k's zs_tp_layout (as zs_unit_set_tp; tp NULL, or tp[i] NULL: none split), which sizes a
   split Muon or Adafactor tensor's whole step (joined over the tp group: docs/PARALLEL.md §6)
   and the factors a split Adafactor matrix's slices keep (tp rank 0's, the most, which every
   rank allocates). Their errors, and ZS_ERR_INVALID_ARG for a layout zs_unit_set_tp refuses. */
ZS_API zs_status zs_plan_model_units_tp(const zs_config *cfg, int world_size,
                                        const zs_plan_unit *units, const int *const *tp, int nunits,
                                        size_t activation_bytes, size_t device_bytes,
                                        size_t host_bytes, zs_plan_report *out);
ZS_API zs_status zs_plan_placement_units_tp(const zs_config *cfg, int world_size,
                                            const zs_plan_unit *units, const int *const *tp,
                                            int nunits, unsigned char *host);
/* zs_plan_placement for a model with frozen units (unit_frozen as zs_plan_model_frozen's; NULL:
   exactly zs_plan_placement; what a frozen unit moves: docs/MEMORY.md §6). Same errors, not
   collective, allocates nothing. */
ZS_API zs_status zs_plan_placement_frozen(const zs_config *cfg, int world_size,
                                          const int64_t *unit_numel, const int *unit_frozen,
                                          int nunits, unsigned char *host);

/* ======== Checkpoints and export ======== */

/* Saves the training state into a new checkpoint dir/ckpt-<12 digits>/ (dir created if missing;
   numbered zs_engine_steps_done, or above the highest in dir, so the newest is the highest): each
   rank's share of the master and optimizer state in fp32 (docs/OPTIMIZER.md §7), rank 0 a
   manifest with checksums. Atomic: after a crash or an error the previous checkpoint is the latest
   loadable one. Then checkpoints beyond the newest ckpt_keep, and crashed saves' leftovers, are
   deleted. With tp_size > 1 each tp rank writes its slices, and the manifest records the whole
   shapes and layouts. dir: on a file system every rank sees. Collective over every rank, between
   steps (ZS_ERR_STATE otherwise); one saving job per dir. Errors, alike on every rank: ZS_ERR_IO
   (disk full, permissions; nothing of it stays), ZS_ERR_INVALID_ARG (NULL, ranks naming different
   paths). */
ZS_API zs_status zs_engine_save(zs_engine *e, const char *dir);
/* With ckpt_async, zs_engine_save returns once every rank's share is staged (a copy in host
   memory, kept for the next save: later steps do not change it, and the ledger's host_pinned
   counts it) and a thread per rank writes it; the previous checkpoint stays the latest until the
   manifest is committed, at the first zs_engine_begin_step that finds every rank's writer done, or
   at zs_engine_save_wait, the next save, a load or destroy (between steps), whichever comes first.
   One save at a time: a save or load waits for a staged one. A failed background write leaves
   nothing of it and the engine usable; zs_engine_save_wait, or else the next zs_engine_save (which
   then does not save: call it again), returns it. zs_engine_save_wait waits for a staged save,
   commits it and returns its outcome or that of one a later call ended (ZS_OK: none). Collective
   over the world, between steps; zs_engine_save's errors. zs_engine_save_pending: 1 while a save is
   staged and not committed, else 0 (also for NULL); local. */
ZS_API zs_status zs_engine_save_wait(zs_engine *e);
ZS_API int zs_engine_save_pending(const zs_engine *e);
/* Loads a checkpoint saved by any world size, shard group, stage, offload, hybrid layout or tp
   size and layouts into this committed engine (same units, tensor names, whole shapes and
   param_dtype; each element goes through the whole tensor to this rank's slice): dir is a
   checkpoint or a directory of them (the newest). Sets the master, optimizer state, params and step
   counts. Collective over every rank; the ranks agree before anything is written, so a refused load
   changes nothing: ZS_ERR_CORRUPT (damaged, truncated or missing file, checksum, format),
   ZS_ERR_INVALID_ARG (another model or optimizer: the first difference), ZS_ERR_IO, ZS_ERR_STATE
   (inside a step, before commit, a unit gathered). A file changed between check and read, or a
   failed NVMe tier write, fails the engine. */
ZS_API zs_status zs_engine_load(zs_engine *e, const char *dir);
/* Program bytes (a schedule's state, a data position; at most ZS_USER_META_MAX) that each later
   zs_engine_save stores (rank 0's copy) and zs_engine_load restores; NULL, 0 clears. Local. */
#define ZS_USER_META_MAX 65536
ZS_API zs_status zs_engine_set_user_meta(zs_engine *e, const void *data, size_t bytes);
/* Those bytes (the last set's or load's; NULL, 0: none), valid until either call or destroy. */
ZS_API zs_status zs_engine_user_meta(const zs_engine *e, const void **data, size_t *bytes);

/* How zs_engine_export_safetensors_ex writes one tensor; the callback may change any field. */
typedef struct {
  char name[256]; /* the name in the file; default "<unit>.<tensor>" */
  int skip;       /* 1: leave the tensor out */
  int transpose;  /* 2-D tensors only: write the [cols, rows] transpose */
  int64_t rows;   /* keep only the first rows of dimension 0 (0 = all): drops padding rows */
} zs_export_tensor;
/* Called for every tensor, on every rank, with the same arguments: must answer the same on all
   (answers that differ are refused on every rank with ZS_ERR_INVALID_ARG, nothing written).
   Returns 0, or non-zero to refuse the export (ZS_ERR_INVALID_ARG). */
typedef int (*zs_export_tensor_fn)(void *ctx, const char *unit, const char *tensor, int ndim,
                                   const int64_t *shape, zs_export_tensor *out);
typedef struct {
  size_t struct_size;            /* set by zs_export_options_default */
  zs_dtype dtype;                /* ZS_F32 (default) or ZS_BF16 (rounded to nearest even) */
  zs_export_tensor_fn tensor_fn; /* NULL: every tensor as "<unit>.<tensor>", as it is */
  void *ctx;                     /* passed to tensor_fn */
} zs_export_options;
/* Defaults: fp32, default names, struct_size set. */
ZS_API void zs_export_options_default(zs_export_options *o);
/* Writes the consolidated master weights to a safetensors file at path (metadata: format "pt",
   zshard_version, step), one unit's gathered fp32 master at a time, through path.tmp, fsync and
   a rename (path is the old file or the whole new one; nothing is left behind on failure). o
   NULL: the defaults. With tp_size > 1 the file holds whole tensors (the callback sees their
   shapes), rank 0 writes it. Collective over every rank, between steps. Errors, alike on every
   rank: ZS_ERR_INVALID_ARG (bad or duplicate names, a refused tensor, bad dtype, options whose
   struct_size zs_export_options_default did not set), ZS_ERR_IO; a
   failed gather or NVMe read fails the engine. */
ZS_API zs_status zs_engine_export_safetensors_ex(zs_engine *e, const char *path,
                                                 const zs_export_options *o);
/* zs_engine_export_safetensors_ex with the defaults: fp32, "<unit>.<tensor>" names. */
ZS_API zs_status zs_engine_export_safetensors(zs_engine *e, const char *path);

/* ======== Introspection ======== */

/* Bytes this rank's engine holds, by category, current and peak (the ledger). Not collective. */
ZS_API zs_status zs_engine_memory(const zs_engine *e, zs_memory *out);
/* Number of units, unit i (NULL when out of range), the unit's name, and tensor t's element
   count (-1 when out of range). Not collective; owned by the engine. */
ZS_API int zs_engine_num_units(const zs_engine *e);
ZS_API zs_unit *zs_engine_unit(zs_engine *e, int i);
ZS_API const char *zs_unit_name(const zs_unit *u);
ZS_API int64_t zs_unit_numel(const zs_unit *u, int t);
/* Tensor t of u as added (its name owned by the engine); ZS_ERR_INVALID_ARG out of range. */
ZS_API zs_status zs_unit_tensor(const zs_unit *u, int t, zs_tensor_desc *out);
/* The engine's effective configuration (environment variables and defaults resolved), owned by
   the engine; NULL for NULL. */
ZS_API const zs_config *zs_engine_config(const zs_engine *e);
/* One line for people (programs read the same facts from zshard_facts.h): backends, stage,
   sharding, device, optimizer and its state's precision, each tunable and its origin
   ("prefetch_units=2 (ZS_PREFETCH_UNITS)"); after commit the groups, the budget's placement and
   the NVMe tier's placement and I/O. */
ZS_API const char *zs_engine_info(const zs_engine *e);
/* The GPU's own counters beside the ledger: the whole device's bytes (every process's) and the
   percent of the driver's last sample period a kernel ran / memory was busy. */
typedef struct {
  size_t used_bytes, total_bytes;
  unsigned util_gpu_pct, util_mem_pct, struct_version /* 1 */, reserved_u;
  size_t reserved[4];
} zs_device_usage;
/* Reads them through NVML, loaded at the first call (builds and CPU runs need no driver).
   ZS_ERR_UNSUPPORTED, saying why, on the CPU device or without NVML; ZS_ERR_DEVICE when NVML
   refuses a read. Local. */
ZS_API zs_status zs_engine_device_usage(zs_engine *e, zs_device_usage *out);
/* Number of completed (not skipped) optimizer steps; -1 for NULL. */
ZS_API int64_t zs_engine_step_count(const zs_engine *e);
/* Number of completed zs_engine_step calls, skipped (non-finite) ones included: where a resumed
   run's data and schedule continue (restored by zs_engine_load); -1 for NULL. */
ZS_API int64_t zs_engine_steps_done(const zs_engine *e);

/* ======== Parameter groups ======== */

/* A group's optimizer and hyperparameters, for its tensors in place of the configuration's
   (OPTIMIZER.md §8). Start from zs_engine_group_default: a later zshard may add fields, and a
   group from an older header (a smaller struct_size) gets the defaults for them. */
typedef struct {
  size_t struct_size; /* set by zs_engine_group_default: sizeof(zs_param_group) of the header */
  float lr_scale;     /* the group's lr: the engine's (zs_engine_set_lr's too) times this */
  float weight_decay; /* a tensor's no_weight_decay still exempts it */
  float beta1, beta2, eps; /* optim.beta1, beta2 (AdamW, Lion), eps (AdamW) */
  float momentum;          /* sgd.momentum (SGD; dampening and nesterov stay the config's) */
  /* Its optimizer by name ("muon"; zs_optimizer_id's names), keeping at most as many state
     arrays as the configuration's; NULL (zs_engine_group_default's): the configuration's. */
  const char *optimizer;
} zs_param_group;
#define ZS_MAX_PARAM_GROUPS 64 /* group 0, the configuration's, included */

/* The configuration's values as a group (lr_scale 1): a starting point. */
ZS_API zs_status zs_engine_group_default(const zs_engine *e, zs_param_group *g);
/* Adds a group, checked as the configuration is (nothing added on error; a struct_size that no
   zshard header gave, such as a memset group's 0, is ZS_ERR_INVALID_ARG); *id gets its number
   (1, 2, ...; every tensor starts in group 0, the configuration's). Before commit. */
ZS_API zs_status zs_engine_add_group(zs_engine *e, const zs_param_group *g, int *id);
/* Puts tensor t of u (-1: all of u's) in group id. Before commit, the same on every rank. */
ZS_API zs_status zs_unit_set_group(zs_unit *u, int t, int id);

/* ======== Tensor parallelism (zs_config.tp_size; docs/PARALLEL.md) ======== */

/* How the ranks of a tensor-parallel group hold a tensor. Each rank registers, sets and reads
   its own slice (the shape its zs_tensor_desc gives); the engine shards each slice over the
   data-parallel ranks as it would a whole tensor. */
typedef enum {
  ZS_TP_REPLICATED = 0, /* the whole tensor on every rank, with the same gradient (default) */
  ZS_TP_SPLIT_DIM0,     /* slices along dim 0: column-parallel weights and their biases, a
                           vocabulary-parallel embedding */
  ZS_TP_SPLIT_DIM1,     /* slices along dim 1: row-parallel weights */
  ZS_TP_PARTIAL_GRAD    /* the whole tensor on every rank, each rank's gradient a part of it
                           (a sequence-parallel norm's weight): the engine sums the parts over the
                           tp group before it reduces the gradient */
} zs_tp_layout;
/* Gives tensor t of u (-1: all of u's) a layout. Before commit, the same on every rank; a split
   layout needs the dimension it splits (ZS_TP_SPLIT_DIM1: ndim >= 2). The global gradient norm
   counts split tensors on every tp rank and the others once. */
ZS_API zs_status zs_unit_set_tp(zs_unit *u, int t, zs_tp_layout layout);
/* zs_unit_set_param and zs_unit_get_param by the whole tensor, across the tp group: set takes the
   whole tensor (the same on every tp rank) and keeps this rank's slice by t's layout; get reads
   every tp rank's slice and puts them together (collective over the tp group as well). A split
   tensor's whole numel is tp_size times its slice's; the others' is the slice's. With tp_size 1
   the same as set/get_param. */
ZS_API zs_status zs_unit_set_param_whole(zs_unit *u, int t, const float *host_whole);
ZS_API zs_status zs_unit_get_param_whole(zs_unit *u, int t, float *host_whole);
/* The same for optimizer state by name and for this step's gradient: zs_unit_set_state,
   zs_unit_get_state, zs_unit_set_grad and zs_unit_get_grad (their rules and call order) by the
   whole tensor. */
ZS_API zs_status zs_unit_set_state_whole(zs_unit *u, int t, const char *name,
                                         const float *host_whole);
ZS_API zs_status zs_unit_get_state_whole(zs_unit *u, int t, const char *name, float *host_whole);
ZS_API zs_status zs_unit_set_grad_whole(zs_unit *u, int t, const float *host_whole);
ZS_API zs_status zs_unit_get_grad_whole(zs_unit *u, int t, float *host_whole);

/* A dimension of the engine's mesh: ZS_MESH_TP, the tensor-parallel group (tp_size consecutive
   ranks); ZS_MESH_DP, the data-parallel ranks (the same place in every tp group). */
typedef enum { ZS_MESH_TP = 0, ZS_MESH_DP = 1 } zs_mesh_dim;
/* This rank's place in dimension dim and the dimension's size. ZS_ERR_INVALID_ARG for NULL
   arguments or an unknown dim. */
ZS_API zs_status zs_engine_mesh(const zs_engine *e, zs_mesh_dim dim, int *rank, int *size);
/* The model's own collectives over the tp group (dim ZS_MESH_TP only), on device buffers of the
   engine's device (host memory on the CPU) in dt (ZS_F32 or ZS_BF16), ordered on the engine's
   compute stream and complete when they return. Sums; with zs_config.deterministic in rank order
   (the same bits whatever the data-parallel split). After commit, in or out of a step, the same
   calls on every rank of the group; a one-rank group copies. all_reduce: count elements of buf in
   place. all_gather: count elements from each rank, rank r's at recv + r * count (in place:
   send = recv + rank * count). reduce_scatter:
   send holds size * count elements; rank r gets the sum of block r in recv. Arguments are
   checked on each rank alone (ZS_ERR_INVALID_ARG, nothing sent: its peers then wait until
   comm_timeout_s); a failed or timed-out collective fails the engine. */
ZS_API zs_status zs_engine_all_reduce(zs_engine *e, zs_mesh_dim dim, void *buf, size_t count,
                                      zs_dtype dt);
ZS_API zs_status zs_engine_all_gather(zs_engine *e, zs_mesh_dim dim, const void *send, void *recv,
                                      size_t count, zs_dtype dt);
ZS_API zs_status zs_engine_reduce_scatter(zs_engine *e, zs_mesh_dim dim, const void *send,
                                          void *recv, size_t count, zs_dtype dt);

#ifdef __cplusplus
}
#endif

#endif /* ZSHARD_H */
