/* zshard — a memory-sharding training engine (ZeRO / FSDP style) for C training loops.
 *
 * This header is the engine's public API; the GPT-2 training kernels are in zshard_kernels.h
 * (their own library, libzshard_kernels, which uses this API; this header and libzshard never
 * need the kernels). Its sections, in reading order: status and errors, versions,
 * configuration (with the memory rule of sharded params), communicators, engine lifecycle
 * (create, commit, abort, destroy), parameters, the training step (with the learning rate),
 * memory planning, checkpoints and export, introspection. docs/ARCHITECTURE.md explains how the
 * engine works inside.
 *
 * Collectivity follows the sharding switches (zs_config: shard_params, shard_grads,
 * shard_optimizer), not the stage number: the stage only sets the switches left at
 * ZS_SHARD_AS_STAGE (1 shards the optimizer state, 2 also the gradients, 3 also the params). So
 * "sharded params" below means shard_params in effect: stage 3, or ZS_SHARD_YES at any stage.
 *
 * Conventions, true of every call unless its comment says otherwise:
 *  - Errors: a call that can fail returns zs_status; on failure zs_last_error() (per thread)
 *    holds a sentence naming the cause and the fix. The library never prints, exits or aborts. A
 *    refused call (ZS_ERR_INVALID_ARG, ZS_ERR_STATE) changes nothing.
 *  - Collective calls say so, and over which group: every rank of it must make them, in the same
 *    order, with the same units. Calls not marked collective are local to the rank.
 *  - Ranks that diverge (another collective call, another unit, another order, another
 *    micro_steps, a save where the others step, an extra or missing zs_unit_grads_ready) get a
 *    non-OK status on every rank; how early, and whether data already moved, depends on the
 *    backend. On the mpi backends (every CPU run) with the check on (default), the engine's
 *    groups compare a small header (sequence number, operation, count, dtype, and the public
 *    call, its unit, the unit an all-gather of params moves and whether it is a prefetch, step,
 *    micro-step) before each collective: every rank of the group fails at once with
 *    ZS_ERR_COMM, "ranks diverged ... this rank (r) called X; rank q called Y", before any data
 *    moves. Every backend, with or without the check, folds the same headers into a running hash
 *    per group, and zs_engine_step makes every rank agree on the step's shape (micro_steps,
 *    zs_unit_grads_ready calls, step number, the hashes) before the update (ZS_ERR_COMM "the
 *    ranks disagree on the step's shape"). So with the check off or on nccl a divergence is
 *    only caught at the next zs_engine_step, and only if it did not hang or fail first: until
 *    then collectives of the same size pair with each other and may have moved wrong data (a
 *    gather outside a step, a zs_unit_get_param, a save or an export are not covered), and a
 *    divergence in sizes or in the number of collectives ends in ZS_ERR_TIMEOUT after
 *    comm_timeout_s or a transport error. A peer that makes no collective call at all ends in
 *    ZS_ERR_TIMEOUT after comm_timeout_s; with the check on, a rank that arrives after a peer
 *    gave up fails at once (ZS_ERR_TIMEOUT, "gave up"; every rank of that exchange reaches the
 *    same verdict from the exchanged words). Calls that are local in the configuration are not
 *    compared, so legal programs are never flagged: zs_unit_gather with full params,
 *    zs_unit_get_param with a full optimizer state, a zs_unit_grads_ready before the last
 *    micro-step with full gradients (not deterministic). After a divergence error
 *    destroy the engine and the comm and exit: every rank finalises MPI normally. The check is on
 *    by default in every build type; zs_config.comm_check = 0 (or ZS_COMM_CHECK=0) turns it off
 *    (the hash and the step's agreement stay). It costs one small all-gather per collective (one
 *    latency: under 1% of a step on real models, up to +87% per step for tiny units on 4 ranks
 *    sharing 2 cores, bench/RESULTS.md).
 *  - Sampling or evaluating on one rank: with sharded params zs_unit_gather is collective, so
 *    every rank runs the forward (for example all ranks sample with the same seed and rank 0
 *    prints). A rank that wants to sample alone first has every rank call zs_unit_get_param for
 *    each tensor (collective when the optimizer state is sharded; one unit's fp32 master at a
 *    time on the engine) and runs its forward from those host copies, outside the engine. With
 *    full params (shard_params off: stages 0-2 unless set) zs_unit_gather is local and one rank
 *    may sample alone.
 *  - Failure: ZS_ERR_COMM, ZS_ERR_TIMEOUT or ZS_ERR_DEVICE from a collective, or from a wait
 *    behind one, fails the engine: its groups are aborted, later calls return ZS_ERR_STATE, and
 *    the only thing left to do is zs_engine_destroy (restart from a checkpoint).
 *  - Threads: an engine, its units and a kernels context are used by one thread at a time (no
 *    locks inside); different engines may live on different threads. zs_version, zs_status_str
 *    and zs_last_error are thread-safe.
 *  - Ownership: handles are opaque. The caller owns what it creates and destroys it (engines
 *    before their comm); units belong to their engine. Pointers the engine hands out
 *    (zs_unit_param, zs_unit_grad) stay valid until the call their comment names.
 *  - Lifecycle: comm init -> engine create -> add units -> commit -> set params -> steps ->
 *    destroy.
 */
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
/* Values of zs_config.master (optimizer-state precision; "The optimizer" below). */
enum {
  ZS_MASTER_FP32 = 0,
  ZS_MASTER_PARAMS = 1,
  ZS_MASTER_REMAINDER = 2,
  ZS_MASTER_LEAN = 3,
};
/* Values of the sharding switches in zs_config. */
enum { ZS_SHARD_AS_STAGE = 0, ZS_SHARD_YES = 1, ZS_SHARD_NO = 2 };

/* Engine configuration. Always start from zs_config_default() and change only what you mean.
   The fields that have an environment variable (see zs_config_default) start "unset" (ZS_UNSET,
   or ZS_UNSET_SIZE for size_t fields), like NCCL's NCCL_CONFIG_UNDEF_INT: at zs_engine_create a
   field still unset takes its variable when that is set, else its default; any value the program
   writes wins, even one equal to the default (cfg.stage = 3 stays 3 under ZS_STAGE=0). Writing
   ZS_UNSET back makes a field unset again. zs_engine_info says where each resolved value came
   from, and zs_engine_config returns the resolved values (never unset). */
#define ZS_CONFIG_VERSION 1
#define ZS_UNSET INT_MIN       /* int and double tunables: take the env, else the default */
#define ZS_UNSET_SIZE SIZE_MAX /* size_t tunables: the same */
/* zs_config.offload_budget_bytes = ZS_BUDGET_FREE: the budget is what is free on the device at
   zs_engine_commit, the least over the ranks (see offload_budget_bytes). */
#define ZS_BUDGET_FREE (SIZE_MAX - 1)
/* The bytes of free GPU memory a ZS_BUDGET_FREE budget leaves to others on CUDA (per rank). */
#define ZS_BUDGET_FREE_RESERVE ((size_t)512 << 20)

