/* What the synchronous save (ckpt_save.c) and the asynchronous one (ckpt_async.c) share: the rank
 * file's writer, the collective prepare and verdicts, and the manifest's commit. Internal to the
 * engine. */
#ifndef ZS_ENGINE_CKPT_SAVE_H
#define ZS_ENGINE_CKPT_SAVE_H

#include <stdint.h>

#include <xxhash.h>

#include "engine/ckpt.h"
#include "offload/direct_out.h"

/* A rank's row of the manifest's words: its status, then its file's description. */
enum { W_STATUS, W_BYTES, W_DATA, W_HEADER_HASH, W_NWORDS };

/* One rank file on its way out: bytes go to <dir>/rank-<R>.zsd.tmp and into the running checksum
   of their block; finish writes the header and block table, fsyncs and renames it. Touches no
   engine state (e is only for reading state into piece), so a thread may carry it on. */
typedef struct {
  zs_engine *e;
  int fd, rank, opened, renamed;
  const char *path; /* tmp (zs_io_write's hook names it) */
  char final[4200], tmp[4300], dir[4096];
  float *piece;    /* the synchronous save's ZS_CKPT_NVME_PIECE elements of state on their way
                      out (freed by close); the asynchronous one reads into its staging */
  int tier_failed; /* a read of the NVMe tier failed (not this checkpoint's file) */
  uint64_t data, block, in_block, nblk, nblk_total, data_off;
  uint64_t *table;
  XXH64_state_t *blk;
  zs_direct_out *direct; /* the data's O_DIRECT path, or NULL: through the page cache */
  double rate, t0;       /* at most rate bytes a second of data from t0 on (0: unpaced) */
  uint64_t sent;         /* data bytes emitted since t0 */
} zs_ckpt_writer;

/* Opens rank's file in ckdir for data bytes of data in blocks of block bytes; with direct, its
   data goes out with O_DIRECT through io_uring where the file system and the kernel allow (else,
   silently, through the page cache: the same bytes). On failure the caller still calls
   zs_ckpt_writer_close. */
zs_status zs_ckpt_writer_open(zs_ckpt_writer *w, zs_engine *e, const char *ckdir, int rank,
                              uint64_t data, uint64_t block, int direct);
/* Appends n bytes of data (p may be reused when it returns). */
zs_status zs_ckpt_emit(zs_ckpt_writer *w, const void *p, uint64_t n);
/* After all data: header, block table, fsync, rename, fsync of the directory; out[W_BYTES..]
   describes the file. */
zs_status zs_ckpt_writer_finish(zs_ckpt_writer *w, uint64_t out[W_NWORDS]);
/* Frees the writer; with rc != ZS_OK its temporary file is removed. */
void zs_ckpt_writer_close(zs_ckpt_writer *w, zs_status rc);
/* n elements of array a of u from flat element x, canonical fp32, into dst (zeros where the
   tensor's group's optimizer does not keep a); a failed read of the NVMe tier's files sets
   *tier_failed (the error names the file and the offset). */
zs_status zs_ckpt_read_state(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                             int *tier_failed);

/* Collective: rank 0 prepares dir (creates it, clears crashed saves' leftovers, makes the next
   checkpoint's directory); every rank's verdict on its path (and mine_rc, its outcome before the
   call, with its message) goes into one all-gather, so all refuse together (a bad path on one
   rank, different paths, a directory rank 0 cannot create, a rank out of memory). On success
   *seq, *block are rank 0's and ck the checkpoint's directory. */
zs_status zs_ckpt_save_prepare(zs_engine *e, zs_status mine_rc, const char *dir, uint64_t *seq,
                               uint64_t *block, char *ck, size_t cap);
/* mine, or when it is ZS_OK and this rank's launcher has died (zs_comm_launcher_gone), ZS_ERR_COMM
   saying so: a job whose launcher is gone commits no checkpoint. */
zs_status zs_ckpt_launcher_check(const zs_engine *e, zs_status mine);
/* Collective: the verdict on the rank files (zs_ckpt_launcher_check's included), with each rank's
   tier_failed: *tier_rank gets the first rank whose NVMe tier failed (left as it was when none). */
zs_status zs_ckpt_agree_written(zs_engine *e, zs_status mine, int tier_failed, int *tier_rank);
/* The manifest of checkpoint seq from the engine's state now; words (all ranks' W_* rows) fill
   its files, or NULL to fill them later with zs_ckpt_manifest_files. */
zs_status zs_ckpt_build_manifest(zs_engine *e, uint64_t seq, uint64_t block, const uint64_t *words,
                                 zs_ckpt_manifest *m);
void zs_ckpt_manifest_files(zs_ckpt_manifest *m, const uint64_t *words);
/* Rank 0: writes m as dir's checkpoint m->seq (temporary name, fsync, rename = the commit point,
   fsync of the directory), then deletes checkpoints beyond the newest keep, except those
   numbered a multiple of every (> 0). */
zs_status zs_ckpt_commit_manifest(const zs_ckpt_manifest *m, const char *dir, int keep, int every);

/* The asynchronous save (ckpt_async.c): stages this rank's share and starts its writer thread;
   collective as zs_engine_save. */
zs_status zs_ckpt_save_async(zs_engine *e, const char *dir);
/* Collective: brings a staged save to its end: with wait, joins the writers and commits (or
   drops) it, returning its outcome; without, does so only when every rank's writer is done
   (*pending = 1 when not; the outcome then goes to e->save_rc). ZS_OK without a save. */
zs_status zs_ckpt_save_finish(zs_engine *e, int wait, int *pending);
/* A staged save ended before load or destroy: committed (collective) when the engine is
   between steps, its failure kept for zs_engine_save_wait; else dropped (zs_ckpt_save_drop). */
void zs_ckpt_save_settle(zs_engine *e);
/* Frees the engine's kept staging (destroy). */
void zs_ckpt_staging_free(zs_engine *e);
/* Destroy's end of a staged save on an engine that cannot communicate: joins the writer and
   frees it (never committed; the next save clears its directory). */
void zs_ckpt_save_drop(zs_engine *e);

#endif
