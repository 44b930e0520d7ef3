/* What save and load share: which elements each rank writes, and copies of
 * optimizer state between the engine (device or host arena) and host staging. */
#ifndef ZS_ENGINE_CKPT_H
#define ZS_ENGINE_CKPT_H

#include <stdint.h>

#include "ckpt/ckpt_format.h"
#include "engine/agree.h"
#include "engine/engine_internal.h"

/* The elements [*a, *b) of unit u that data-parallel rank r writes (empty when *a == *b): the range
   of optimizer state r holds, without padding, split evenly among the ranks that hold the same
   range (replicated state: all ranks; hybrid: the replicas), so every element is written once. */
void zs_ckpt_writer_range(const zs_engine *e, const zs_unit *u, int r, uint64_t *a, uint64_t *b);
/* The arrays a segment of u holds: the master (a frozen unit's: its params), then the first
   u->nstate of the optimizer's (none for a frozen unit). */
int zs_ckpt_unit_arrays(const zs_unit *u);
/* The segments rank r of the mesh (e->all) writes, with their offsets in its data section and
   its tp rank (tp ranks but 0 leave out the units that have no split tensor: embeddings and
   heads are saved once); returns the data bytes.
   segs (room for e->nunits) may be NULL to count only; *nsegs gets the count. */
uint64_t zs_ckpt_rank_segments(const zs_engine *e, int r, zs_ckpt_seg *segs, int *nsegs);
/* A run of unit elements a load copies: this rank's [dst, dst + n) (its flat order) from the
   saved flat order of tp rank src_tp's slices at [src, src + n). */
typedef struct {
  uint64_t dst, src, n;
  int src_tp;
} zs_ckpt_run;
/* The runs that bring unit i's elements [a, b) from checkpoint m, in order, adjacent ones merged:
   one when the tp size and layouts are the saver's; otherwise each element goes through the whole
   tensor to the saved slice that holds it (a dim-1 slice: a run per row and saved slice; a tensor
   the saver did not split: its tp rank 0's copy, so every tp rank loads the same values). *runs is
   malloc'd (NULL when a == b). m's tensors must be the engine's (ckpt_load.c's check_model). */
zs_status zs_ckpt_runs(const zs_engine *e, const zs_ckpt_manifest *m, int i, uint64_t a, uint64_t b,
                       zs_ckpt_run **runs, size_t *nruns);
/* Refusals every rank makes alike (the engine's state follows the collective calls): NULL
   engine (ZS_ERR_INVALID_ARG), before commit, inside a step, after a failure (ZS_ERR_STATE). */
zs_status zs_ckpt_check_state(const zs_engine *e, const char *fn);
/* Units on the NVMe tier keep their state in files only: checkpoints move it in pieces of at most
   ZS_CKPT_NVME_PIECE elements, so the host memory they take is bounded whatever the unit's size. */
#define ZS_CKPT_NVME_PIECE ((size_t)1 << 20)
#define ZS_CKPT_AGREE_MAX_WORDS ZS_AGREE_MAX_WORDS
/* zs_ckpt_agree that also all-gathers n (<= ZS_CKPT_AGREE_MAX_WORDS) words of each rank: all
   (all_size rows of 1 + n words: the status, then the words) is filled for the caller
   (zs_engine_agree_words). */
zs_status zs_ckpt_agree_words(zs_engine *e, zs_status mine, const uint64_t *words, int n,
                              uint64_t *all, const char *what);
/* The same verdict on every rank: all-gathers this rank's status; returns ZS_OK when every rank
   succeeded, else the first failing rank's status on every rank, with this rank's own message
   where it failed, or one naming the first failing rank and the count (zs_engine_agree). A
   failed exchange marks the engine failed. `what` names the operation. Collective over every
   rank (e->all). */
zs_status zs_ckpt_agree(zs_engine *e, zs_status mine, const char *what);

#endif