typedef struct {
  size_t struct_size;      /* set by zs_config_default: sizeof(zs_config) of the caller's header;
                              fields beyond it (a newer library) take their defaults */
  unsigned struct_version; /* ZS_CONFIG_VERSION of the caller's header */
  int stage; /* 0..3: what is sharded; default 3. The shorthand of the three switches below:
                1 shards the optimizer state, 2 also the gradients, 3 also the params */
  /* Independent sharding switches: ZS_SHARD_AS_STAGE (0, the default), ZS_SHARD_YES (sharded
     over the shard group) or ZS_SHARD_NO (full on every rank). The optimizer state must be
     sharded whenever the gradients or the params are (each rank updates what it owns); for
     example shard_params = ZS_SHARD_YES with stage 1 keeps full gradients but gathers params
     just in time. */
  int shard_params, shard_grads, shard_optimizer;
  zs_device device;
  int device_index;      /* GPU ordinal; -1 = pick by local rank (default) */
  zs_dtype param_dtype;  /* dtype of gathered params and of grads handed to the user */
  zs_dtype reduce_dtype; /* dtype gradients are reduced in */
  unsigned offload;      /* ZS_OFFLOAD_* bits */
  int deterministic;     /* fixed-order reductions: the same bits for any split of a global batch
                            into ranks x micro-steps, any stage and offload (see below) */
  int prefetch_units;    /* sharded params: units gathered ahead (0 = none); see the memory rule */
  size_t bucket_bytes;   /* upper bound of one reduction message: larger units are reduced in
                            pieces, bounding reduction scratch to ~2x this (0 = whole units).
                            Pieces never change the bits. */
  size_t max_live_bytes; /* sharded params: limit on all gathered bytes (held + prefetched),
                            0 = none. See the memory rule. */
  int shard_group_size;  /* hybrid sharding: shard inside groups of this size; 0 = world */
  double comm_timeout_s; /* a peer silent this long becomes ZS_ERR_TIMEOUT, never a hang */
  /* Offload (ZS_OFFLOAD_*): cap on pinned host bytes (0 = none), CPU optimizer workers (0 = this
     rank's share of its NUMA node's cores), elements per copy-pipeline chunk, and whether to go
     on with unpinned host memory when pinning is refused (reported in zs_engine_info). The cap
     is on host_pinned as planned (zs_plan_model: each host array in whole pages, the copy
     pipeline's 16 x offload_chunk bytes on CUDA, the NVMe staging): over it zs_plan_model says
     fits = 0 and zs_engine_commit refuses with the same sentence; within it commit never fails
     for host memory it counted. */
  size_t offload_host_bytes;
  int offload_threads;
  size_t offload_chunk;
  int offload_allow_unpinned;
  /* AdamW hyperparameters; the exact update is "The optimizer" below. Defaults (those of
     torch.optim.AdamW): lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8, weight_decay 0.01,
     max_grad_norm 0 (no clipping). */
  struct {
    float lr, beta1, beta2, eps, weight_decay, max_grad_norm; /* max_grad_norm <= 0: no clip */
  } adamw;
  /* Units the caller holds gathered at once (zs_unit_gather not yet released), for the memory
     plan's bound on gathered params (the commit fit check, zs_plan_model): 0 = 2 (default). It
     bounds nothing at run time (max_live_bytes does); a loop that gathers one unit, uses it and
     releases it (the GPT-2 example) may say 1. */
  int held_units;
  /* zs_engine_save: committed checkpoints kept in the directory after a save (the newest ones;
     older ones are deleted only once the new one is committed). 0 = keep all; default 2. */
  int ckpt_keep;
  /* Optimizer-state precision (see "The optimizer" below). master: ZS_MASTER_FP32 (0, the
     default) keeps an fp32 master copy beside the params; ZS_MASTER_PARAMS makes the fp32 params
     the master themselves (4 bytes per parameter fewer, the same bits as ZS_MASTER_FP32 with
     param_dtype ZS_F32). ZS_MASTER_PARAMS needs param_dtype ZS_F32, else ZS_ERR_INVALID_ARG. With
     offload (bits or a budget) the params are the master wherever they live on the optimizer
     state's tier: without offload, with ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS (the host
     arena's param shard is the master) and for a unit a budget leaves on the device or moves to
     the host with its param shard (sharded params). Where the two live apart, a unit keeps an
     fp32 master on the optimizer state's tier as ZS_MASTER_FP32 does: ZS_OFFLOAD_OPTIMIZER alone
     and a budget's host unit with full params (params on the device, an fp32 master in the
     arena), ZS_OFFLOAD_PARAMS alone (params in the arena, an fp32 master on the device). The bits
     are those of the mode without offload either way; zs_plan_model counts each unit's master
     where it exists. ZS_MASTER_REMAINDER stores no fp32 master: the bf16 params plus a 16-bit
     remainder per element reconstruct it exactly (2 bytes per parameter instead of 4; the bits of
     ZS_MASTER_FP32 except that the compute copy rounds ties away from zero: "The optimizer"); it
     needs param_dtype ZS_BF16, else ZS_ERR_INVALID_ARG. With offload (bits or a budget) the
     remainder lives with m and v on the optimizer state's tier (the host arena with
     ZS_OFFLOAD_OPTIMIZER or for a budget's host unit) and the bf16 params where the params live
     (the device, or the arena with ZS_OFFLOAD_PARAMS or a budget's host unit with sharded params),
     with the bits of the mode without offload. ZS_MASTER_LEAN makes the bf16 params the
     master (no fp32 copy: 2 + 2 + 8 bytes per parameter of params, gradient, m and v; 8 with bf16
     moments), each update rounded to bf16 stochastically (the bits of rounding_seed, the step and
     the element: "The optimizer"); it needs param_dtype ZS_BF16, else ZS_ERR_INVALID_ARG. With
     offload (bits or a budget) m and v live on the optimizer state's tier and the bf16 params,
     the master, wherever the params live (no fp32 copy on any tier), with the bits of the mode
     without offload. */
  int master;
  /* moment_dtype: ZS_F32 (the default) or ZS_BF16, the dtype Adam's m and v are stored in (4 bytes
     per parameter fewer with bf16: computed in fp32, rounded to nearest even when stored; see
     "The optimizer"). On either tier: with offload (bits or a budget) m and v are stored bf16 in
     the host arena too (half its optimizer bytes) and updated there by the CPU AdamW's bf16-moment
     kernels, with the bits of the mode without offload. */
  zs_dtype moment_dtype;
  /* Budgeted partial offload. Device bytes this rank's engine may hold for
     the model state and its own buffers (params + grads + optimizer + the buffers bound of the
     memory rule; not the caller's activations): 0 = no budget (the ZS_OFFLOAD_* bits decide).
     With a budget, zs_engine_commit places units on the host tier (the pinned arena) only where
     needed: while the device bytes exceed the budget, the unit that frees the most device bytes
     (ties: the lower unit index) gets its optimizer state (its master as zs_config.master keeps
     it: fp32, or the 16-bit remainder, or none in lean mode; Adam m and v in moment_dtype) and,
     when params are sharded, its param shard offloaded. The placement is
     deterministic (the same on every rank), monotone (a larger budget never offloads a unit a
     smaller one keeps on the device) and never over the budget: a model that does not fit it with
     every unit offloaded is refused by zs_engine_commit and zs_plan_model with the sentence of what
     would fit. Needs sharded optimizer state and offload = 0. Every precision mode works with a
     budget: with ZS_MASTER_PARAMS a unit left on the device has no master (its params are it) and
     one placed on the host has none either when its param shard moves too (sharded params), else an
     fp32 master in the arena, which the host side counts but the device side never held (so such a
     unit frees its m and v, and adds the master's 4 bytes per element to the host); with
     ZS_MASTER_REMAINDER the remainder moves with m and v; in lean mode m and v move and the bf16
     params stay the master wherever they are. On the CPU
     device the budget bounds the
     engine's non-arena host bytes. Results are the same bits as all-on-device and all-offloaded
     runs. zs_engine_info, zs_plan_model and zshard-plan show the placement. Environment:
     ZS_OFFLOAD_BUDGET_BYTES (a number, or "free").

     ZS_BUDGET_FREE: the budget is what is free at zs_engine_commit. After the configuration
     agreement each rank measures the device memory it may count on, as the commit fit check
     does: on CUDA, cudaMemGetInfo's free bytes divided among the ranks sharing the GPU, minus a
     reserve of 512 MiB (ZS_BUDGET_FREE_RESERVE: the CUDA context's growth, library workspaces,
     the stream-ordered pool's slack); on the CPU device the least of MemAvailable divided among
     the ranks of the host, the cgroup's room (memory.max - memory.current, v2; v1 alike)
     divided among the ranks in it, and RLIMIT_AS minus the address space in use, with no
     reserve. The ranks take the minimum (a collective), and the placement is then that of a
     budget equal to it: the same units on every rank, deterministic for that number, monotone,
     never over it. The caller's own device memory (activations) is not in the budget: allocate it
     before commit, or leave room for it. zs_engine_info shows the number ("budget B bytes (free
     at commit, the least over N ranks)") and zs_engine_config's offload_budget_bytes is that
     number after commit (ZS_BUDGET_FREE before; a refused commit called again measures again). A
     rank that measures nothing (no free memory, or none it can read) makes commit refuse on every
     rank with ZS_ERR_OUT_OF_MEMORY naming it. zs_plan_model and zs_plan_placement, which measure
     nothing, plan ZS_BUDGET_FREE as a budget no model exceeds (every unit on the device): plan with
     the number instead. */
  size_t offload_budget_bytes;
  /* master = ZS_MASTER_LEAN: the seed of the stochastic rounding's random bits (default 0; any
     value). The same seed, data and configuration give the same bits on any world size, stage,
     shard group and split (deterministic mode); a resumed run continues the same stream when it
     keeps the seed (checkpoints do not store it). Unused in the other modes. */
  uint64_t rounding_seed;
  /* The NVMe tier (NULL, the default: none). A directory on a local disk's file system that
     supports O_DIRECT (not tmpfs). The tier holds the optimizer state of host-tier units (the
     ZS_OFFLOAD_* bits, or those offload_budget_bytes places on the host) that do not fit
     offload_host_bytes, which is then the host budget of the offloaded state, in every precision
     mode, in that mode's types: the fp32 master (ZS_MASTER_FP32, and ZS_MASTER_PARAMS where the
     params live apart from the state), or ZS_MASTER_REMAINDER's 16-bit remainders (the bf16 params
     stay where they live and complete them), or nothing (ZS_MASTER_LEAN, and ZS_MASTER_PARAMS with
     the params in the host arena: the params are the master), plus Adam m and v in moment_dtype.
     Per element of a unit's optimizer range that is 12 bytes (fp32 master and moments), 8 (fp32
     moments alone), 6 (remainders and bf16 moments), 4 (bf16 moments alone), and so on. While the
     host arena's bytes plus the tier's staging (3 chunks of offload_chunk elements of each array
     the mode keeps: 3 x offload_chunk x (master bytes + 2 x moment bytes), 36 x offload_chunk with
     fp32 state, 12 x in lean mode with bf16 moments; the slots round the chunk up to a multiple of
     the O_DIRECT quantum, 1024 elements at 4 KiB alignment with 4-byte arrays, 2048 with a 2-byte
     one, so keep offload_chunk a multiple of 2048, as its default is, or the staging holds up to
     about 60 KiB more than planned and booked; ZS_MASTER_PARAMS is sized for its fp32 master file
     even where its params are the master and no such file exists) exceed it, the host unit whose
     optimizer state is largest (ties: the lower unit index) moves it to the tier; a param shard on
     the host stays there. Deterministic (the same on every rank), monotone in offload_host_bytes,
     never over it; when even every unit on the tier is over, zs_engine_commit refuses with the fit
     check's sentence naming the least cap (zs_plan_model: fits = 0, the same verdict). Needs a host
     tier and offload_host_bytes > 0 (else nothing would go there); without them ZS_ERR_INVALID_ARG.
     Either device: on CUDA the step's chunks meet the gradients and params through the host tier's
     copy pipeline (gradients down and params up in pinned chunks, as host offload; the params come
     down too where they are the master or complete it), and reads of the master (gathers, export)
     pass through a bounded host piece. The engine runs the tier: zs_engine_commit creates
     <nvme_path>/rank<R>-<pid>-<n> on each rank (the directory must exist on a file system that
     takes O_DIRECT: tmpfs is ZS_ERR_UNSUPPORTED, a missing one ZS_ERR_INVALID_ARG, too little free
     space or a file that cannot be reserved ZS_ERR_IO, each naming the path; commit then fails on
     every rank, nothing left on disk) with up to three files per unit there (n counts the tiers the
     process opened, so engines never share one; a process that dies without zs_engine_destroy
     leaves its directory behind: remove such rank*-<pid>-* directories of dead runs before the disk
     fills) (the master or remainders where the mode keeps them, m and v, reserved up front), and
     zs_engine_destroy removes it; the staging (in host_pinned) is all the host memory the tier
     keeps (reads and writes of the master outside a step pass through pieces of at most 2^20
     elements, a few MiB, freed at once). Each zs_engine_step reads, updates with the host tier's
     AdamW of the mode and writes back every such unit's state chunk by chunk (offload_chunk
     elements, the next read and the previous write in flight): the same bits as host offload in
     that mode, at the disk's rate (zs_engine_info shows the step's I/O bytes and seconds).
     zs_unit_set_param, zs_unit_get_param and the bulk calls read and write the master (or the
     remainders) in its file; checkpoints (zs_engine_save, zs_engine_load) and the export stream it
     from and into the files in bounded pieces, their files the same as host offload's in that mode
     (the format's fp32 master, m and v: bf16 moments widened on save and rounded to nearest even on
     load, as in memory). Failures: an I/O error, a full disk or a file deleted or truncated under
     the tier make zs_engine_step return ZS_ERR_IO on every rank (the failing rank's message names
     the file and the offset, the others' that rank) and fail the engine (the files are partly
     updated: restart from the last checkpoint).
     zs_plan_model reports the placement (nvme_units, disk_bytes, nvme_staging; the staging is in
     host_pinned, the disk bytes are not) and, for a cap not even every unit on the tier meets, fits
     = 0 with a verdict naming the least cap that fits; zs_engine_info shows it after commit. The
     string is not copied: it must stay valid until zs_engine_destroy. Environment: ZS_NVME_PATH. */
  const char *nvme_path;
  /* The rank divergence check: before each collective of the MPI backends the ranks exchange a
     small header (the operation, its size, the engine call making it) and refuse, on every rank
     at once with ZS_ERR_COMM naming both sides, to start one that differs. 1 (the default, every
     build type): on from zs_engine_create; 0: off from zs_engine_commit on (a divergence is then
     caught by the step's agreement at the next zs_engine_step, after possibly wrong data, or ends
     in a transport error or ZS_ERR_TIMEOUT). create and commit always run with it on. NCCL groups
     have no header (their running hash is compared at each step either way). Cost: one small
     all-gather per collective (bench/RESULTS.md). Every rank must set the same value.
     Environment: ZS_COMM_CHECK. */
  int comm_check;
} zs_config;

