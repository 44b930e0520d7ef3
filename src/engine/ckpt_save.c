/* zs_engine_save: every rank streams its share of the optimizer state to its own file (temporary
 * name, fsync, rename), then rank 0 writes the manifest, whose rename is the commit point, and
 * deletes checkpoints older than the newest ckpt_keep. Until that rename the previous checkpoint
 * is the latest one; a crash at any moment leaves it loadable. A failed read of the NVMe tier's
 * files also fails the engine on every rank, after the new checkpoint's directory is removed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/bf16.h"
#include "base/clock.h"
#include "base/error.h"
#include "engine/ckpt.h"
#include "engine/ckpt_save.h"
#include "engine/fail.h"
#include "ckpt/ckpt_io.h"
#include "offload/nvme_dir.h"
#include "tier/master_io.h"

/* Rank 0: creates dir, removes what crashed saves left (checkpoint directories without a
   manifest), and creates the next checkpoint's directory; *seq is its number: the step count it
   holds (`step`), or one above the highest number in dir when that is not lower (a second save
   at the same step, a save after resuming an earlier checkpoint), so the newest is the highest. */
static zs_status prepare(const char *dir, uint64_t step, uint64_t *seq) {
  ZS_CHECK(zs_io_mkdirs(dir));
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) {
    *slash = 0;
    zs_io_fsync_dir(parent); /* dir's own entry, when it was just created (best effort) */
  }
  uint64_t *seqs;
  int *com, n;
  ZS_CHECK(zs_io_scan(dir, &seqs, &com, &n));
  char p[4096];
  const uint64_t next = n ? seqs[n - 1] + 1 : 0;
  *seq = step > next ? step : next;
  for (int i = 0; i < n; i++)
    if (!com[i]) {
      zs_io_ckpt_path(p, sizeof p, dir, seqs[i]);
      zs_io_rmdir_files(p);
    }
  free(seqs);
  free(com);
  zs_io_ckpt_path(p, sizeof p, dir, *seq);
  ZS_CHECK(zs_io_mkdirs(p));
  return zs_io_fsync_dir(dir);
}

/* Streams this rank's data (ckpt_save.h): each byte goes to the file and into its block's
   running checksum (hashed once: the header's checksum covers the block table, so it covers the
   whole file). */
typedef zs_ckpt_writer writer;

/* One block's piece: with O_DIRECT it is queued (the disk works while the next blocks are
   hashed; the caller's memory is released at the end of the emit), else written to the page
   cache. */
static zs_status put_piece(zs_ckpt_writer *w, const unsigned char *c, size_t n) {
  if (!w->direct) return zs_io_write(w->fd, c, n, w->path, 1, w->rank);
  const zs_status rc = zs_direct_out_put(w->direct, c, n);
  if (rc != ZS_OK) return zs_err_wrap(rc, "writing %s", w->path);
  zs_io_count_written(n, w->path, w->rank);
  return ZS_OK;
}

