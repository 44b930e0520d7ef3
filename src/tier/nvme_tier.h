/* The NVMe tier (zs_config.nvme_path; its operations are zs_tier_nvme_ops, tier.h): the optimizer
 * state (the master and the optimizer's state arrays, in the precision mode's types) of the units
 * the placement puts on disk (shard/placement.h, zs_placement_nvme) lives in O_DIRECT files per
 * unit in this rank's tier directory (offload/nvme_dir.h), never in memory.
 *
 * Layout (the invariant every reader and writer relies on): unit u's files nv[ZS_ARR_MASTER]
 * and nv[ZS_ARR_OPT0 + i] (the optimizer's state i) each hold u->opt_n elements of
 * zs_tier_elem(u, a) bytes, element j (flat element u->opt_off + j of the unit) at byte j
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
 * update (nvme_tier.c) streams a unit on the tier through it; the range reads and writes
 * (nvme_range.c: checkpoints, export, zs_unit_param) borrow the same staging outside the step's
 * update, so the tier's host memory stays bounded whatever the model's size. Not thread-safe: one
 * engine call at a time, as the engine. */
#ifndef ZS_TIER_NVME_TIER_H
#define ZS_TIER_NVME_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "offload/nvme_dir.h"
#include "offload/nvme_file.h"
#include "offload/nvme_ring.h"
#include "offload/nvme_staging.h"
#include "shard/placement.h"
#include "tier/tier.h"

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
  double step_wait;    /* of step_seconds, the time the passes waited for the disk (the ring's) */
  uint64_t file_bytes; /* the bytes the units' files reserve on disk (aligned sizes) */
  size_t booked;       /* host_pinned bytes booked in the ledger for the staging */
  size_t info_at;      /* the owner's: where its info text's "; nvme:" part starts */
};
typedef struct zs_nvme_tier zs_nvme_tier;

/* Commit: when pl places units on the tier, opens this rank's directory under the config's
   nvme_path (checking free space for the files' aligned bytes and O_DIRECT support: ZS_ERR_IO /
   ZS_ERR_INVALID_ARG / ZS_ERR_UNSUPPORTED naming the path and the fix), the ring and the staging
   (booked in the ledger's host_pinned as zs_placement_nvme_staging), and creates each unit's
   files, whose zero fill is their initial state (master = the unit's params at commit, which
   commit zeroes, widened to fp32; remainders 0; state 0). t->nvme stays NULL when pl places
   nothing there. On failure everything it made is removed again and t->nvme is NULL. Not
   collective (the owner agrees on the outcome; the placement is the same on every rank). */
zs_status zs_nvme_tier_open(zs_tiers *t, const zs_placement *pl);
/* The disk bytes this rank's tier files take (each array rounded up to align, the directory's
   O_DIRECT alignment), from the units' table: what zs_nvme_tier_open reserves. */
uint64_t zs_nvme_tier_disk_bytes(const zs_tiers *t, size_t align);

/* The tier's range read and write (zs_tier_nvme_ops.read / .write; nvme_range.c). */
zs_status zs_nvme_tier_read(zs_tiers *t, const zs_unit *u, zs_arr a, size_t first, size_t n,
                            void *dst);
zs_status zs_nvme_tier_write(zs_tiers *t, const zs_unit *u, zs_arr a, size_t first, size_t n,
                             const void *src);

/* The gather of u's whole tensors (tier/whole.h) from its files, into u->whole_dir's channels:
   one UPDATE pass (a module's gather may update its state: Muon's momentum) calling the
   optimizer's gather on each whole tensor's segment of each chunk. The tier's update pass then
   stores their results (zs_optim_store) before each such segment's update: a unit with whole
   tensors on the tier costs two passes per step. Counted in the tier's totals; ZS_ERR_IO as the
   update's. */
zs_status zs_nvme_tier_whole_gather(zs_tiers *t, zs_unit *u);

/* Closes and removes every file of the tier, the rank's directory, the ring and the staging;
   clears every unit's nv. No tier: nothing. */
void zs_nvme_tier_close(zs_tiers *t);

#endif