/* The memory rule of sharded params (shard_params in effect: stage 3, or ZS_SHARD_YES; with full
   params nothing is gathered or freed). At every moment, inside or outside a step, in forward or
   backward order, with any number of micro-steps: the units gathered on a rank are the ones the
   caller holds (zs_unit_gather called, zs_unit_release not yet) plus at most prefetch_units
   prefetched units (the next ones in the direction of traversal: inside a step, a unit gathered
   again in the micro-step of its forward is in its backward and prefetches the units before it;
   every other gather, in a step or outside one, prefetches the units after it), and their bytes
   never exceed max_live_bytes when it is set: a gather that would exceed it first drops prefetched
   units, and fails with ZS_ERR_OUT_OF_MEMORY (nothing changed) when the units the caller holds
   leave no room; a single unit larger than max_live_bytes is refused at commit. After a
   forward-only pass (evaluation, sampling) releases its units, at most the prefetched units remain;
   zs_engine_step frees every gathered copy. zs_unit_set_param drops a prefetched copy of the unit
   and writes the new values into a copy the caller holds, so a gather never hands out stale
   weights. The transient buffers besides gathered params are the full gradient of units between
   zs_unit_grad and their reduction and the reduction scratch (at most about two units, or 2 x
   bucket_bytes). */

/* The optimizer. zs_engine_step applies, to every element of every tensor of every unit not frozen
   (zs_unit_freeze), exactly this (float32 arithmetic in this order, fmaf where written, the same
   bits on the CPU paths and CUDA; t is the 1-based count of completed steps,
   zs_engine_step_count() + 1; a skipped step does not count):
     G        = the mean gradient: sum over all micro-steps of all ranks / (world * micro_steps)
     norm     = sqrt(sum of G^2 over every element of every tensor of every unit that is not
                frozen: zs_unit_freeze), computed
                exactly (independent of sharding), reported as zs_step_stats.grad_norm
     clip     = max_grad_norm / (norm + 1e-6) if max_grad_norm > 0 and norm > max_grad_norm,
                else 1  (computed in double; clipping never scales up)
     g        = grad * gscale, gscale = (float)(clip / (world * micro_steps))
     m        = fmaf(beta1, m, (1 - beta1) * g)
     v        = fmaf(beta2, v, ((1 - beta2) * g) * g)
     den      = sqrtf(v * bc2) + eps          bc2 = (float)(1 / (1 - beta2^t)), in double
     upd      = (m * bc1) / den               bc1 = (float)(1 / (1 - beta1^t)), in double
     p        = fmaf(-lr, fmaf(wd, p, upd), p)
   i.e. p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p): eps outside the square root, added to
   the bias-corrected sqrt(v_hat) (as torch.optim.AdamW), weight decay decoupled (AdamW, not L2:
   it never enters m or v) and scaled by lr, on the pre-update p. wd = weight_decay for every
   tensor except those added with no_weight_decay = 1 (wd = 0: biases, norms, embeddings if you
   choose); nothing is exempted by name or shape. p is the fp32 master; the compute copy is p
   rounded to param_dtype (bf16: to nearest even). m and v start at 0 and are fp32.
   The remainder master (zs_config.master = ZS_MASTER_REMAINDER, param_dtype ZS_BF16) stores p as
   the bf16 compute copy plus a 16-bit remainder per element of the optimizer range (10 bytes of
   optimizer state per parameter: remainder, m, v; with the bf16 params and gradients 14 bytes of
   model state, 10 with bf16 moments). With b the 32-bit pattern of p: param = (b + 0x8000) >> 16
   (unsigned, wrapping) and remainder = b & 0xffff (as int16), so b = (param << 16) +
   (int32)remainder, a bijection on all 2^32 patterns. The compute copy is then p rounded to nearest
   with ties away from zero (in magnitude), not to nearest even: no 16-bit remainder can complete a
   nearest-even copy (an even bf16 value is the nearest-even rounding of 65537 fp32 patterns). Each
   step reconstructs p exactly, runs the update above in the same float operations, and splits p'
   back. Results are those of ZS_MASTER_FP32 with that one change to the compute copy's rounding
   (when params are set, loaded and updated), so the two modes part only where a master lies exactly
   halfway between two bf16 values. A frozen unit's params (no master) stay rounded to nearest even.
   Optimizer-state precision (zs_config.master): ZS_MASTER_FP32 (default) holds p in a separate
   fp32 copy (12 bytes of optimizer state per parameter: p, m, v); ZS_MASTER_PARAMS, with
   param_dtype ZS_F32, makes the params themselves p (8 bytes: m, v) where they live with the
   optimizer state (zs_config.master says where an offloaded unit keeps an fp32 p instead), with
   exactly the bits of ZS_MASTER_FP32. moment_dtype = ZS_BF16 stores m and v in bf16 (4
   bytes per parameter fewer): each step widens them to fp32 (exact), computes m, v, den, upd and
   p exactly as above from those, and stores the new m and v rounded to bf16 (nearest even); p
   uses this step's unrounded m and v. Every master mode, with either moment_dtype, gives the
   same bits on the device and on the host tier (ZS_OFFLOAD_* bits, offload_budget_bytes): the
   offloaded update runs the mode's CPU AdamW on the arena's state (with the remainder and lean
   modes on the bf16 params too, wherever they live). Lean mode (ZS_MASTER_LEAN, param_dtype
   ZS_BF16): no fp32 copy; the bf16 params (their home: full, or this rank's shard) are p. Each
   step widens p to fp32 (exact), computes m, v, den, upd and p exactly as above (either
   moment_dtype), and stores the new p rounded to bf16 stochastically: with u the bits of the
   fp32 p and r 16 random bits, the bf16 bits are (sign of u) | min(|u| + r, 0x7f7fffff) >> 16,
   i.e. up with probability equal to p's distance from the lower bf16 neighbour in units of their
   spacing, so the expected value is p (a finite p never becomes infinite: one above bf16's largest
   finite rounds down to it; inf and NaN stay as round-to-nearest leaves them). r comes from a
   counter-based hash: with mix64(z) = (z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
   z *= 0x94d049bb133111eb; z ^ (z >> 31)) and fmix32(x) = (x ^= x >> 16; x *= 0x85ebca6b;
   x ^= x >> 13; x *= 0xc2b2ae35; x ^ (x >> 16)), K = mix64(mix64(mix64(rounding_seed ^
   0x9e3779b97f4a7c15) + t) + unit) and k0, k1 its low and high 32 bits, the elements at flat
   offsets 2q and 2q + 1 of unit number `unit` (zs_engine_add_unit's order; tensors back to back,
   padding after them), with q = lo + 2^32 hi, share h = fmix32(lo ^ k0 ^ fmix32(hi ^ k1)): the
   even one gets r = h & 0xffff, the odd one r = h >> 16 (wrap-around integer arithmetic). Nothing
   of it depends on the world size, stage, shard group or micro-steps, so deterministic runs give
   the same bits on every split, and the CPU paths and CUDA agree. In lean mode zs_unit_set_param
   rounds the values to bf16 (nearest even) and zs_unit_get_param, export and checkpoints read the
   params widened. Checkpoints store p, m and v in fp32 in every mode: a checkpoint saved in
   ZS_MASTER_FP32, ZS_MASTER_PARAMS or ZS_MASTER_REMAINDER loads into any of these three without
   loss; a lean checkpoint holds the bf16 params widened (exact), so it loads into every mode
   exactly, and an fp32 master loaded into lean mode is rounded to nearest even; bf16 moments are
   saved widened (exact), so they load into fp32 moments exactly, and fp32 moments loaded into bf16
   moments are rounded to nearest even (the only roundings a load applies). A non-finite gradient
   anywhere skips the whole update (zs_step_stats.skipped_nonfinite; t does not advance). Why these
   defaults: they are torch.optim.AdamW's (weight decay 0.01, no clipping), and DeepSpeed clips only
   when gradient_clipping is configured, so a loop ported from either trains the same numbers
   without touching zs_config. Set max_grad_norm (llm.c and GPT-2 recipes: 1.0) and weight_decay
   (GPT-2: 0.1, with no_weight_decay on biases and layer norms) explicitly when your recipe has
   them. zs_engine_set_lr changes lr between steps (schedules). */