/* With a rate, sleeps until the n bytes just emitted are due. */
static void pace(zs_ckpt_writer *w, uint64_t n) {
  w->sent += n;
  const double wait = w->t0 + (double)w->sent / w->rate - zs_clock_now_s();
  if (wait <= 0) return;
  struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

zs_status zs_ckpt_emit(zs_ckpt_writer *w, const void *p, uint64_t n) {
  const unsigned char *c = p;
  zs_status rc = ZS_OK;
  while (n > 0 && rc == ZS_OK) {
    uint64_t take = w->block - w->in_block;
    if (take > n) take = n;
    XXH64_update(w->blk, c, (size_t)take);
    rc = put_piece(w, c, (size_t)take);
    if (rc == ZS_OK && w->rate > 0) pace(w, take);
    w->in_block += take;
    c += take;
    n -= take;
    if (w->in_block == w->block) {
      /* Through the page cache, start the block's writeback now, so the disk works while the
         next blocks are hashed and the final fsync has little left to do. */
      const uint64_t end = w->data_off + (w->nblk + 1) * w->block;
      if (!w->direct)
        sync_file_range(w->fd, (off_t)(end - w->block), (off_t)w->block, SYNC_FILE_RANGE_WRITE);
      w->table[w->nblk++] = XXH64_digest(w->blk);
      XXH64_reset(w->blk, 0);
      w->in_block = 0;
    }
  }
  if (w->direct) { /* p is the caller's again (after a failure too) */
    const zs_status rel = zs_direct_out_release(w->direct);
    if (rc == ZS_OK && rel != ZS_OK) rc = zs_err_wrap(rel, "writing %s", w->path);
  }
  return rc;
}

/* Zeros, in dst (array a of u over flat elements [x, x + n)), the elements of the tensors whose
   group's optimizer keeps fewer than a's arrays: what zs_unit_get_state reads of them, whatever a
   shared unit's array holds there (a load of another momentum's checkpoint may have put values
   in it that no update reads). */
static void zero_unkept(const zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst) {
  for (int k = 0; k < u->ntensors && a != ZS_ARR_MASTER; k++) {
    size_t lo, hi;
    if (!zs_layout_overlap(&u->lay, k, x, x + n, &lo, &hi)) continue;
    if ((int)a - ZS_ARR_OPT0 >= zs_engine_tensor_nstate(u, k, NULL))
      memset(dst + (lo - x), 0, (hi - lo) * sizeof *dst);
  }
}

zs_status zs_ckpt_read_state(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                             int *tier_failed) {
  int tier = 0;
  const zs_status rc = zs_state_read(&e->tiers, u, a, x, n, dst, &tier);
  if (rc != ZS_OK && tier) {
    *tier_failed = 1;
    return zs_err_wrap(rc, "zs_engine_save: reading unit '%s' %s from the NVMe tier", u->name,
                       zs_arr_name(&e->cfg, a));
  }
  if (rc == ZS_OK) zero_unkept(u, a, x, n, dst);
  return rc;
}

/* Array a of u over flat elements [x, x + n), in canonical fp32, piece by piece. */
static zs_status put_array(writer *w, zs_unit *u, zs_arr a, uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; i += ZS_CKPT_NVME_PIECE) {
    const size_t take = (size_t)(n - i < ZS_CKPT_NVME_PIECE ? n - i : ZS_CKPT_NVME_PIECE);
    ZS_CHECK(zs_ckpt_read_state(w->e, u, a, x + i, take, w->piece, &w->tier_failed));
    ZS_CHECK(zs_ckpt_emit(w, w->piece, 4 * take));
  }
  return ZS_OK;
}

/* The data of this rank's file: each segment's arrays (the master, the optimizer's state) in
   turn. */
static zs_status write_data(writer *w, const zs_ckpt_seg *segs, int ns) {
  for (int k = 0; k < ns; k++)
    for (int a = 0; a < segs[k].narrays; a++)
      ZS_CHECK(put_array(w, w->e->units[segs[k].unit], (zs_arr)a, segs[k].begin,
                         segs[k].end - segs[k].begin));
  return ZS_OK;
}

/* Sets up the O_DIRECT path of w's file (opened with O_DIRECT): where it cannot be had (an
   alignment the data offset does not meet, no io_uring) the file goes on without O_DIRECT. */
static zs_status direct_setup(zs_ckpt_writer *w) {
  const size_t align = zs_nvme_fd_align(w->fd);
  if (w->data_off % align == 0 &&
      zs_direct_out_create(w->fd, w->tmp, w->data_off, align, &w->direct) == ZS_OK)
    return ZS_OK;
  w->direct = NULL;
  const int fl = fcntl(w->fd, F_GETFL);
  if (fl < 0 || fcntl(w->fd, F_SETFL, fl & ~O_DIRECT) != 0)
    return zs_err(ZS_ERR_IO, "zs_engine_save: %s: turning O_DIRECT off: %s", w->tmp,
                  strerror(errno));
  return ZS_OK;
}

