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
#include "base/error.h"
#include "engine/ckpt.h"
#include "engine/nvme_tier.h"
#include "ckpt/ckpt_io.h"
#include "shard/master_rem.h"

enum { W_STATUS, W_BYTES, W_DATA, W_HEADER_HASH, W_NWORDS };

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

/* Streams this rank's data: each byte goes to the file and into its block's running checksum
   (hashed once: the header's checksum covers the block table, so it covers the whole file);
   state in host memory is written straight from where it lives,
   device state through one staging buffer, state on the NVMe tier through one piece buffer. */
typedef struct {
  zs_engine *e;
  int fd, rank;
  const char *path;
  unsigned char *stage; /* block bytes, for device state or the remainder master's joins */
  float *piece;         /* ZS_CKPT_NVME_PIECE elements: the NVMe tier's state on its way out */
  int tier_failed;      /* a read of the NVMe tier failed (not this checkpoint's file) */
  uint64_t block, in_block, nblk, nblk_total;
  uint64_t *table;
  XXH64_state_t *blk;
} writer;

static zs_status emit(writer *w, const void *p, uint64_t n) {
  const unsigned char *c = p;
  while (n > 0) {
    uint64_t take = w->block - w->in_block;
    if (take > n) take = n;
    XXH64_update(w->blk, c, (size_t)take);
    ZS_CHECK(zs_io_write(w->fd, c, (size_t)take, w->path, 1, w->rank));
    w->in_block += take;
    c += take;
    n -= take;
    if (w->in_block == w->block) {
      /* Start the block's writeback now, so the disk works while the next blocks are hashed
         and the final fsync has little left to do. */
      const uint64_t end = ZS_CKPT_HEADER_BYTES + 8 * w->nblk_total + (w->nblk + 1) * w->block;
      sync_file_range(w->fd, (off_t)(end - w->block), (off_t)w->block, SYNC_FILE_RANGE_WRITE);
      w->table[w->nblk++] = XXH64_digest(w->blk);
      XXH64_reset(w->blk, 0);
      w->in_block = 0;
    }
  }
  return ZS_OK;
}

static zs_status put_state(writer *w, const zs_unit *u, const float *src, uint64_t n) {
  if (zs_unit_on_host(u, ZS_ST_MASTER) || w->e->dev.kind == ZS_DEVICE_CPU)
    return emit(w, src, 4 * n);
  while (n > 0) {
    uint64_t take = w->block / 4;
    if (take > n) take = n;
    ZS_CHECK(zs_ckpt_state_to_host(w->e, u, (float *)w->stage, src, (size_t)take));
    ZS_CHECK(emit(w, w->stage, 4 * take));
    src += take;
    n -= take;
  }
  return ZS_OK;
}

/* The remainder master over elements [lo, lo + n) of u's optimizer range, joined to fp32 (the
   canonical format, exactly the master) through the staging block. */
static zs_status put_rem_master(writer *w, zs_unit *u, uint64_t lo, uint64_t n) {
  const uint64_t chunk = w->block / 4 > 0 ? w->block / 4 : 1;
  for (uint64_t i = 0; i < n; i += chunk) {
    const uint64_t take = n - i < chunk ? n - i : chunk;
    const zs_status rc = zs_rem_master_get(u, (float *)w->stage, u->opt_off + lo + i, (size_t)take);
    if (rc != ZS_OK && u->nv[ZS_NVME_MASTER]) { /* the remainders' file on the NVMe tier */
      w->tier_failed = rc == ZS_ERR_IO;
      return zs_err_wrap(rc, "zs_engine_save: reading unit '%s' remainders from the NVMe tier",
                         u->name);
    }
    ZS_CHECK(rc);
    ZS_CHECK(emit(w, w->stage, 4 * take));
  }
  return ZS_OK;
}

/* One moment (ZS_ST_ADAM_M or ZS_ST_ADAM_V) over elements [lo, lo + n) of u's optimizer range,
   written in fp32 (the canonical format): bf16 moments are widened, exactly. */
