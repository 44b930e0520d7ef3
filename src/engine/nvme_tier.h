/* The engine's NVMe tier (zs_config.nvme_path): the optimizer state (the master and the
 * optimizer's state arrays, in the precision mode's types) of the units the placement puts on disk
 * (shard/placement.h, zs_placement_nvme) lives in O_DIRECT files per unit in this rank's tier
 * directory (offload/nvme_dir.h), never in memory.
 *
 * Layout (the invariant every reader and writer relies on): unit u's files nv[ZS_NVME_MASTER]
 * and nv[ZS_NVME_OPT0 + i] (the optimizer's state i) each hold u->opt_n elements of
 * zs_unit_nvme_elem(u, which) bytes, element j (flat element u->opt_off + j of the unit) at byte j
 * * that size; the bytes past the last element up to the file's aligned size are zero and belong to
 * no element. The master file holds the fp32 master, or with ZS_MASTER_REMAINDER the 16-bit
 * remainders (the bf16 params in their home complete them); it is absent (NULL) where the params
 * are the master (lean mode, and ZS_MASTER_PARAMS with the params in the host arena: u->master is
 * their alias). The state arrays are fp32 or bf16 (moment_dtype). A unit not on the tier has every
 * slot NULL, and its state is in memory as before; a unit on the tier (zs_unit_on_nvme) has NULL
 * slots for the states there.
 *
 * The tier owns one io_uring ring and one staging area of zs_placement_nvme_staging(cfg) bytes
 * (3 slots of offload_chunk elements of each array the mode keeps: a stream with ahead = 1),
 * booked in the ledger's host_pinned as the planner counts it: pinned on CUDA, unpinned on the
 * CPU device (zs_nvme_staging_flags_for), whose host tier is host memory like the arena there. The
 * step (nvme_tier.c) streams every unit on the tier through it; the range calls (nvme_range.c:
 * checkpoints, export, zs_unit_param reads and writes) borrow the same staging between steps, so
 * the tier's host memory stays bounded whatever the model's size. Not thread-safe: one engine call
 * at a time, as the engine. */
#ifndef ZS_ENGINE_NVME_TIER_H
#define ZS_ENGINE_NVME_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine_internal.h"
#include "offload/nvme_dir.h"
#include "offload/nvme_file.h"
#include "offload/nvme_ring.h"
#include "offload/nvme_staging.h"
#include "shard/placement.h"

/* The arrays of a unit on the tier, the index into zs_unit.nv: the master (or the remainders),
   then the optimizer's state i at ZS_NVME_OPT0 + i. */
enum { ZS_NVME_MASTER = 0, ZS_NVME_OPT0 = 1, ZS_NVME_NARRAYS = 1 + ZS_OPT_MAX_STATE };

struct zs_nvme_tier {
  zs_nvme_dir *dir;         /* <nvme_path>/rank<world rank>-<pid>, made at open, removed at close */
  zs_nvme_ring *ring;       /* idle between engine calls */
  zs_nvme_staging *staging; /* 3 slots, each chunk elements of every array of the mode */
  size_t chunk;             /* elements per chunk: offload_chunk rounded to the quantum */
  int nunits;               /* units on the tier */
  /* Totals since open, for zs_engine_info and bench/nvme.sh: bytes moved by the step's passes
     and the seconds those passes took (I/O and compute overlapped). */
  uint64_t step_read, step_written;
  double step_seconds;
  uint64_t file_bytes; /* the bytes the units' files reserve on disk (aligned sizes) */
  size_t booked;       /* host_pinned bytes booked in the ledger for the staging */
  size_t info_at;      /* where the "; nvme:" part of zs_engine.info starts (rewritten per step) */
};
typedef struct zs_nvme_tier zs_nvme_tier;

/* Commit: when pl places units on the tier, opens this rank's directory (checking free space for
   the files' aligned bytes and O_DIRECT support: ZS_ERR_IO / ZS_ERR_INVALID_ARG /
   ZS_ERR_UNSUPPORTED naming the path and the fix), the ring and the staging (booked in the
   ledger's host_pinned as zs_placement_nvme_staging), creates each unit's files, whose zero
   fill is their initial state (master = the unit's params at commit, which commit zeroes, widened
   to fp32; remainders 0; m = v = 0). e->nvme stays NULL when pl places nothing there. On failure
   everything it made is removed again and e->nvme is NULL. Not collective (commit agrees on the
   outcome afterwards; the placement is the same on every rank). */
zs_status zs_engine_nvme_open(zs_engine *e, const zs_placement *pl);

/* Destroy (and commit's failure path): closes and removes every file of the tier, the rank's
   directory, the ring and the staging; clears every unit's nv. NULL tier: nothing. */
void zs_engine_nvme_close(zs_engine *e);

/* The step's update of every unit on the tier (step.c's optimizer update, after the units in memory
   have theirs; zs_optim_prepare already called): per unit one UPDATE pass of the stream (look-ahead
   1, chunks of e->nvme->chunk) over its files, the optimizer on each chunk's spans in place through
   zs_optim_update with state_host = 1 (the host tier's update: the bits of host offload), grads
   and params where the unit's other states are. Adds the bytes and seconds to the tier's totals.
   Then, whatever `rc` (this rank's status of the step's update so far, and ZS_OK when the tier
   has nothing on this rank): when the tier is active (e->nvme, the same on every rank) every rank
   all-gathers its status and all return an error when any failed: the failing rank its own
   (ZS_ERR_IO naming the file and the offset), the others ZS_ERR_IO naming the first failing
   rank. The caller marks the engine failed. Collective over the world when e->nvme is set;
   without it returns rc at once. */
zs_status zs_engine_nvme_step(zs_engine *e, zs_status rc);

/* Copies the tier's directory and totals into the engine's facts (zs_engine_facts_get) and
   rewrites the "; nvme:" part at the end of zs_engine_info from them (after commit and after each
   step). No-op without the tier. */
void zs_engine_nvme_info(zs_engine *e);

/* Reads elements [first, first + n) (relative to u->opt_off) of array `which` (ZS_NVME_*) of a
   unit on the tier into dst (host memory, n elements of zs_unit_nvme_elem bytes: fp32, or bf16
   moments and 16-bit remainders), through the tier's staging. ZS_ERR_IO naming
   the file and the offset; ZS_ERR_INVALID_ARG for a range past opt_n or a unit not on the tier.
   Outside a step only. Not collective. */
zs_status zs_engine_nvme_read(zs_engine *e, const zs_unit *u, int which, size_t first, size_t n,
                              void *dst);

/* Writes src (host memory, n elements as zs_engine_nvme_read's) over elements [first, first + n) of
   array `which` of a unit on the tier (read-modify-write of the aligned blocks at the ends). Errors
   as zs_engine_nvme_read; after ZS_ERR_IO the range may be partly written. Outside a step only. Not
   collective. */
zs_status zs_engine_nvme_write(zs_engine *e, const zs_unit *u, int which, size_t first, size_t n,
                               const void *src);

#endif