zs_status zs_ckpt_writer_open(zs_ckpt_writer *w, zs_engine *e, const char *ckdir, int rank,
                              uint64_t data, uint64_t block, int direct) {
  memset(w, 0, sizeof *w);
  w->e = e;
  w->fd = -1;
  w->rank = rank;
  w->block = block;
  w->data = data;
  snprintf(w->final, sizeof w->final, "%s/rank-%05d.zsd", ckdir, rank);
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp", w->final);
  snprintf(w->dir, sizeof w->dir, "%s", ckdir);
  w->path = w->tmp;
  w->nblk_total = zs_ckpt_nblocks(data, block);
  w->blk = XXH64_createState();
  w->table = calloc((size_t)w->nblk_total + 1, 8);
  if (!w->blk || !w->table)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory for a block table");
  XXH64_reset(w->blk, 0);
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  w->fd = direct ? open(w->tmp, flags | O_DIRECT, 0644) : -1;
  if (w->fd < 0) w->fd = open(w->tmp, flags, 0644); /* tmpfs and others refuse O_DIRECT */
  if (w->fd < 0)
    return zs_err(ZS_ERR_IO, "zs_engine_save: creating %s: %s", w->tmp, strerror(errno));
  w->opened = 1;
  w->data_off = zs_ckpt_data_offset(ZS_CKPT_DATA_VERSION, w->nblk_total);
  const int fl = fcntl(w->fd, F_GETFL);
  if (fl >= 0 && (fl & O_DIRECT)) ZS_CHECK(direct_setup(w));
  if (lseek(w->fd, (off_t)w->data_off, SEEK_SET) < 0)
    return zs_err(ZS_ERR_IO, "zs_engine_save: seeking in %s: %s", w->tmp, strerror(errno));
  return ZS_OK;
}

/* The header and block table at the file's start; with O_DIRECT the data's end first (the last
   write was padded: the file gets its exact length back) and the header from an aligned buffer
   of the whole data offset (header, table, zeros). */
static zs_status write_head(zs_ckpt_writer *w, uint64_t *hh) {
  const uint64_t nb = w->nblk_total;
  if (!w->direct) {
    unsigned char head[ZS_CKPT_HEADER_BYTES];
    *hh = zs_ckpt_header_encode(head, (uint32_t)w->rank, w->data, w->block, w->table, nb);
    ZS_CHECK(zs_io_pwrite(w->fd, head, sizeof head, 0, w->tmp));
    return zs_io_pwrite(w->fd, w->table, (size_t)(8 * nb), ZS_CKPT_HEADER_BYTES, w->tmp);
  }
  zs_status rc = zs_direct_out_flush(w->direct);
  if (rc != ZS_OK) return zs_err_wrap(rc, "zs_engine_save: writing %s", w->tmp);
  if (ftruncate(w->fd, (off_t)(w->data_off + w->data)) != 0)
    return zs_err(ZS_ERR_IO, "zs_engine_save: truncating %s: %s", w->tmp, strerror(errno));
  /* aligned as the data (direct_setup: its alignment divides data_off) */
  unsigned char *buf = NULL;
  if (posix_memalign((void **)&buf, zs_nvme_fd_align(w->fd), (size_t)w->data_off) != 0)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: no memory for %s's header", w->tmp);
  memset(buf, 0, (size_t)w->data_off);
  memcpy(buf + ZS_CKPT_HEADER_BYTES, w->table, (size_t)(8 * nb));
  *hh = zs_ckpt_header_encode(buf, (uint32_t)w->rank, w->data, w->block,
                              (uint64_t *)(void *)(buf + ZS_CKPT_HEADER_BYTES), nb);
  rc = zs_io_pwrite(w->fd, buf, (size_t)w->data_off, 0, w->tmp);
  free(buf);
  return rc;
}

zs_status zs_ckpt_writer_finish(zs_ckpt_writer *w, uint64_t out[W_NWORDS]) {
  if (w->in_block > 0) w->table[w->nblk++] = XXH64_digest(w->blk); /* the last, shorter block */
  uint64_t hh = 0;
  ZS_CHECK(write_head(w, &hh));
  ZS_CHECK(zs_io_fsync(w->fd, w->tmp));
  const int cr = close(w->fd);
  w->fd = -1;
  if (cr != 0) return zs_err(ZS_ERR_IO, "zs_engine_save: closing %s: %s", w->tmp, strerror(errno));
  if (rename(w->tmp, w->final) != 0)
    return zs_err(ZS_ERR_IO, "zs_engine_save: renaming %s: %s", w->tmp, strerror(errno));
  w->renamed = 1;
  ZS_CHECK(zs_io_fsync_dir(w->dir));
  out[W_BYTES] = w->data_off + w->data;
  out[W_DATA] = w->data;
  out[W_HEADER_HASH] = hh;
  return ZS_OK;
}

