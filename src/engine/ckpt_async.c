/* The asynchronous save (ckpt_save.h): zs_engine_save with ckpt_async stages each rank's share in
 * host memory (the canonical stream its file holds, read in the foreground, so later steps cannot
 * change it) and hands it to a thread that writes, hashes, fsyncs and renames the rank file; rank
 * 0 builds the manifest from the engine's state at the same moment. A later collective call
 * commits it exactly as the synchronous save does, once every rank's writer is done: the next
 * zs_engine_begin_step that finds them all done, zs_engine_save_wait, the next save or load,
 * destroy. Until then the previous checkpoint is the latest, as it is after any crash. */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/huge_pages.h"
#include "ckpt/ckpt_io.h"
#include "engine/ckpt_save.h"
#include "engine/fail.h"
#include "mem/ledger.h"
#include "tier/master_io.h"

struct zs_ckpt_job {
  zs_ckpt_writer w;   /* open, the data before the staging already written */
  float *staging;     /* the engine's (e->save_staging) */
  uint64_t *rows;     /* the exchanges' rows (all_size x W_NWORDS), made before any of them */
  size_t staged, cap; /* floats staged for the thread, and room */
  char dir[4096], ck[4096];
  zs_ckpt_manifest m; /* rank 0's, without the files' words */
  int have_m;
  pthread_t th;
  int started;
  atomic_int done;
  zs_status rc; /* the writer's outcome, its message in msg */
  char msg[1024];
  uint64_t words[W_NWORDS];
};

/* The write: the staged data, then the file's end. Touches no engine state. */
static void *write_job(void *arg) {
  struct zs_ckpt_job *j = arg;
  j->w.t0 = zs_clock_now_s(); /* the pace (w.rate) counts from here */
  zs_status rc = zs_ckpt_emit(&j->w, j->staging, 4 * (uint64_t)j->staged);
  if (rc == ZS_OK) rc = zs_ckpt_writer_finish(&j->w, j->words);
  if (rc != ZS_OK) snprintf(j->msg, sizeof j->msg, "%s", zs_last_error());
  zs_ckpt_writer_close(&j->w, rc);
  j->rc = rc;
  atomic_store(&j->done, 1);
  return NULL;
}

/* The writer thread: the write at the lowest CPU priority for this thread alone (Linux: a
   thread's nice value is its own), so that where the training loop keeps the cores busy the
   write yields to it. */
static void *write_thread(void *arg) {
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
  return write_job(arg);
}

static void job_free(struct zs_ckpt_job *j) {
  if (!j) return;
  if (j->have_m) zs_ckpt_manifest_free(&j->m);
  free(j->rows);
  free(j);
}

/* The engine's staging, kept from save to save (a fresh one would cost a page fault per 4 KiB in
   the call, as much as the copy itself), grown to at least floats; booked in host_pinned. */
static zs_status staging(zs_engine *e, size_t floats) {
  if (e->save_staging_floats >= floats) return ZS_OK;
  zs_ckpt_staging_free(e);
  const size_t bytes = floats * sizeof(float);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "zs_engine_save: no host memory for %zu bytes of asynchronous staging: set "
                  "ckpt_staging_bytes lower (the rest is written before the call returns)",
                  bytes);
  zs_advise_huge_pages(p, bytes);
  e->save_staging = p;
  e->save_staging_floats = floats;
  zs_ledger_add(&e->mem.ledger, ZS_MEM_HOST_PINNED, bytes);
  return ZS_OK;
}

void zs_ckpt_staging_free(zs_engine *e) {
  if (!e->save_staging) return;
  const size_t bytes = e->save_staging_floats * sizeof(float);
  munmap(e->save_staging, bytes);
  zs_ledger_sub(&e->mem.ledger, ZS_MEM_HOST_PINNED, bytes);
  e->save_staging = NULL;
  e->save_staging_floats = 0;
}

/* Stages this rank's segments into j: state read straight into the staging, which is written
   out in the foreground whenever it is full and more remains, so at most cap floats are left for
   the thread. */
static zs_status stage(zs_engine *e, struct zs_ckpt_job *j, const zs_ckpt_seg *segs, int ns) {
  for (int k = 0; k < ns; k++)
    for (int a = 0; a < segs[k].narrays; a++) {
      zs_unit *u = e->units[segs[k].unit];
      for (uint64_t x = segs[k].begin; x < segs[k].end;) {
        if (j->staged == j->cap) { /* full, and more to come */
          ZS_CHECK(zs_ckpt_emit(&j->w, j->staging, 4 * (uint64_t)j->staged));
          j->staged = 0;
        }
        size_t take = j->cap - j->staged;
        if (take > ZS_CKPT_NVME_PIECE) take = ZS_CKPT_NVME_PIECE;
        if (take > segs[k].end - x) take = (size_t)(segs[k].end - x);
        ZS_CHECK(zs_ckpt_read_state(e, u, (zs_arr)a, x, take, j->staging + j->staged,
                                    &j->w.tier_failed));
        j->staged += take;
        x += take;
      }
    }
  return ZS_OK;
}

/* This rank's job for checkpoint seq in ck: the writer opened, the data staged, rank 0's manifest
   built. */
