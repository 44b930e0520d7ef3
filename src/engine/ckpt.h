/* What save and load share: which elements each rank writes, and copies of
 * optimizer state between the engine (device or host arena) and host staging. */
#ifndef ZS_ENGINE_CKPT_H
#define ZS_ENGINE_CKPT_H

#include <stdint.h>

#include "ckpt/ckpt_format.h"
#include "engine/agree.h"
#include "engine/engine_internal.h"

/* The elements [*a, *b) of unit u that world rank r writes (empty when *a == *b): the range of
   optimizer state r holds, without padding, split evenly among the ranks that hold the same range
   (replicated state: all ranks; hybrid: the replicas), so every element is written once. */
void zs_ckpt_writer_range(const zs_engine *e, const zs_unit *u, int r, uint64_t *a, uint64_t *b);
/* The segments rank r writes, with their offsets in its data section; returns the data bytes.
   segs (room for e->nunits) may be NULL to count only; *nsegs gets the count. */
uint64_t zs_ckpt_rank_segments(const zs_engine *e, int r, zs_ckpt_seg *segs, int *nsegs);
/* Copies n fp32 values between the engine's optimizer state (device or host arena) and host
   memory. */
zs_status zs_ckpt_state_to_host(zs_engine *e, const zs_unit *u, float *dst, const float *src,
                                size_t n);
zs_status zs_ckpt_state_from_host(zs_engine *e, const zs_unit *u, float *dst, const float *src,
                                  size_t n);
/* A frozen unit's params at flat elements [a, a + n) (inside its params' home range) widened to
   fp32 into host memory dst: what its checkpoint stores as master values (it has no master). */
zs_status zs_ckpt_params_to_host(zs_engine *e, zs_unit *u, float *dst, uint64_t a, size_t n);
/* Refusals every rank makes alike (the engine's state follows the collective calls): NULL
   engine (ZS_ERR_INVALID_ARG), before commit, inside a step, after a failure (ZS_ERR_STATE). */
zs_status zs_ckpt_check_state(const zs_engine *e, const char *fn);
/* The NVMe tier (engine/nvme_tier.h) as checkpoints and loads see it (ckpt_nvme.c):
   a unit on the tier (zs_unit_on_nvme) has its state arrays and, unless the master is its params,
   its fp32 master or remainders in files only (shard.h, zs_unit.nv), and they move in pieces of at
   most ZS_CKPT_NVME_PIECE elements, so the host memory they take is bounded whatever the unit's
   size. */
#define ZS_CKPT_NVME_PIECE ((size_t)1 << 20)
/* Writes src (host, n elements of the file's type: zs_unit_nvme_elem) over elements
   [first, first + n) of array `which` of unit u's optimizer range on the tier
   (zs_engine_nvme_write; n is the caller's bounded piece). Errors:
   the tier's ZS_ERR_IO naming the file and the offset, prefixed with `fn` and the unit. Not
   collective. */
zs_status zs_ckpt_nvme_put(zs_engine *e, const zs_unit *u, int which, size_t first, size_t n,
                           const void *src, const char *fn);
#define ZS_CKPT_AGREE_MAX_WORDS ZS_AGREE_MAX_WORDS
/* zs_ckpt_agree that also all-gathers n (<= ZS_CKPT_AGREE_MAX_WORDS) words of each rank: all
   (world_size rows of 1 + n words: the status, then the words) is filled for the caller
   (zs_engine_agree_words). */
zs_status zs_ckpt_agree_words(zs_engine *e, zs_status mine, const uint64_t *words, int n,
                              uint64_t *all, const char *what);
/* The same verdict on every rank: all-gathers this rank's status; returns ZS_OK when every rank
   succeeded, else the first failing rank's status on every rank, with this rank's own message
   where it failed, or one naming the first failing rank and the count (zs_engine_agree). A
   failed exchange marks the engine failed. `what` names the operation. Collective over the
   world. */
zs_status zs_ckpt_agree(zs_engine *e, zs_status mine, const char *what);

#endif