void zs_ckpt_writer_close(zs_ckpt_writer *w, zs_status rc) {
  zs_direct_out_destroy(w->direct); /* waits for its writes before the file closes */
  w->direct = NULL;
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  if (rc != ZS_OK && w->opened && !w->renamed) unlink(w->tmp); /* no temporary file stays */
  if (w->blk) XXH64_freeState(w->blk);
  free(w->table);
  free(w->piece);
  w->blk = NULL;
  w->table = NULL;
  w->piece = NULL;
}

/* Writes this rank's file into ckdir; out[W_*] describes it for the manifest. *tier_failed: the
   failure was a read of the NVMe tier's files (the engine's own state), not the checkpoint's. */
static zs_status write_rank_file(zs_engine *e, const char *ckdir, uint64_t block,
                                 uint64_t out[W_NWORDS], int *tier_failed) {
  int ns;
  zs_ckpt_seg *segs = calloc((size_t)e->nunits, sizeof *segs);
  writer w;
  memset(&w, 0, sizeof w);
  w.fd = -1;
  zs_status rc = segs ? ZS_OK : zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory");
  const uint64_t data = segs ? zs_ckpt_rank_segments(e, e->all_rank, segs, &ns) : 0;
  if (rc == ZS_OK) rc = zs_ckpt_writer_open(&w, e, ckdir, e->all_rank, data, block, 0);
  if (rc == ZS_OK && !(w.piece = malloc(ZS_CKPT_NVME_PIECE * 4))) /* the state on its way out */
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory for a %zu-byte piece",
                ZS_CKPT_NVME_PIECE * 4);
  if (rc == ZS_OK) rc = write_data(&w, segs, ns);
  if (rc == ZS_OK) rc = zs_ckpt_writer_finish(&w, out);
  zs_ckpt_writer_close(&w, rc);
  free(segs);
  *tier_failed = w.tier_failed;
  return rc;
}