static zs_status put_moment(writer *w, const zs_unit *u, zs_state s, uint64_t lo, uint64_t n) {
  const zs_dtype md = u->st.s[s].dtype;
  const void *src = zs_ptr_add(*zs_unit_slot((zs_unit *)u, s), (size_t)lo, md);
  if (md == ZS_F32) return put_state(w, u, src, n);
  const uint64_t chunk = w->block / 4 > 0 ? w->block / 4 : 1;
  float *f = malloc((size_t)chunk * 4);
  uint16_t *h = malloc((size_t)chunk * 2);
  zs_status rc =
      f && h ? ZS_OK : zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory");
  const uint16_t *from = src;
  while (rc == ZS_OK && n > 0) {
    const uint64_t take = n < chunk ? n : chunk;
    const uint16_t *b = from;
    if (!zs_unit_on_host(u, s) && w->e->dev.kind != ZS_DEVICE_CPU) {
      rc = zs_dev_to_host(&w->e->dev, h, from, (size_t)take * 2);
      b = h;
    }
    for (uint64_t i = 0; i < take && rc == ZS_OK; i++)
      f[i] = zs_bf16_to_f32(b[i]);
    if (rc == ZS_OK) rc = emit(w, f, 4 * take);
    from += take;
    n -= take;
  }
  free(f);
  free(h);
  return rc;
}

/* Array `which` (ZS_NVME_*: the fp32 master, or m or v in their dtype) of a unit on the NVMe
   tier over elements [lo, lo + n) of its optimizer range: read from its file through the tier's
   staging into w->piece, one piece at a time, and written out in fp32 (bf16 moments widened,
   exactly); the unit's state is never in memory as a whole. A failed read sets w->tier_failed
   (the error names the tier's file and offset). */
static zs_status put_tier(writer *w, const zs_unit *u, int which, uint64_t lo, uint64_t n) {
  const int narrow = zs_unit_nvme_elem(u, which) == 2;
  /* bf16 read into the upper half of the piece, widened forward into it: element i's fp32
     bytes [4i, 4i + 4) only cover bf16 elements already widened (2P + 2j < 4i + 4 => j < i). */
  uint16_t *h = (uint16_t *)w->piece + ZS_CKPT_NVME_PIECE;
  for (uint64_t i = 0; i < n; i += ZS_CKPT_NVME_PIECE) {
    const uint64_t take = n - i < ZS_CKPT_NVME_PIECE ? n - i : ZS_CKPT_NVME_PIECE;
    const zs_status rc = zs_engine_nvme_read(w->e, u, which, (size_t)(lo + i), (size_t)take,
                                             narrow ? (void *)h : (void *)w->piece);
    if (rc != ZS_OK) {
      w->tier_failed = 1;
      return zs_err_wrap(rc, "zs_engine_save: reading unit '%s' %s from the NVMe tier", u->name,
                         zs_ckpt_nvme_array_name(which));
    }
    for (uint64_t k = 0; narrow && k < take; k++)
      w->piece[k] = zs_bf16_to_f32(h[k]);
    ZS_CHECK(emit(w, w->piece, 4 * take));
  }
  return ZS_OK;
}

/* The master values of a unit whose master is its params (zs_unit_master_in_params) over its
   segment [a, a + n): the params widened to fp32 (exact), then, for a frozen unit, zeros as m and
   v (a unit that never trained), through a staging block of its own. A lean unit's m and v follow
   from the caller (put_moment). */