/* Fills every field: the tunables below with the "unset" sentinel (ZS_UNSET / ZS_UNSET_SIZE),
   the others with their defaults, and struct_size/struct_version (so a library newer than the
   program's header reads only the caller's fields). Defaults: stage 3, CPU, fp32, AdamW lr 1e-3,
   betas 0.9/0.999, eps 1e-8, weight decay 0.01, no clipping (max_grad_norm 0; see "The optimizer"
   above), timeout 300 s, prefetch 1, offload chunk 4M elements, 2 checkpoints kept, the rest 0
   (sharding switches ZS_SHARD_AS_STAGE). A tunable left unset takes its environment variable at
   zs_engine_create (an empty variable counts as unset), else its default: ZS_STAGE,
   ZS_PREFETCH_UNITS, ZS_DETERMINISTIC, ZS_COMM_TIMEOUT_S, ZS_BUCKET_BYTES, ZS_MAX_LIVE_BYTES,
   ZS_OFFLOAD_HOST_BYTES, ZS_OFFLOAD_THREADS, ZS_OFFLOAD_CHUNK, ZS_OFFLOAD_ALLOW_UNPINNED,
   ZS_CKPT_KEEP, ZS_OFFLOAD_BUDGET_BYTES. A variable that does not parse (or is out of range) makes
   zs_engine_create fail with ZS_ERR_INVALID_ARG naming it. zs_plan_model gives unset fields their
   defaults (no environment). A config zs_config_default did not fill (memset to 0: struct_size or
   struct_version 0) is refused by zs_engine_create and zs_plan_model with ZS_ERR_INVALID_ARG,
   since nothing says how large the caller's struct is. */
ZS_API void zs_config_default(zs_config *c);

typedef struct zs_comm zs_comm;
typedef struct zs_engine zs_engine;
typedef struct zs_unit zs_unit;

/* ======== Communicators ======== */

/* Bootstrap from mpirun/srun: initialises MPI if the caller has not (and then finalises it in
   zs_comm_destroy). argc/argv may be NULL. Collective over MPI_COMM_WORLD. When MPI_COMM_WORLD's
   error handler is MPI_ERRORS_ARE_FATAL (MPI's default), it is replaced by MPI_ERRORS_RETURN
   until the last zs_comm_destroy puts it back: Open MPI reports failed requests of zshard's own
   communicators there, and a fatal handler would abort the job (the caller's own MPI calls on
   MPI_COMM_WORLD return errors meanwhile). A handler the caller installed is left alone.
   Start-up never hangs on a missing rank: each wait on the other ranks (the duplication of
   MPI_COMM_WORLD, the grouping of a host's ranks) is bounded by ZS_COMM_TIMEOUT_S (else 300 s),
   after which a rank that did not come gives ZS_ERR_TIMEOUT naming the step; MPI is then not
   finalised (MPI_Finalize could wait for that rank), later calls return ZS_ERR_STATE, and the job
   should end. Outside zshard's control: mpirun/srun's own launch and MPI_Init itself (called here
   when the program has not), which can wait for every rank before any timeout of ours runs. */