zs_status zs_ckpt_build_manifest(zs_engine *e, uint64_t seq, uint64_t block, const uint64_t *words,
                                 zs_ckpt_manifest *m) {
  memset(m, 0, sizeof *m);
  m->format_version = ZS_CKPT_FORMAT_VERSION; /* its files are ZS_CKPT_DATA_VERSION */
  snprintf(m->zshard_version, sizeof m->zshard_version, "%s", zs_version());
  m->seq = seq;
  m->step = e->opt_steps;
  m->steps_done = e->steps_done;
  m->world_size = e->world_size;
  m->shard_group_size = e->shard_size;
  m->stage = e->cfg.stage;
  m->tp_size = e->tp_size;
  m->shard_params = e->plan.shard_params;
  m->shard_grads = e->plan.shard_grads;
  m->shard_optimizer = e->plan.shard_optimizer;
  m->offload = e->cfg.offload;
  m->param_dtype = e->cfg.param_dtype;
  m->reduce_dtype = e->cfg.reduce_dtype;
  m->deterministic = e->cfg.deterministic;
  snprintf(m->optimizer, sizeof m->optimizer, "%s", zs_opt_name_of(&e->cfg));
  m->narrays = zs_state_narrays(&e->cfg);
  for (int a = 0; a < m->narrays; a++)
    snprintf(m->arrays[a], sizeof m->arrays[a], "%s", zs_arr_ckpt_name(&e->cfg, (zs_arr)a));
  m->lr = e->cfg.optim.lr;
  m->beta1 = e->cfg.optim.beta1;
  m->beta2 = e->cfg.optim.beta2;
  m->eps = e->cfg.optim.eps;
  m->weight_decay = e->cfg.optim.weight_decay;
  m->max_grad_norm = e->cfg.optim.max_grad_norm;
  m->ngroups = e->ngroups;
  memcpy(m->groups, e->groups, sizeof m->groups);
  for (int g = 1; g < e->ngroups; g++)
    snprintf(m->group_optimizer[g], sizeof m->group_optimizer[g], "%s",
             zs_optimizer_name(e->group_opt[g]));
  if (e->user_meta_bytes) { /* a copy: the manifest owns its blob */
    if (!(m->user_meta = malloc(e->user_meta_bytes)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
    memcpy(m->user_meta, e->user_meta, e->user_meta_bytes);
    m->user_meta_bytes = e->user_meta_bytes;
  }
  m->block_bytes = block;
  m->units = calloc((size_t)e->nunits, sizeof *m->units);
  m->files = calloc((size_t)e->all_size, sizeof *m->files);
  if (!m->units || !m->files) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
  m->nunits = e->nunits;
  for (int i = 0; i < e->nunits; i++) {
    const zs_unit *u = e->units[i];
    zs_ckpt_unit *cu = &m->units[i];
    snprintf(cu->name, sizeof cu->name, "%s", u->name);
    cu->numel = u->lay.numel_total;
    cu->steps = u->opt_steps != e->opt_steps ? u->opt_steps : -1; /* zs_unit_no_grad's */
    if (!(cu->t = calloc((size_t)u->ntensors, sizeof *cu->t)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
    cu->ntensors = u->ntensors;
    for (int k = 0; k < u->ntensors; k++) {
      snprintf(cu->t[k].name, sizeof cu->t[k].name, "%s", u->t[k].name);
      cu->t[k].ndim = u->t[k].ndim;
      const zs_tensor_desc whole = zs_engine_tp_whole(u, k); /* and how it was cut: */
      memcpy(cu->t[k].shape, whole.shape, sizeof cu->t[k].shape);
      if (e->tp_size > 1) cu->t[k].tp = u->tp[k];
      cu->t[k].no_weight_decay = u->t[k].no_weight_decay != 0;
      cu->t[k].group = u->group[k];
    }
  }
  m->nfiles = e->all_size;
  for (int r = 0; r < e->all_size; r++) {
    zs_ckpt_file *f = &m->files[r];
    snprintf(f->name, sizeof f->name, "rank-%05d.zsd", r);
    if (!(f->segs = calloc((size_t)e->nunits, sizeof *f->segs)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
    zs_ckpt_rank_segments(e, r, f->segs, &f->nsegs);
  }
  if (words) zs_ckpt_manifest_files(m, words);
  return ZS_OK;
}

void zs_ckpt_manifest_files(zs_ckpt_manifest *m, const uint64_t *words) {
  for (int r = 0; r < m->nfiles; r++) {
    zs_ckpt_file *f = &m->files[r];
    const uint64_t *w = words + (size_t)r * W_NWORDS;
    f->bytes = w[W_BYTES];
    f->data_bytes = w[W_DATA];
    f->nblocks = zs_ckpt_nblocks(f->data_bytes, m->block_bytes);
    f->header_xxh64 = w[W_HEADER_HASH];
  }
}

/* Deletes committed checkpoints older than the newest `keep`, except those numbered a multiple of
   every (> 0) (best effort: a failure here leaves an extra checkpoint, never a broken one). */
static void prune(const char *dir, int keep, int every) {
  uint64_t *seqs;
  int *com, n;
  if (keep <= 0 || zs_io_scan(dir, &seqs, &com, &n) != ZS_OK) return;
  int kept = 0;
  char p[4096];
  for (int i = n - 1; i >= 0; i--) {
    if (com[i] && ++kept <= keep) continue;
    if (com[i] && every > 0 && seqs[i] % (uint64_t)every == 0) continue;
    if (!com[i] && i == n - 1) continue; /* (never the case right after a commit) */
    zs_io_ckpt_path(p, sizeof p, dir, seqs[i]);
    zs_io_rmdir_files(p);
  }
  free(seqs);
  free(com);
}

zs_status zs_ckpt_commit_manifest(const zs_ckpt_manifest *m, const char *dir, int keep, int every) {
  char *text = NULL, ck[4096], tmp[4200], fin[4200];
  ZS_CHECK(zs_ckpt_manifest_write(m, &text));
  zs_io_ckpt_path(ck, sizeof ck, dir, m->seq);
  snprintf(tmp, sizeof tmp, "%s/%s.tmp", ck, ZS_CKPT_MANIFEST);
  snprintf(fin, sizeof fin, "%s/%s", ck, ZS_CKPT_MANIFEST);
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    free(text);
    return zs_err(ZS_ERR_IO, "zs_engine_save: creating %s: %s", tmp, strerror(errno));
  }
  zs_status rc = zs_io_write(fd, text, strlen(text), tmp, 0, 0);
  if (rc == ZS_OK) rc = zs_io_fsync(fd, tmp);
  if (close(fd) != 0 && rc == ZS_OK)
    rc = zs_err(ZS_ERR_IO, "zs_engine_save: closing %s: %s", tmp, strerror(errno));
  free(text);
  if (rc == ZS_OK && rename(tmp, fin) != 0)
    rc = zs_err(ZS_ERR_IO, "zs_engine_save: renaming %s: %s", tmp, strerror(errno));
  if (rc != ZS_OK) {
    unlink(tmp);
    return rc;
  }
  ZS_CHECK(zs_io_fsync_dir(ck)); /* the commit point is durable */
  prune(dir, keep, every);
  return ZS_OK;
}

/* Rank 0: the manifest (temporary name, fsync, rename = commit, fsync of the directory). */
static zs_status commit(zs_engine *e, const char *dir, uint64_t seq, uint64_t block,
                        const uint64_t *words) {
  zs_ckpt_manifest m;
  zs_status rc = zs_ckpt_build_manifest(e, seq, block, words, &m);
  if (rc == ZS_OK) rc = zs_ckpt_commit_manifest(&m, dir, e->cfg.ckpt_keep, e->cfg.ckpt_keep_every);
  zs_ckpt_manifest_free(&m);
  return rc;
}

enum { P_SEQ, P_PATH, P_BLOCK, P_NWORDS };

zs_status zs_ckpt_save_prepare(zs_engine *e, zs_status mine_rc, const char *dir, uint64_t *seq,
                               uint64_t *block, char *ck, size_t cap) {
  enum { W = P_NWORDS + 1 };
  zs_status rc = mine_rc;
  if (rc == ZS_OK && (!dir || !*dir || strlen(dir) > 3000))
    rc = zs_err(ZS_ERR_INVALID_ARG, "zs_engine_save: the directory path is NULL, empty or too "
                                    "long");
  int prepared = 0;
  if (rc == ZS_OK && e->all_rank == 0) {
    rc = prepare(dir, (uint64_t)e->steps_done, seq);
    prepared = rc == ZS_OK;
  }
  const uint64_t mine[P_NWORDS] = {*seq, rc == ZS_OK ? XXH64(dir, strlen(dir), 0) : 0,
                                   zs_ckpt_block_bytes()};
  uint64_t *all = calloc((size_t)e->all_size * W, sizeof *all);
  if (!all) return zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of memory"));
  rc = zs_ckpt_agree_words(e, rc, mine, P_NWORDS, all, "zs_engine_save");
  int other_path = -1;
  for (int r = 0; r < e->all_size && rc == ZS_OK && other_path < 0; r++)
    if (all[(size_t)r * W + 1 + P_PATH] != all[1 + P_PATH]) other_path = r;
  if (other_path >= 0)
    rc = zs_err(ZS_ERR_INVALID_ARG,
                "zs_engine_save: rank %d names another directory than rank 0: every rank must "
                "pass the same path",
                other_path);
  *seq = all[1 + P_SEQ];
  *block = all[1 + P_BLOCK];
  free(all);
  if (rc == ZS_OK || prepared) zs_io_ckpt_path(ck, cap, dir, *seq);
  if (rc != ZS_OK && prepared) zs_io_rmdir_files(ck); /* nothing of this save stays */
  return rc;
}

zs_status zs_ckpt_launcher_check(const zs_engine *e, zs_status mine) {
  if (mine != ZS_OK || !zs_comm_launcher_gone(e->comm)) return mine;
  return zs_err(ZS_ERR_COMM,
                "zs_engine_save: the launcher that started this rank (pid %d) has died, so the "
                "job is over: the checkpoint is not committed",
                e->comm->launcher_pid);
}

zs_status zs_ckpt_agree_written(zs_engine *e, zs_status mine, int tier_failed, int *tier_rank) {
  mine = zs_ckpt_launcher_check(e, mine);
  uint64_t *all = calloc((size_t)e->all_size * 2, sizeof *all);
  if (!all) return zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of memory"));
  const uint64_t word = (uint64_t)tier_failed;
  const zs_status rc =
      zs_ckpt_agree_words(e, mine, &word, 1, all, "zs_engine_save: writing the rank files");
  for (int r = 0; r < e->all_size && rc != ZS_OK && *tier_rank < 0; r++)
    if (all[2 * (size_t)r + 1]) *tier_rank = r;
  free(all);
  return rc;
}

void zs_ckpt_save_settle(zs_engine *e) {
  if (!e->save_job) return;
  if (e->state != ZS_ENGINE_READY) {
    zs_ckpt_save_drop(e);
    return;
  }
  const zs_status rc = zs_ckpt_save_finish(e, 1, NULL);
  if (rc != ZS_OK && e->state != ZS_ENGINE_FAILED) {
    e->save_rc = rc;
    snprintf(e->save_msg, sizeof e->save_msg, "%s", zs_last_error());
  }
}

/* The outcome of the asynchronous save a later call ended (kept in e->save_rc), or of the one
   still staged, which this waits for (collective); cleared once returned. */
static zs_status pending_outcome(zs_engine *e) {
  zs_status rc = zs_ckpt_save_finish(e, 1, NULL);
  if (rc == ZS_OK && e->save_rc != ZS_OK) rc = zs_err(e->save_rc, "%s", e->save_msg);
  e->save_rc = ZS_OK;
  e->save_msg[0] = '\0';
  return rc;
}

zs_status zs_engine_save_wait(zs_engine *e) {
  ZS_CHECK(zs_ckpt_check_state(e, "zs_engine_save_wait"));
  zs_engine_call(e, ZS_CALL_SAVE_WAIT, NULL);
  return pending_outcome(e);
}

int zs_engine_save_pending(const zs_engine *e) {
  return e && e->save_job != NULL;
}

zs_status zs_engine_save(zs_engine *e, const char *dir) {
  ZS_CHECK(zs_ckpt_check_state(e, "zs_engine_save"));
  zs_engine_call(e, ZS_CALL_SAVE, NULL);
  /* One save at a time: an asynchronous one still staged ends first, and its failure is
     returned here instead of starting this one (the program calls again to save). */
  ZS_CHECK(pending_outcome(e));
  if (e->cfg.ckpt_async) return zs_ckpt_save_async(e, dir);
  uint64_t seq = 0, block = 0, mine[W_NWORDS] = {0};
  char ck[4096];
  ZS_CHECK(zs_ckpt_save_prepare(e, ZS_OK, dir, &seq, &block, ck, sizeof ck));
  uint64_t *all = calloc((size_t)e->all_size * W_NWORDS, sizeof *all);
  if (!all) return zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of memory"));
  /* 2. Every rank writes its file; the verdict carries whether the NVMe tier failed. */
  int tier_failed = 0, tier_rank = -1;
  zs_status rc = write_rank_file(e, ck, block, mine, &tier_failed);
  rc = zs_ckpt_agree_written(e, rc, tier_failed, &tier_rank);
  if (rc == ZS_OK) {
    mine[W_STATUS] = ZS_OK;
    const zs_status crc =
        zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, mine, W_NWORDS, all);
    if (crc != ZS_OK) {
      free(all);
      return zs_engine_fail(e, zs_err_wrap(crc, "zs_engine_save"));
    }
    /* 3. Rank 0 commits. */
    rc = zs_ckpt_agree(e, e->all_rank == 0 ? commit(e, dir, seq, block, all) : ZS_OK,
                       "zs_engine_save: committing the manifest");
  }
  if (rc != ZS_OK && e->state != ZS_ENGINE_FAILED && e->all_rank == 0)
    zs_io_rmdir_files(ck); /* not committed: nothing of it stays */
  free(all);
  if (tier_rank >= 0 && e->state != ZS_ENGINE_FAILED)
    /* The tier's state could not be read: the engine cannot go on trusting it. Every rank fails
       (they all know tier_rank); the last checkpoint was never touched. */
    return zs_engine_fail_hard(
        e, zs_err_wrap(rc,
                       "zs_engine_save: the NVMe tier's I/O failed on rank %d, so the engine has "
                       "failed (destroy it; the last checkpoint is untouched)",
                       tier_rank));
  return rc;
}