static zs_status put_params_master(writer *w, zs_unit *u, uint64_t a, uint64_t n) {
  const uint64_t cap = w->block / 4 ? w->block / 4 : 1;
  float *buf = malloc((size_t)cap * 4);
  if (!buf) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory");
  zs_status rc = ZS_OK;
  for (uint64_t i = 0; i < n && rc == ZS_OK; i += cap) {
    const uint64_t take = n - i < cap ? n - i : cap;
    rc = zs_ckpt_params_to_host(w->e, u, buf, a + i, (size_t)take);
    if (rc == ZS_OK) rc = emit(w, buf, 4 * take);
  }
  memset(buf, 0, (size_t)cap * 4);
  for (int moment = 0; moment < 2 && u->frozen; moment++)
    for (uint64_t i = 0; i < n && rc == ZS_OK; i += cap)
      rc = emit(w, buf, 4 * (n - i < cap ? n - i : cap));
  free(buf);
  return rc;
}

/* The data of this rank's file: its segments' master, m and v, block by block. */
static zs_status write_data(writer *w, const zs_ckpt_seg *segs, int ns) {
  for (int k = 0; k < ns; k++) {
    zs_unit *u = w->e->units[segs[k].unit];
    if (u->frozen) {
      ZS_CHECK(put_params_master(w, u, segs[k].begin, segs[k].end - segs[k].begin));
      continue;
    }
    const uint64_t lo = segs[k].begin - u->opt_off, n = segs[k].end - segs[k].begin;
    if (zs_unit_on_nvme(u)) { /* on the NVMe tier: m and v there, the master where it is */
      if (zs_unit_lean(u))
        ZS_CHECK(put_params_master(w, u, segs[k].begin, n));
      else if (zs_unit_has_rem(u)) /* the remainders' file joined with the params */
        ZS_CHECK(put_rem_master(w, u, lo, n));
      else if (u->nv[ZS_NVME_MASTER])
        ZS_CHECK(put_tier(w, u, ZS_NVME_MASTER, lo, n));
      else /* ZS_MASTER_PARAMS with host params: u->master is their alias */
        ZS_CHECK(put_state(w, u, u->master + lo, n));
      ZS_CHECK(put_tier(w, u, ZS_NVME_M, lo, n));
      ZS_CHECK(put_tier(w, u, ZS_NVME_V, lo, n));
      continue;
    }
    if (zs_unit_lean(u))
      ZS_CHECK(put_params_master(w, u, segs[k].begin, n));
    else if (zs_unit_has_rem(u))
      ZS_CHECK(put_rem_master(w, u, lo, n));
    else
      ZS_CHECK(put_state(w, u, u->master + lo, n));
    ZS_CHECK(put_moment(w, u, ZS_ST_ADAM_M, lo, n));
    ZS_CHECK(put_moment(w, u, ZS_ST_ADAM_V, lo, n));
  }
  if (w->in_block > 0) w->table[w->nblk++] = XXH64_digest(w->blk); /* the last, shorter block */
  return ZS_OK;
}

/* Writes this rank's file into ckdir; out[W_*] describes it for the manifest. *tier_failed: the
   failure was a read of the NVMe tier's files (the engine's own state), not the checkpoint's. */