ZS_API zs_status zs_comm_init_mpi(int *argc, char ***argv, zs_comm **out);
/* Bootstrap from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (torchrun style). A TCP
   rendezvous on MASTER_ADDR:MASTER_PORT hands out the NCCL unique id. Only for CUDA engines with
   NCCL. More than one rank with no visible GPU returns ZS_ERR_UNSUPPORTED here (the CPU device
   needs MPI: use mpirun); a CPU engine on a multi-rank env comm is refused at create. No network
   traffic here (the rendezvous happens when an engine opens its groups, or at the first
   zs_comm_allreduce, whichever comes first). */
ZS_API zs_status zs_comm_init_env(zs_comm **out);
ZS_API int zs_comm_rank(const zs_comm *c); /* -1 for NULL */
ZS_API int zs_comm_size(const zs_comm *c); /* -1 for NULL */
/* Element types and reductions of zs_comm_allreduce (the caller's own host values). */
typedef enum { ZS_HOST_F32 = 0, ZS_HOST_F64, ZS_HOST_I64 } zs_host_dtype;
typedef enum { ZS_RED_SUM = 0, ZS_RED_MEAN, ZS_RED_MAX, ZS_RED_MIN } zs_reduce_op;
/* Reduces count values of host memory across every rank of c into recv on every rank: for a
   logged loss (ZS_RED_MEAN), token counts (ZS_RED_SUM of ZS_HOST_I64), a slowest rank's time
   (ZS_RED_MAX). No MPI call of the program's own is needed, on either bootstrap.
   Result, the same bits on every rank, every backend and every run: element i combines the ranks'
   values in rank order 0, 1, ..., world-1. Floats are accumulated in double and rounded once to
   the dtype (f32 sum = (float)(x0 + x1 + ...) in double); ZS_RED_MEAN is that sum divided by the
   world size in double, then rounded (f32 and f64 only: an i64 mean is ZS_ERR_INVALID_ARG); i64
   sums wrap modulo 2^64. MAX/MIN: a NaN on any rank gives NaN; ties keep the lower rank's value.
   send == recv (in place) is allowed; other overlaps are ZS_ERR_INVALID_ARG, as are a NULL
   buffer with count > 0 and an unknown dtype or op (refused on every rank before any message).
   count 0 is a no-op that still counts as a call. Collective over the world: every rank calls
   with the same count, dtype and op, in the same order relative to its other collective calls
   on c (engine creation, commit, steps, ...). Transport: MPI (an all-gather, then the ordered
   sum on every rank) for zs_comm_init_mpi; for zs_comm_init_env the TCP rendezvous connections
   to rank 0 (opened by the first call if no engine has opened them; rank 0 gathers, reduces and
   sends the result; meant for small arrays: about world x count elements pass through rank 0).
   Waits are bounded by the communicator's timeout (zs_comm_set_timeout; default
   ZS_COMM_TIMEOUT_S, else 300 s): a silent peer gives ZS_ERR_TIMEOUT. After a timeout or a
   transport failure (ZS_ERR_COMM) every later zs_comm_allreduce on c returns ZS_ERR_COMM at once
   (the ranks' calls no longer match); destroy c. Not thread-safe: one thread per comm. */
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

/* ======== Engine lifecycle ======== */

/* One tensor of a unit: a name (non-empty, unique in its unit, < 64 characters), up to 4 dims,
   all > 0. no_weight_decay exempts it from AdamW decay. */
typedef struct {
  const char *name;
  int ndim;
  int64_t shape[4];
  int no_weight_decay;
} zs_tensor_desc;

/* Creates an engine over comm (which must outlive it). The config is validated and copied.
   Collective over the world (opens its groups and exchanges the ranks' placement: host, cgroup,
   GPU, offload NUMA node; offload workers take this rank's share of its node's cores). */
ZS_API zs_status zs_engine_create(const zs_config *cfg, zs_comm *comm, zs_engine **out);
/* Registers a unit (a layer, a block): its tensors live back to back in one flat buffer. Units are
   used in the order they are added (forward order). Names must be unique. *out stays owned by e.
   Not collective, but every rank must add the same units in the same order (their layout must
   agree). Before commit only (ZS_ERR_STATE after); ZS_ERR_INVALID_ARG names the bad descriptor
   and nothing is added. */
ZS_API zs_status zs_engine_add_unit(zs_engine *e, const char *name, int ntensors,
                                    const zs_tensor_desc *t, zs_unit **out);
/* Fixes the layout and allocates every shard. After this no unit may be added. Before allocating
   anything it compares what this rank will hold (persistent state plus a bound on the transient
   buffers) with what it may use: free GPU memory (cudaMemGetInfo) on CUDA; on the CPU and for
   offloaded state, host memory (the least of MemAvailable, the cgroup limit and RLIMIT_AS),
   divided among the ranks that share it (same host, same cgroup, same GPU). A model that does
   not fit is refused with ZS_ERR_OUT_OF_MEMORY naming the bytes needed and available and what
   would fit (a higher stage, offload, more ranks); nothing is allocated and the engine stays
   uncommitted. Collective over the world: every rank commits, and all refuse when one does.
   Every rank must resolve the same configuration (after the ZS_* environment): commit first
   compares the sharding switches, dtypes, offload bits and budget, bucket_bytes,
   shard_group_size, deterministic, master, moment_dtype, rounding_seed and the AdamW
   hyperparameters across the world and refuses on every rank with ZS_ERR_INVALID_ARG naming the
   first field that differs and both values (nothing allocated).

   With an offload budget (zs_config.offload_budget_bytes) commit places the units first (the
   same placement on every rank) and allocates each unit's state on its tier; a model over the
   budget with every unit on the host is refused the same way, the sentence naming the least
   budget that fits, whatever memory the rank has. */
ZS_API zs_status zs_engine_commit(zs_engine *e);
/* Marks the engine failed and aborts its collectives at once (their kernels stop waiting for
   peers), for a wait of the caller's own that timed out behind the engine's work; later calls
   return ZS_ERR_STATE, destroy still works. Not collective: the peers learn of it at the
   destroy that follows (with the check on, their pending or next collective, or their own
   destroy, then fails or returns at once, naming zs_engine_abort). ZS_ERR_INVALID_ARG for
   NULL. */
ZS_API zs_status zs_engine_abort(zs_engine *e);
/* Releases everything the engine holds: tears down its groups, then frees its memory. With the
   check on (mpi backends), every group still in step first takes part in one last exchange
   (bounded by comm_timeout_s; all groups' are started before any is waited for): from a healthy
   engine an agreement, so that a peer still inside a collective call fails with a message naming
   zs_engine_destroy instead of waiting out its timeout; from an aborted or failed engine a
   goodbye, so that its peers' collectives and destroys fail or return at once naming it. Groups
   broken by a timeout, a transport error or a divergence take no part. Destroy engines that share
   a comm in the same order on every rank (each engine's last exchange waits for the same
   engine's on the peers). zs_last_error() is left as it was before the call. NULL is a no-op. */
ZS_API void zs_engine_destroy(zs_engine *e);

/* ======== Parameters ======== */

/* Sets tensor t of u from host fp32 values (numel of the tensor), identical on every rank.
   Writes the fp32 master and the compute copy (lean mode, ZS_MASTER_LEAN: the bf16 params alone,
   the master, rounded to nearest even), and a gathered copy the caller holds; a prefetched
   copy is dropped. Valid after commit, outside a step. The next zs_engine_step compares a hash
   of the values across ranks and refuses different ones (a per-rank seed): see zs_engine_step
   and zs_engine_broadcast_params. Not collective, but every rank must set
   the same tensors between the same collective calls: dropping a prefetched copy changes what
   the next zs_unit_gather of the unit communicates, so a rank that sets another unit makes that
   gather fail with ZS_ERR_COMM on every rank (with the check on; see the conventions above for
   comm_check 0 and nccl). On CUDA it waits for the
   engine's streams: ZS_ERR_TIMEOUT after comm_timeout_s (work stuck behind a collective) fails
   the engine. ZS_ERR_INVALID_ARG / ZS_ERR_STATE for bad arguments or call order (nothing written).
 */
ZS_API zs_status zs_unit_set_param(zs_unit *u, int t, const float *host_full);
/* zs_unit_set_param with the element count of host_full, checked against the tensor's:
   a mismatch is ZS_ERR_INVALID_ARG and nothing is written. */
ZS_API zs_status zs_unit_set_param_n(zs_unit *u, int t, const float *host_full, int64_t n);
/* Reads the full fp32 master values of tensor t into host memory (lean mode: the bf16 params,
   widened). The master is optimizer state: collective within the shard group when the optimizer
   state is sharded (shard_optimizer: stages 1-3, and whenever grads or params are sharded; every
   rank of the group must call), local when it is full. ZS_ERR_COMM / ZS_ERR_TIMEOUT fail the
   engine. */
