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
/* Refusals every rank makes alike (the engine's state follows the collective calls): NULL
   engine (ZS_ERR_INVALID_ARG), before commit, inside a step, after a failure (ZS_ERR_STATE). */
zs_status zs_ckpt_check_state(const zs_engine *e, const char *fn);
/* Units on the NVMe tier keep their state in files only: checkpoints move it in pieces of at most
   ZS_CKPT_NVME_PIECE elements, so the host memory they take is bounded whatever the unit's size. */
#define ZS_CKPT_NVME_PIECE ((size_t)1 << 20)
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