static zs_status write_rank_file(zs_engine *e, const char *ckdir, uint64_t block,
                                 uint64_t out[W_NWORDS], int *tier_failed) {
  const int r = e->world_rank;
  int ns;
  zs_ckpt_seg *segs = calloc((size_t)e->nunits, sizeof *segs);
  writer w = {e, -1, r, NULL, NULL, NULL, 0, block, 0, 0, 0, NULL, XXH64_createState()};
  char final[4200], tmp[4300];
  snprintf(final, sizeof final, "%s/rank-%05d.zsd", ckdir, r);
  snprintf(tmp, sizeof tmp, "%s.tmp", final);
  w.path = tmp;
  zs_status rc = ZS_OK;
  if (!segs || !w.blk) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory");
    goto out;
  }
  const uint64_t data = zs_ckpt_rank_segments(e, r, segs, &ns);
  const uint64_t nb = zs_ckpt_nblocks(data, w.block);
  w.nblk_total = nb;
  w.table = calloc((size_t)nb + 1, 8);
  /* Device state, or a remainder master to join, goes through the staging block. */
  const int staged = e->dev.kind != ZS_DEVICE_CPU || e->cfg.master == ZS_MASTER_REMAINDER;
  w.stage = staged ? malloc((size_t)w.block) : NULL;
  w.piece = e->nvme ? malloc(ZS_CKPT_NVME_PIECE * 4) : NULL;
  unsigned char head[ZS_CKPT_HEADER_BYTES];
  if (!w.table || (staged && !w.stage) || (e->nvme && !w.piece)) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY,
                "zs_engine_save: out of host memory for a %" PRIu64 "-byte staging block", w.block);
    goto out;
  }
  XXH64_reset(w.blk, 0);
  w.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd < 0) {
    rc = zs_err(ZS_ERR_IO, "zs_engine_save: creating %s: %s", tmp, strerror(errno));
    goto out;
  }
  const uint64_t data_off = ZS_CKPT_HEADER_BYTES + 8 * nb;
  if (lseek(w.fd, (off_t)data_off, SEEK_SET) < 0) {
    rc = zs_err(ZS_ERR_IO, "zs_engine_save: seeking in %s: %s", tmp, strerror(errno));
    goto out;
  }
  ZS_CHECK_GOTO(write_data(&w, segs, ns), rc, out);
  const uint64_t hh = zs_ckpt_header_encode(head, (uint32_t)r, data, w.block, w.table, nb);
  ZS_CHECK_GOTO(zs_io_pwrite(w.fd, head, sizeof head, 0, tmp), rc, out);
  ZS_CHECK_GOTO(zs_io_pwrite(w.fd, w.table, (size_t)(8 * nb), ZS_CKPT_HEADER_BYTES, tmp), rc, out);
  ZS_CHECK_GOTO(zs_io_fsync(w.fd, tmp), rc, out);
  if (close(w.fd) != 0) {
    w.fd = -1;
    rc = zs_err(ZS_ERR_IO, "zs_engine_save: closing %s: %s", tmp, strerror(errno));
    goto out;
  }
  w.fd = -1;
  if (rename(tmp, final) != 0) {
    rc = zs_err(ZS_ERR_IO, "zs_engine_save: renaming %s: %s", tmp, strerror(errno));
    goto out;
  }
  ZS_CHECK_GOTO(zs_io_fsync_dir(ckdir), rc, out);
  out[W_BYTES] = data_off + data;
  out[W_DATA] = data;
  out[W_HEADER_HASH] = hh;
out:
  if (w.fd >= 0) close(w.fd);
  if (rc != ZS_OK) unlink(tmp); /* no temporary file stays behind */
  XXH64_freeState(w.blk);
  free(w.table);
  free(w.stage);
  free(w.piece);
  free(segs);
  *tier_failed = w.tier_failed;
  return rc;
}