ZS_API zs_status zs_unit_get_param(zs_unit *u, int t, float *host_full);
/* Names instead of indices, for programs that keep their own parameter layout.
   zs_unit_tensor_index: index of u's tensor named `name` (the zs_tensor_desc name) in *idx;
   ZS_ERR_INVALID_ARG naming the unit and the name, and listing the unit's tensors, when it has
   none (so a wrong name is never another tensor). zs_engine_find_unit: the unit added under
   `name`; ZS_ERR_INVALID_ARG naming it when there is none. zs_unit_tensor_name: tensor t's name
   (NULL when out of range), owned by the engine; zs_unit_num_tensors: u's tensor count (-1 for
   NULL). Any time after the unit was added; not collective. */
ZS_API zs_status zs_unit_tensor_index(const zs_unit *u, const char *name, int *idx);
ZS_API zs_status zs_engine_find_unit(zs_engine *e, const char *name, zs_unit **out);
ZS_API const char *zs_unit_tensor_name(const zs_unit *u, int t);
ZS_API int zs_unit_num_tensors(const zs_unit *u);

/* Where tensor t of unit u (the unit_index-th added, named tensor_name, numel elements) lives in
   the caller's host memory: set *host to its first fp32 value (numel contiguous values, row-major
   as the tensor's shape), or to NULL to leave the tensor out. Return 0, or non-zero to refuse
   the whole call (ZS_ERR_INVALID_ARG naming the unit and tensor; nothing was written or read).
   For a model kept as one array per parameter type across layers (llm.c's qkvw [L, 3C, C]):
   *host = qkvw + layer * 3 * C * C. Called once per tensor, units in order, tensors in order,
   before any value moves. */
typedef int (*zs_param_locate_fn)(void *user, const zs_unit *u, int unit_index, int t,
                                  const char *tensor_name, int64_t numel, float **host);
/* Sets every tensor the callback locates, from the caller's arrays: zs_unit_set_param for each,
   with its rules (every rank passes the same values; writes the fp32 master and the compute
   copy; not collective; valid after commit, between steps). ZS_ERR_INVALID_ARG (a NULL argument,
   a refusal by the callback) and ZS_ERR_STATE (call order) write nothing; a failure while writing
   fails the engine like zs_unit_set_param. */
ZS_API zs_status zs_engine_set_params(zs_engine *e, zs_param_locate_fn fn, void *user);
/* Reads the full fp32 master values of every tensor the callback locates into the caller's
   arrays, unit by unit: zs_unit_get_param's values, gathering each unit's master once for all its
   tensors. Collective within the shard group when the optimizer state is sharded, as
   zs_unit_get_param (every rank calls it; every unit is gathered even where the callback skips
   all its tensors). Memory: one unit's
   fp32 master at a time (a transient buffer, freed before the next unit); no param copy is
   gathered, so the memory rule's gathered units are unchanged. Valid after commit,
   between steps. ZS_ERR_INVALID_ARG / ZS_ERR_STATE before anything is read; ZS_ERR_COMM /
   ZS_ERR_TIMEOUT fail the engine. */
ZS_API zs_status zs_engine_get_params(zs_engine *e, zs_param_locate_fn fn, void *user);
/* Makes every unit's params equal to rank root's on every rank (FSDP's sync_module_states): the
   fp32 master (the optimizer's copy; lean mode: the bf16 params) and the compute copy, as if
   every rank called zs_unit_set_param with root's zs_unit_get_param values; m and v are left
   as they are (zero before the first step). The remedy when the ranks set different values
   (zs_engine_step's ZS_ERR_INVALID_ARG "initial values differ across ranks"), or the way to set
   them on one rank only: the values set before it are no longer compared. Collective over the
   world (every rank calls it, with the same root); valid after commit, between steps. Memory:
   one unit's fp32 master at a time, on the host and on the device. ZS_ERR_INVALID_ARG (NULL, a
   root outside 0..world-1) and ZS_ERR_STATE (call order) change nothing; a failure while moving
   the values fails the engine (some units may be broadcast, others not). One rank: a no-op.
   Sharded params (stage 3, ZS_SHARD_YES): ZS_ERR_UNSUPPORTED, nothing changed (each rank keeps
   only its shard of what it set: set the same values everywhere). Stages 1-2 send root's full
   compute copy: exact with fp32 params; with bf16 params every master becomes those bf16 values
   widened (the remainder master's remainders are lost). */
ZS_API zs_status zs_engine_broadcast_params(zs_engine *e, int root);
/* cudaStream_t the user's kernels must run on; NULL on the CPU device (and for NULL). */
ZS_API void *zs_engine_stream(zs_engine *e);

/* ======== The training step ======== */

/* Starts a step of micro_steps micro-batches (gradient accumulation count, >= 1): zeroes full
   gradients. Not collective. ZS_ERR_STATE before commit, inside a step or after a failure. */
ZS_API zs_status zs_engine_begin_step(zs_engine *e, int micro_steps);
/* Makes the full params of u usable on the engine stream. With sharded params (shard_params in
   effect: stage 3, or ZS_SHARD_YES at any stage) it all-gathers them, unless they were
   prefetched, and prefetches the next units (see the memory rule), so it is collective over the
   shard group: every rank gathers the same units in the same order, in training, evaluation and
   sampling alike (see "Sampling or evaluating on one rank" at the top; a rank gathering alone
   makes every rank fail with ZS_ERR_COMM). With full params it is local (the params are
   persistent). Gathering a unit the caller already holds is a no-op. Release it after its
   forward and again after its backward: with sharded params a gathered unit holds its full
   params until zs_unit_release. zs_engine_step ends every hold at every stage: gather again
   before using zs_unit_param after a step. Errors: ZS_ERR_OUT_OF_MEMORY when max_live_bytes
   leaves no room (nothing changed); ZS_ERR_COMM / ZS_ERR_TIMEOUT / ZS_ERR_DEVICE, or
   ZS_ERR_OUT_OF_MEMORY from the device, fail the engine (its peers went on with the gather);
   ZS_ERR_STATE before commit or after a failure. Not thread-safe (one thread per engine). */
ZS_API zs_status zs_unit_gather(zs_unit *u);
/* 1 when this rank holds u's full params now (gathered by the caller, or prefetched), else 0
   (also for NULL, and before commit). With full params (shard_params off) they are always
   there: 1. For memory introspection and tests. */
ZS_API int zs_unit_is_gathered(const zs_unit *u);
/* Device pointer to tensor t of a gathered unit, in param_dtype, valid until the unit's release
   (or the step); NULL (zs_last_error says why) if not gathered or a bad t. Not collective. */
ZS_API void *zs_unit_param(zs_unit *u, int t);
/* Device pointer the user's backward accumulates (+=) into, in param_dtype, zeroed by the engine:
   at the start of each step, or (sharded gradients, and in deterministic mode) for each
   micro-step. Valid until the unit's next zs_unit_grads_ready (or zs_unit_grads_flush): call
   it again in every micro-step. NULL outside a step, after the unit's last grads_ready, for a
   frozen unit (zs_unit_freeze: ZS_ERR_INVALID_ARG), or for a bad t. Not collective. In
   deterministic mode a full gradient is staged: the micro-step's buffer is folded into the
   accumulated gradient by zs_unit_grads_ready's reduction, so the backward may
   += into it as often as it likes. */
ZS_API void *zs_unit_grad(zs_unit *u, int t);
/* Done with the params for now (forward); with sharded params the gathered copy is freed. Not
   collective.
   ZS_ERR_STATE without a matching gather. */
ZS_API zs_status zs_unit_release(zs_unit *u);
/* Backward of this unit finished for this micro-step: its gradient may be reduced. Collective
   (every rank, same units, same order) when it reduces: with sharded gradients (shard_grads in
   effect: stages 2-3, or ZS_SHARD_YES) and in deterministic mode every micro-step reduces; with
   full gradients the last micro-step does (the earlier calls are local). ZS_ERR_STATE outside a
   step or past micro_steps calls;
   a failed reduction fails the engine (ZS_ERR_COMM / ZS_ERR_TIMEOUT / ZS_ERR_DEVICE). */
ZS_API zs_status zs_unit_grads_ready(zs_unit *u);