static zs_status make_job(zs_engine *e, struct zs_ckpt_job *j, uint64_t seq, uint64_t block) {
  int ns;
  zs_ckpt_seg *segs = calloc((size_t)e->nunits, sizeof *segs);
  if (!segs) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory");
  const uint64_t data = zs_ckpt_rank_segments(e, e->all_rank, segs, &ns);
  const uint64_t floats = data / 4, budget = e->cfg.ckpt_staging_bytes / 4;
  j->cap = (size_t)(budget && budget < floats ? budget : floats);
  if (!j->cap && floats) j->cap = 1; /* a budget under one element's bytes */
  zs_status rc = staging(e, j->cap);
  j->staging = e->save_staging;
  j->rows = calloc((size_t)e->all_size * W_NWORDS, sizeof *j->rows);
  if (rc == ZS_OK && !j->rows) rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of memory");
  if (rc == ZS_OK)
    rc = zs_ckpt_writer_open(&j->w, e, j->ck, e->all_rank, data, block, e->cfg.ckpt_direct);
  if (rc == ZS_OK) rc = stage(e, j, segs, ns);
  free(segs);
  if (rc == ZS_OK && e->all_rank == 0) {
    rc = zs_ckpt_build_manifest(e, seq, block, NULL, &j->m);
    j->have_m = 1; /* freed with the job, built or half-built */
  }
  return rc;
}

zs_status zs_ckpt_save_async(zs_engine *e, const char *dir) {
  uint64_t seq = 0, block = 0;
  char ck[4096];
  struct zs_ckpt_job *j = calloc(1, sizeof *j);
  zs_status rc = j ? ZS_OK : zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_save: out of host memory");
  rc = zs_ckpt_save_prepare(e, rc, dir, &seq, &block, ck, sizeof ck); /* every rank joins */
  if (rc != ZS_OK) {
    free(j);
    return rc;
  }
  j->w.fd = -1;
  snprintf(j->ck, sizeof j->ck, "%s", ck);
  snprintf(j->dir, sizeof j->dir, "%s", dir);
  rc = make_job(e, j, seq, block);
  int tier_rank = -1;
  rc = zs_ckpt_agree_written(e, rc, j->w.tier_failed, &tier_rank);
  if (rc != ZS_OK) {
    zs_ckpt_writer_close(&j->w, rc);
    if (e->state != ZS_ENGINE_FAILED && e->all_rank == 0) zs_io_rmdir_files(j->ck);
    job_free(j);
    if (tier_rank >= 0 && e->state != ZS_ENGINE_FAILED)
      return zs_engine_fail_hard(
          e, zs_err_wrap(rc,
                         "zs_engine_save: the NVMe tier's I/O failed on rank %d, so the engine "
                         "has failed (destroy it; the last checkpoint is untouched)",
                         tier_rank));
    return rc;
  }
  /* Every rank staged: the rest is the thread's (or, without a thread, done here), at the
     configured pace. */
  j->w.rate = (double)e->cfg.ckpt_write_rate;
  j->started = pthread_create(&j->th, NULL, write_thread, j) == 0;
  if (!j->started) write_job(j);
  e->save_job = j;
  return ZS_OK;
}

/* Whether every rank's writer is done (collective: one word each, into the job's rows). */
static zs_status all_done(zs_engine *e, struct zs_ckpt_job *j, int *all) {
  const uint64_t w = (uint64_t)atomic_load(&j->done);
  const zs_status rc =
      zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, &w, 1, j->rows);
  *all = 1;
  for (int r = 0; r < e->all_size && rc == ZS_OK; r++)
    if (!j->rows[r]) *all = 0;
  return rc == ZS_OK ? ZS_OK : zs_engine_fail(e, zs_err_wrap(rc, "zs_engine_save (asynchronous)"));
}

zs_status zs_ckpt_save_finish(zs_engine *e, int wait, int *pending) {
  struct zs_ckpt_job *j = e->save_job;
  if (pending) *pending = 0;
  if (!j) return ZS_OK;
  if (!wait) {
    int done = 0;
    ZS_CHECK(all_done(e, j, &done));
    if (!done) {
      if (pending) *pending = 1;
      return ZS_OK;
    }
  }
  if (j->started) pthread_join(j->th, NULL);
  e->save_job = NULL;
  /* The writers' verdict and their files' words; then rank 0 commits. */
  if (j->rc != ZS_OK) zs_err(j->rc, "%s", j->msg);
  const zs_status written = zs_ckpt_launcher_check(e, j->rc);
  uint64_t *all = j->rows;
  zs_status rc = zs_ckpt_agree_words(e, written, j->words + W_BYTES, W_NWORDS - 1, all,
                                     "zs_engine_save: writing the rank files in the background");
  if (rc == ZS_OK) {
    zs_status mine = ZS_OK;
    if (e->all_rank == 0) {
      zs_ckpt_manifest_files(&j->m, all);
      mine = zs_ckpt_commit_manifest(&j->m, j->dir, e->cfg.ckpt_keep, e->cfg.ckpt_keep_every);
    }
    rc = zs_ckpt_agree(e, mine, "zs_engine_save: committing the manifest");
  }
  if (rc != ZS_OK && e->state != ZS_ENGINE_FAILED && e->all_rank == 0)
    zs_io_rmdir_files(j->ck); /* not committed: nothing of it stays */
  if (rc != ZS_OK)
    zs_err_wrap(rc,
                "the asynchronous save of %s did not commit (the previous checkpoint is the "
                "latest)",
                j->ck);
  job_free(j);
  return rc;
}

void zs_ckpt_save_drop(zs_engine *e) {
  struct zs_ckpt_job *j = e->save_job;
  if (!j) return;
  if (j->started) pthread_join(j->th, NULL);
  e->save_job = NULL;
  job_free(j);
}