/* Describes the engine and every rank's file (words: all ranks' W_* rows). */
static zs_status build_manifest(zs_engine *e, uint64_t seq, uint64_t block, const uint64_t *words,
                                zs_ckpt_manifest *m) {
  memset(m, 0, sizeof *m);
  m->format_version = ZS_CKPT_FORMAT_VERSION;
  snprintf(m->zshard_version, sizeof m->zshard_version, "%s", zs_version());
  m->seq = seq;
  m->step = e->opt_steps;
  m->steps_done = e->steps_done;
  m->world_size = e->world_size;
  m->shard_group_size = e->shard_size;
  m->stage = e->cfg.stage;
  m->shard_params = e->plan.shard_params;
  m->shard_grads = e->plan.shard_grads;
  m->shard_optimizer = e->plan.shard_optimizer;
  m->offload = e->cfg.offload;
  m->param_dtype = e->cfg.param_dtype;
  m->reduce_dtype = e->cfg.reduce_dtype;
  m->deterministic = e->cfg.deterministic;
  m->lr = e->cfg.adamw.lr;
  m->beta1 = e->cfg.adamw.beta1;
  m->beta2 = e->cfg.adamw.beta2;
  m->eps = e->cfg.adamw.eps;
  m->weight_decay = e->cfg.adamw.weight_decay;
  m->max_grad_norm = e->cfg.adamw.max_grad_norm;
  m->block_bytes = block;
  m->units = calloc((size_t)e->nunits, sizeof *m->units);
  m->files = calloc((size_t)e->world_size, sizeof *m->files);
  if (!m->units || !m->files) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
  m->nunits = e->nunits;
  for (int i = 0; i < e->nunits; i++) {
    const zs_unit *u = e->units[i];
    zs_ckpt_unit *cu = &m->units[i];
    snprintf(cu->name, sizeof cu->name, "%s", u->name);
    cu->numel = u->lay.numel_total;
    if (!(cu->t = calloc((size_t)u->ntensors, sizeof *cu->t)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
    cu->ntensors = u->ntensors;
    for (int k = 0; k < u->ntensors; k++) {
      snprintf(cu->t[k].name, sizeof cu->t[k].name, "%s", u->t[k].name);
      cu->t[k].ndim = u->t[k].ndim;
      memcpy(cu->t[k].shape, u->t[k].shape, sizeof cu->t[k].shape);
      cu->t[k].no_weight_decay = u->t[k].no_weight_decay != 0;
    }
  }
  m->nfiles = e->world_size;
  for (int r = 0; r < e->world_size; r++) {
    zs_ckpt_file *f = &m->files[r];
    const uint64_t *w = words + (size_t)r * W_NWORDS;
    snprintf(f->name, sizeof f->name, "rank-%05d.zsd", r);
    f->bytes = w[W_BYTES];
    f->data_bytes = w[W_DATA];
    f->nblocks = zs_ckpt_nblocks(f->data_bytes, m->block_bytes);
    f->header_xxh64 = w[W_HEADER_HASH];
    if (!(f->segs = calloc((size_t)e->nunits, sizeof *f->segs)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
    zs_ckpt_rank_segments(e, r, f->segs, &f->nsegs);
  }
  return ZS_OK;
}

/* Deletes committed checkpoints older than the newest `keep` (best effort: a failure here
   leaves an extra checkpoint, never a broken one). */
static void prune(const char *dir, int keep) {
  uint64_t *seqs;
  int *com, n;
  if (keep <= 0 || zs_io_scan(dir, &seqs, &com, &n) != ZS_OK) return;
  int kept = 0;
  char p[4096];
  for (int i = n - 1; i >= 0; i--) {
    if (com[i] && ++kept <= keep) continue;
    if (!com[i] && i == n - 1) continue; /* (never the case right after a commit) */
    zs_io_ckpt_path(p, sizeof p, dir, seqs[i]);
    zs_io_rmdir_files(p);
  }
  free(seqs);
  free(com);
}

/* Rank 0: the manifest (temporary name, fsync, rename = commit, fsync of the directory). */
static zs_status commit(zs_engine *e, const char *dir, uint64_t seq, uint64_t block,
                        const uint64_t *words) {
  zs_ckpt_manifest m;
  char *text = NULL, ck[4096], tmp[4200], fin[4200];
  zs_status rc = build_manifest(e, seq, block, words, &m);
  if (rc == ZS_OK) rc = zs_ckpt_manifest_write(&m, &text);
  zs_ckpt_manifest_free(&m);
  if (rc != ZS_OK) return rc;
  zs_io_ckpt_path(ck, sizeof ck, dir, seq);
  snprintf(tmp, sizeof tmp, "%s/%s.tmp", ck, ZS_CKPT_MANIFEST);
  snprintf(fin, sizeof fin, "%s/%s", ck, ZS_CKPT_MANIFEST);
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    free(text);
    return zs_err(ZS_ERR_IO, "zs_engine_save: creating %s: %s", tmp, strerror(errno));
  }
  rc = zs_io_write(fd, text, strlen(text), tmp, 0, 0);
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
  prune(dir, e->cfg.ckpt_keep);
  return ZS_OK;
}

enum { P_SEQ, P_PATH, P_BLOCK, P_NWORDS };

/* Phase 1, collective: rank 0 prepares the directory; every rank's verdict on its path goes into
   one all-gather, so all refuse together (a bad path on one rank, different paths, a directory
   rank 0 cannot create). On success *seq and *block are rank 0's. */
static zs_status phase_prepare(zs_engine *e, const char *dir, uint64_t *seq, uint64_t *block,
                               char *ck, size_t cap) {
  enum { W = P_NWORDS + 1 };
  zs_status rc = ZS_OK;
  if (!dir || !*dir || strlen(dir) > 3000)
    rc = zs_err(ZS_ERR_INVALID_ARG, "zs_engine_save: the directory path is NULL, empty or too "
                                    "long");
  int prepared = 0;
  if (rc == ZS_OK && e->world_rank == 0) {
    rc = prepare(dir, (uint64_t)e->steps_done, seq);
    prepared = rc == ZS_OK;
  }
  const uint64_t mine[P_NWORDS] = {*seq, rc == ZS_OK ? XXH64(dir, strlen(dir), 0) : 0,
                                   zs_ckpt_block_bytes()};
  uint64_t *all = calloc((size_t)e->world_size * W, sizeof *all);
  if (!all) return zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of memory"));
  rc = zs_ckpt_agree_words(e, rc, mine, P_NWORDS, all, "zs_engine_save");
  int other_path = -1;
  for (int r = 0; r < e->world_size && rc == ZS_OK && other_path < 0; r++)
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

/* The verdict on the rank files (collective over the world), with each rank's tier_failed:
 *tier_rank gets the first rank whose NVMe tier failed, or -1. */
static zs_status agree_written(zs_engine *e, zs_status mine, int tier_failed, int *tier_rank) {
  uint64_t *all = calloc((size_t)e->world_size * 2, sizeof *all);
  if (!all) return zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of memory"));
  const uint64_t word = (uint64_t)tier_failed;
  const zs_status rc =
      zs_ckpt_agree_words(e, mine, &word, 1, all, "zs_engine_save: writing the rank files");
  for (int r = 0; r < e->world_size && rc != ZS_OK && *tier_rank < 0; r++)
    if (all[2 * (size_t)r + 1]) *tier_rank = r;
  free(all);
  return rc;
}

zs_status zs_engine_save(zs_engine *e, const char *dir) {
  ZS_CHECK(zs_ckpt_check_state(e, "zs_engine_save"));
  zs_engine_call(e, ZS_CALL_SAVE, NULL);
  uint64_t seq = 0, block = 0, mine[W_NWORDS] = {0};
  char ck[4096];
  ZS_CHECK(phase_prepare(e, dir, &seq, &block, ck, sizeof ck));
  uint64_t *all = calloc((size_t)e->world_size * W_NWORDS, sizeof *all);
  if (!all) return zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of memory"));
  /* 2. Every rank writes its file; the verdict carries whether the NVMe tier failed. */
  int tier_failed = 0, tier_rank = -1;
  zs_status rc = write_rank_file(e, ck, block, mine, &tier_failed);
  rc = agree_written(e, rc, tier_failed, &tier_rank);
  if (rc == ZS_OK) {
    mine[W_STATUS] = ZS_OK;
    const zs_status crc = zs_engine_allgather_u64(e, mine, W_NWORDS, all);
    if (crc != ZS_OK) {
      free(all);
      return zs_engine_fail(e, zs_err_wrap(crc, "zs_engine_save"));
    }
    /* 3. Rank 0 commits. */
    rc = zs_ckpt_agree(e, e->world_rank == 0 ? commit(e, dir, seq, block, all) : ZS_OK,
                       "zs_engine_save: committing the manifest");
  }
  if (rc != ZS_OK && e->state != ZS_ENGINE_FAILED && e->world_rank == 0)
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