/* Reduces what has been added into u's zs_unit_grad so far in this micro-step into the gradient
   shard and frees the full gradient; a later zs_unit_grad of this micro-step hands out a fresh
   zeroed buffer, and zs_unit_grads_ready reduces the rest as usual. For a unit whose gradient
   arrives in parts far apart in the backward (a tied embedding: the LM head first, the lookup
   last), so that its full gradient does not live through the whole backward; costs one more
   reduction of the unit. Collective over the shard group (every rank flushes the same units in
   the same order) with sharded gradients (shard_grads in effect: stages 2-3, or ZS_SHARD_YES); a
   no-op with full gradients (the full gradient is persistent) and in deterministic mode (one
   reduction per micro-step keeps the global order's bits). Errors:
   ZS_ERR_STATE outside a step or after the unit's last grads_ready, ZS_ERR_INVALID_ARG for NULL;
   a failed reduction fails the engine like zs_unit_grads_ready. */
ZS_API zs_status zs_unit_grads_flush(zs_unit *u);

/* Output structs (zs_step_stats, zs_memory) keep reserved space at their end: a later minor
   version adds fields there, so their size never changes within a major version, and sets
   struct_version to say which fields it filled. */
typedef struct {
  float grad_norm;       /* global L2 norm of the mean gradient, before clipping */
  int skipped_nonfinite; /* 1 if a gradient was NaN/Inf: the step was skipped, weights untouched */
  double step_seconds;   /* wall time from begin_step to the end of zs_engine_step */
  unsigned struct_version; /* 1: the fields above; 2: also check_seconds */
  unsigned reserved_u;
  double check_seconds; /* of step_seconds, the wall time this rank spent in the divergence
                           check's header exchanges (0 with comm_check 0 or on nccl): its cost,
                           or less, since a wait for a late peer there is not waited again */
  double reserved[5];
} zs_step_stats;
/* Ends the step: waits for the reductions, computes the global gradient norm, clips, runs AdamW
   on this rank's share of the optimizer state, publishes the updated params where they are full,
   and ends every hold (gathered copies are freed). A non-finite gradient skips the update
   (st->skipped_nonfinite). st may be NULL. Collective over the world. ZS_ERR_STATE without
   begin_step or before every unit's micro_steps-th grads_ready (frozen units need none; nothing
   changes). Then every
   rank agrees on the step's shape (micro_steps, grads_ready calls, step number): ZS_ERR_COMM
   naming both ranks' shapes when they differ (nothing updated, the engine failed). The same
   exchange compares the values zs_unit_set_param (and zs_engine_set_params) wrote since the last
   step, by a hash of each tensor: when the ranks set different values (a per-rank seed) or
   different tensors, ZS_ERR_INVALID_ARG on every rank naming the first such unit and tensor and
   two ranks ("initial values differ across ranks: unit 'h1' tensor 'w' set by rank 0 differs
   from rank 1's ..."); the step is abandoned (nothing updated, its gradients dropped, the step
   count unchanged) and the engine stays usable: set equal values or call
   zs_engine_broadcast_params, then run the step again. Values are compared only here: a
   zs_engine_save or export before the first step is not checked. Any later failure fails the
   engine (the update may be half applied). */
ZS_API zs_status zs_engine_step(zs_engine *e, zs_step_stats *st);
/* Sets the learning rate used from the next zs_engine_step on (schedules). Not collective, but
   every rank must set the same value. ZS_ERR_INVALID_ARG for a negative or non-finite lr. */
ZS_API zs_status zs_engine_set_lr(zs_engine *e, float lr);

/* The user's backward always accumulates (+=) into zs_unit_grad. The gradient AdamW sees is the
   sum over all micro-steps of all ranks divided by world * micro_steps (the mean over
   micro-batches). A unit's reduction is final after its micro_steps-th zs_unit_grads_ready.
   deterministic: the global order of a step's micro-batches is micro-step-major: micro-step m of
   world rank r is global micro-batch m * world + r. With g_k the gradient the backward leaves in
   its zeroed zs_unit_grad for micro-batch k (however many += it makes: the engine stages each
   micro-step's gradient; zs_unit_grads_flush is then a no-op), the summed gradient is
     acc = (...((0 + g_0) + g_1) + ...) + g_(world*micro_steps-1)
   with each g_k converted to reduce_dtype and each partial sum rounded to param_dtype: what one
   rank computes with micro_steps = world*micro_steps, fed the micro-batches in that order. So
   every split of a global batch into ranks x micro-steps (e.g. 2 x 2, 4 x 1 and 1 x 4) gives the
   same bits, at every stage, switch combination, shard group, offload mode and bucket size; so
   do the norm (exact), clipping and AdamW after it, with the division by world * micro_steps.
   The cost: with full gradients every micro-step is reduced too (an all-to-all of the unit and,
   with a full optimizer state, an all-gather), where the non-deterministic mode reduces once per
   step. */

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
/* What the plan will allocate on this rank, by category, from the units added so far (before
   or after commit; not collective): params, grads, optimizer and host_pinned exactly as commit
   allocates them, buffers a bound on the transient buffers (see the memory rule), total their
   sum; cur and peak are both set to it. ZS_ERR_INVALID_ARG for NULL. */
ZS_API zs_status zs_engine_plan_memory(const zs_engine *e, zs_memory *out);

/* What one rank needs for a model under a configuration, without an engine and without
   allocating anything (zs_plan_model; the zshard-plan tool prints it). params, grads, optimizer
   and host_pinned are exactly what zs_engine_commit allocates; buffers is the bound of the memory
   rule on the transient buffers; activations is what the caller said. device_total = params +
   grads + optimizer + buffers + activations, host_total = host_pinned (offloaded state). */
typedef struct {
  size_t params, grads, optimizer, buffers, activations, host_pinned;
  size_t device_total, host_total;
  int fits;          /* 1 when it fits the memory given (see zs_plan_model) */
  char verdict[512]; /* "fits: needs 1.2 GiB on each GPU at stage 3 with 4 ranks", or "does not
                        fit: needs 93.4 GiB on each GPU at stage 3 with 4 ranks; fits with 8
                        ranks or with optimizer offload": zs_engine_commit refuses with the same
                        sentence */
  unsigned struct_version; /* 1: the fields above; 2: also the placement below; 3: the NVMe
                              tier's too */
  unsigned reserved_u;
  /* With an offload budget (zs_config.offload_budget_bytes; all 0 without): the units it places
     on the host (zs_plan_placement says which), and the least budget the model fits (every unit
     on the host). */
  size_t host_units, budget_floor;
  /* With the NVMe tier (zs_config.nvme_path; all 0 without): the units whose optimizer state it
     places on the tier, the disk bytes of that state (in the tier's files, not in host_pinned)
     and the host bytes of the tier's staging (in host_pinned). */
  size_t nvme_units, disk_bytes, nvme_staging;
  size_t reserved[3];
} zs_plan_report;
/* Plans a model of nunits units (unit_numel[i] elements each, forward order, every one > 0) under
   cfg (used as given: no environment variables) on world_size ranks (shard groups of
   cfg->shard_group_size, 0 = all), with activation_bytes more of the caller's own device memory
   per rank, against device_bytes and host_bytes available per rank (SIZE_MAX: unlimited; on the
   CPU device everything draws on device_bytes). ZS_ERR_INVALID_ARG for NULL, a bad count, a
   config the engine would refuse, or a shard group that does not divide the world (out
   untouched). Not collective; allocates nothing. */
ZS_API zs_status zs_plan_model(const zs_config *cfg, int world_size, const int64_t *unit_numel,
                               int nunits, size_t activation_bytes, size_t device_bytes,
                               size_t host_bytes, zs_plan_report *out);
/* Which units an offload budget (cfg->offload_budget_bytes, see zs_config) places on the host:
   host[i] = 1 for unit i (its optimizer state and, with sharded params, its param shard in the
   host arena), else 0; all 0 without a budget. Exactly zs_engine_commit's placement for these
   unit sizes; a model over its budget has every unit on the host (and zs_plan_model says it does
   not fit). The same arguments and errors as zs_plan_model. Not collective; allocates nothing. */
ZS_API zs_status zs_plan_placement(const zs_config *cfg, int world_size, const int64_t *unit_numel,
                                   int nunits, unsigned char *host);

/* ======== Frozen units ======== */

/* A frozen unit has params only: no gradient, no fp32 master, no Adam m and v (on any tier),
   so it costs param bytes alone (zs_engine_plan_memory, zs_plan_model_frozen and the ledger say
   so to the byte). Its params are sharded, gathered, prefetched and released like any unit's
   (the backward still gathers it to compute the input gradients), and never change in a step:
   it is left out of the gradient norm (zs_step_stats.grad_norm covers the trainable units
   only), clipping and AdamW. The unit is the granularity: a LoRA adapter or any trainable part
   beside frozen weights is a unit of its own. zs_unit_grad refuses a frozen unit (NULL,
   ZS_ERR_INVALID_ARG naming it); zs_unit_grads_ready and zs_unit_grads_flush on it are local
   no-ops (a backward loop may call them on every unit), and zs_engine_step does not wait for
   them. zs_unit_set_param writes its params (rounded to param_dtype; there is no master);
   zs_unit_get_param, zs_engine_get_params, checkpoints and export read them widened to fp32
   (collective over the shard group when params are sharded). Checkpoints store a frozen unit's
   params as its master values and zeros as its m and v, so one saved with a unit frozen loads
   into an engine where it is trainable (master = the params, m = v = 0: exactly a unit that
   never trained) and one saved trainable loads into an engine where it is frozen (params = the
   master rounded to param_dtype, what the compute copy was; m and v are not kept), on any world
   size, shard group and stage. The precision modes (zs_config.master, moment_dtype) change
   nothing for a frozen unit: it has no master alias, remainder, m or v in any of them. */

/* Freezes (frozen != 0) or unfreezes u. Before zs_engine_commit only (ZS_ERR_STATE after);
   every rank must freeze the same units. ZS_ERR_INVALID_ARG for NULL. Not collective. */
ZS_API zs_status zs_unit_freeze(zs_unit *u, int frozen);
/* 1 when u is frozen, else 0 (also for NULL). */
ZS_API int zs_unit_is_frozen(const zs_unit *u);
/* zs_plan_model for a model with frozen units: unit_frozen[i] non-zero freezes unit i (NULL:
   none, exactly zs_plan_model). Same errors, not collective, allocates nothing. */
ZS_API zs_status zs_plan_model_frozen(const zs_config *cfg, int world_size,
                                      const int64_t *unit_numel, const int *unit_frozen, int nunits,
                                      size_t activation_bytes, size_t device_bytes,
                                      size_t host_bytes, zs_plan_report *out);
/* zs_plan_placement for a model with frozen units (unit_frozen as zs_plan_model_frozen's; NULL:
   exactly zs_plan_placement). A frozen unit moves only what it has: its param shard with sharded
   params, else nothing (then it stays on the device unless the model is over its budget). Same
   errors, not collective, allocates nothing. */
ZS_API zs_status zs_plan_placement_frozen(const zs_config *cfg, int world_size,
                                          const int64_t *unit_numel, const int *unit_frozen,
                                          int nunits, unsigned char *host);

/* ======== Checkpoints and export ======== */

/* Saves the training state into a new checkpoint under dir (created if missing): every rank
   writes what it owns of the fp32 master weights and Adam m and v (replicated state is split
   among the ranks that hold it, so each element is written once) plus the step counts; rank 0
   then writes a JSON manifest (units, tensors, shapes, dtype, world size, shard group, stage,
   hyperparameters, every file's byte layout and xxh64 checksums). Each file is written to a
   temporary name, fsynced and renamed; the manifest's rename is the commit point, so a crash or a
   write error at any moment leaves the previous checkpoint the latest loadable one. After the
   commit, checkpoints older than the newest cfg.ckpt_keep are deleted; what a crashed save left is
   deleted by the next save. Layout: dir/ckpt-<12 digits>/{rank-<r>.zsd, manifest.json}, the
   number being the step count saved (zs_engine_steps_done), or one above the highest number
   already in dir when that is not lower (a second save at one step, a save after loading an
   earlier checkpoint), so the newest checkpoint is always the highest number; dir
   must be on a file system every rank sees (one directory, one saving job at a time). Collective
   over the world, between steps (ZS_ERR_STATE inside a step or before commit). Errors, the same
   status on every rank: ZS_ERR_IO (disk full, permissions, ...; nothing of the new checkpoint
   stays, no temporary file), ZS_ERR_INVALID_ARG (NULL, or ranks naming different paths). The
   state of units on the NVMe tier (nvme_path) streams from its files in bounded pieces (never a
   unit's whole state in memory), and the checkpoint is byte for byte what host offload saves of
   the same state; a failed read of the tier is ZS_ERR_IO (the failing rank's message names the
   file and the offset) and fails the engine on every rank (ZS_ERR_STATE afterwards), the
   previous checkpoint untouched. */
ZS_API zs_status zs_engine_save(zs_engine *e, const char *dir);
/* Loads a checkpoint saved by any world size, shard group, stage, offload or hybrid layout into
   this engine (committed, same units, tensor names, shapes and param_dtype). dir is a checkpoint
   (holds manifest.json) or a directory of them (its newest committed one is loaded). Each rank
   reads only the blocks of the files that hold what it owns, never the whole model, and checks
   each block's checksum. Sets the master weights, Adam m and v, the params (from the master),
   zs_engine_step_count and zs_engine_steps_done; the configuration (hyperparameters, the lr set
   by zs_engine_set_lr) stays the engine's own. Everything is checked and every rank agrees
   before anything is written: a refused load leaves the engine exactly as it was. Errors (same
   status on every rank): ZS_ERR_CORRUPT (a damaged, truncated or missing file, a checksum
   mismatch, an unknown format version), ZS_ERR_INVALID_ARG (another model: names the first
   difference), ZS_ERR_IO (no checkpoint, unreadable), ZS_ERR_STATE (inside a step, before commit,
   or a unit still gathered by the caller). Should a file change between the check and the read
   that follows it, the engine fails (ZS_ERR_STATE afterwards). Units on the NVMe tier get their
   state written into its files in bounded pieces; should a write there fail (ZS_ERR_IO naming the
   file and the offset), the engine is half loaded and fails on every rank. Collective over the
   world. */
ZS_API zs_status zs_engine_load(zs_engine *e, const char *dir);

/* How zs_engine_export_safetensors_ex writes one tensor; the callback may change any field. */
typedef struct {
  char name[256]; /* the name in the file; default "<unit>.<tensor>" */
  int skip;       /* 1: leave the tensor out */
  int transpose;  /* 2-D tensors only: write the [cols, rows] transpose */
  int64_t rows;   /* keep only the first rows of dimension 0 (0 = all): drops padding rows */
} zs_export_tensor;
/* Called for every tensor, on every rank, with the same arguments: must answer the same on all.
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
   zshard_version, step), streamed: unit by unit, the unit's full master is gathered (one unit's
   fp32 values per rank at a time, plus one tensor on the host on CUDA), rank 0 converts and writes
   it in 1 MiB chunks. Written to path.tmp, fsynced and renamed: path is either the old file or the
   whole new one. o NULL: the defaults. Collective over the world, between steps. Errors (same on
   every rank): ZS_ERR_INVALID_ARG (a bad name, duplicate names, a refused tensor, bad dtype),
   ZS_ERR_IO (no file left behind); a failed gather fails the engine, and so does a failed read
   of the NVMe tier (a unit there reads its master from the tier's files; no file is left). */
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
/* The engine's effective configuration (environment variables and defaults resolved), owned by
   the engine; NULL for NULL. */
ZS_API const zs_config *zs_engine_config(const zs_engine *e);
/* One line describing backends, stage, sharding, device, the optimizer-state precision ("optimizer
   state: master fp32 copy|params (the fp32 params)|lean (...), moments fp32|bf16", lean adding its
   rounding_seed), and every tunable setting with where its value came from ("prefetch_units=2
   (ZS_PREFETCH_UNITS)", "(program)", "(default)").

   With an offload budget, after zs_engine_commit it ends with the placement: "; placement:
   budget B bytes, device D bytes, K of N units on the host: <their names>"; with ZS_BUDGET_FREE
   "budget B bytes (free at commit, the least over N ranks)", B the measured number. */
ZS_API const char *zs_engine_info(const zs_engine *e);
/* Number of completed (not skipped) optimizer steps; -1 for NULL. */
ZS_API int64_t zs_engine_step_count(const zs_engine *e);
/* Number of completed zs_engine_step calls, skipped (non-finite) ones included: where a resumed
   run's data and schedule continue (restored by zs_engine_load); -1 for NULL. */
ZS_API int64_t zs_engine_steps_done(const zs_engine *e);

#ifdef __cplusplus
}
#endif

#endif /* ZSHARD_H */
