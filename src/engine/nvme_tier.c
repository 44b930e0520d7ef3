/* The NVMe tier's life and its step (nvme_tier.h): open at commit (directory, ring, staging, each
 * unit's files), close at destroy, and the step's streamed update over the units on it with
 * the agreement that makes an I/O error on one rank fail every rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/nvme_tier.h"
#include "base/clock.h"
#include "base/error.h"
#include "engine/agree.h"
#include "offload/nvme_stream.h"
#include "optim/optim.h"
#include "shard/master_rem.h"

/* The stream of one unit's update pass over the files it has (look-ahead 1, 3 staging slots):
   array at[w] of the stream is file nv[w], or at[w] = -1 where the unit has no such file (its
   master is its params). */
static zs_nvme_stream_desc unit_desc(const zs_nvme_tier *t, const zs_unit *u, zs_nvme_mode mode,
                                     int at[ZS_NVME_NARRAYS]) {
  zs_nvme_stream_desc d = {mode, 0, {NULL}, {0}, u->opt_n, t->chunk, 1};
  for (int w = 0; w < ZS_NVME_NARRAYS; w++) {
    at[w] = -1;
    if (!u->nv[w]) continue;
    at[w] = (int)d.narrays;
    d.files[d.narrays] = u->nv[w];
    d.elem_bytes[d.narrays++] = zs_unit_nvme_elem(u, w);
  }
  return d;
}

/* The arrays' element sizes of the mode (zs_placement_nvme_elems), those it has, in at most
   ZS_NVME_NARRAYS entries of el; returns how many. */
static unsigned mode_elems(const zs_config *c, size_t el[ZS_NVME_NARRAYS]) {
  size_t eb[ZS_NVME_NARRAYS];
  unsigned n = 0;
  zs_placement_nvme_elems(c, eb);
  for (int w = 0; w < ZS_NVME_NARRAYS; w++)
    if (eb[w]) el[n++] = eb[w];
  return n;
}

/* Elements per chunk: offload_chunk rounded up to the O_DIRECT quantum of the mode's arrays
   (align / 4 elements with fp32 arrays only, align / 2 with a 2-byte one), at most 2^28 (the
   stream's 1 GiB per array). */
static size_t tier_chunk(const zs_config *c, size_t align) {
  size_t el[ZS_NVME_NARRAYS];
  const unsigned na = mode_elems(c, el);
  const size_t q = zs_nvme_chunk_quantum(align, el, na);
  size_t want =
      c->offload_chunk && c->offload_chunk != ZS_UNSET_SIZE ? c->offload_chunk : (size_t)1 << 22;
  if (want > (size_t)1 << 28) want = (size_t)1 << 28;
  return (want + q - 1) / q * q;
}

/* Whether unit u's table keeps file `which` on the tier: the master (fp32, or the remainders),
   the optimizer's state arrays, each where its state is persistent there. */
static int has_file(const zs_unit *u, int which) {
  if (which == ZS_NVME_MASTER)
    return (zs_state_is(&u->st, ZS_ST_MASTER, ZS_LIFE_PERSISTENT) &&
            u->st.s[ZS_ST_MASTER].tier == ZS_TIER_NVME) ||
           (zs_state_is(&u->st, ZS_ST_MASTER_REM, ZS_LIFE_PERSISTENT) &&
            u->st.s[ZS_ST_MASTER_REM].tier == ZS_TIER_NVME);
  const zs_state st = ZS_ST_OPT(which - ZS_NVME_OPT0);
  return zs_state_is(&u->st, st, ZS_LIFE_PERSISTENT) && u->st.s[st].tier == ZS_TIER_NVME;
}

/* Bytes of file `which` of u before alignment (its elements' size, zs_unit_nvme_elem). */
static uint64_t file_bytes(const zs_unit *u, int which) {
  return (uint64_t)u->opt_n * zs_unit_nvme_elem(u, which);
}

/* Creates the files of unit u ("u<index>.master" (or ".rem" for remainders), then one per state
   array named by its short name, such as ".m" and ".v") that its table keeps on the tier,
   zero-filled. */
static zs_status unit_files(zs_nvme_tier *t, const zs_opt_shape *sh, zs_unit *u) {
  for (int j = 0; j < ZS_NVME_NARRAYS; j++) {
    if (!has_file(u, j)) continue;
    const char *what = j >= ZS_NVME_OPT0 ? sh->state_short[j - ZS_NVME_OPT0]
                       : zs_state_is(&u->st, ZS_ST_MASTER_REM, ZS_LIFE_PERSISTENT) ? "rem"
                                                                                   : "master";
    char name[64];
    snprintf(name, sizeof name, "u%d.%s", u->index, what);
    zs_status rc = zs_nvme_file_create(t->dir, name, file_bytes(u, j), &u->nv[j]);
    if (rc != ZS_OK)
      return zs_err_wrap(rc, "NVMe tier: unit '%s' (%zu optimizer elements)", u->name, u->opt_n);
  }
  return ZS_OK;
}

/* 1 when unit u's table puts optimizer state on the tier (zs_placement_unit_of). */
static int on_tier(const zs_unit *u) {
  for (int j = 0; j < ZS_NVME_NARRAYS; j++)
    if (has_file(u, j)) return 1;
  return 0;
}

zs_status zs_engine_nvme_open(zs_engine *e, const zs_placement *pl) {
  e->nvme = NULL;
  if (!pl->nnvme) return ZS_OK;
  zs_nvme_tier *t = calloc(1, sizeof *t);
  if (!t) return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no host memory for its handle");
  e->nvme = t;
  zs_status rc = zs_nvme_dir_open(e->cfg.nvme_path, e->world_rank, &t->dir);
  if (rc != ZS_OK) goto fail;
  const size_t al = zs_nvme_dir_align(t->dir);
  t->chunk = tier_chunk(&e->cfg, al);
  /* The files' bytes on disk: each array rounded up to the alignment. */
  for (int i = 0; i < e->nunits; i++) {
    const zs_unit *u = e->units[i];
    if (!on_tier(u)) continue;
    t->nunits++;
    for (int j = 0; j < ZS_NVME_NARRAYS; j++)
      if (has_file(u, j)) t->file_bytes += (file_bytes(u, j) + al - 1) / al * al;
  }
  rc = zs_nvme_dir_check_space(t->dir, t->file_bytes);
  if (rc != ZS_OK) goto fail;
  /* The largest pass: every array of the mode (zs_placement_nvme_elems, as the planner sizes the
     staging). */
  zs_nvme_stream_desc d = {ZS_NVME_UPDATE, 0, {NULL}, {0}, 1, t->chunk, 1};
  d.narrays = mode_elems(&e->cfg, d.elem_bytes);
  rc = zs_nvme_ring_create(zs_nvme_stream_ring_entries(&d), &t->ring);
  if (rc != ZS_OK) goto fail;
  /* Pinned on CUDA (cudaHostRegister), so that host_pinned, where the ledger books it, is what
     it is (unpinned only where pinning fails and offload_allow_unpinned allows it, as for the
     arena); unpinned on the CPU device, as the host arena there (zs_nvme_staging_flags_for). */
  const unsigned sf = zs_nvme_staging_flags_for(e->dev.kind);
  rc = zs_nvme_staging_create(zs_nvme_stream_slot_bytes(&d), zs_nvme_stream_slots(1), al, sf,
                              &t->staging);
  if (rc == ZS_ERR_DEVICE && sf && e->cfg.offload_allow_unpinned) /* as the arena does */
    rc = zs_nvme_staging_create(zs_nvme_stream_slot_bytes(&d), zs_nvme_stream_slots(1), al, 0,
                                &t->staging);
  if (rc != ZS_OK) goto fail;
  /* Booked as the planner counts it (zs_placement_nvme_staging: 3 x offload_chunk x the arrays'
     bytes). The slots round the chunk up to the O_DIRECT quantum (1024 elements at 4 KiB with
     fp32 arrays, 2048 with a 2-byte one), so for an offload_chunk that is not a multiple of it
     they hold up to that many elements' bytes more than booked (zshard.h, nvme_path, says so). */
  t->booked = zs_placement_nvme_staging(&e->cfg);
  zs_ledger_add(&e->mem.ledger, ZS_MEM_HOST_PINNED, t->booked);
  /* Initial state: master = the params at commit widened to fp32 (remainders 0), m = v = 0.
     Commit zeroes every state it allocates (params included), so the files' zero fill is that
     state; a later zs_unit_set_param writes the master (or remainder) range through
     zs_engine_nvme_write. */
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++)
    if (on_tier(e->units[i])) rc = unit_files(t, zs_opt_shape_of(&e->cfg), e->units[i]);
  if (rc != ZS_OK) goto fail;
  return ZS_OK;
fail:
  zs_engine_nvme_close(e);
  return rc;
}

void zs_engine_nvme_close(zs_engine *e) {
  zs_nvme_tier *t = e ? e->nvme : NULL;
  if (!t) return;
  zs_nvme_ring_destroy(t->ring); /* drains: no I/O targets the staging after this */
  for (int i = 0; i < e->nunits; i++)
    for (int j = 0; j < ZS_NVME_NARRAYS; j++) {
      zs_nvme_file_close(e->units[i]->nv[j]);
      e->units[i]->nv[j] = NULL;
    }
  zs_nvme_staging_destroy(t->staging);
  if (t->booked) zs_ledger_sub(&e->mem.ledger, ZS_MEM_HOST_PINNED, t->booked);
  zs_nvme_dir_close(t->dir);
  free(t);
  e->nvme = NULL;
  e->facts.nvme_dir = NULL; /* the directory is gone */
}

/* One UPDATE pass over unit u's files: the optimizer on each chunk's spans, in place. *rd and *wr
   get the bytes the pass moved (whatever its outcome). The master is the master file's span (fp32),
   or the params (u->master's alias with ZS_MASTER_PARAMS and host params; none in lean mode,
   whose update rounds the bf16 params in place), or the params with the remainders' span
   (ZS_MASTER_REMAINDER): the segment the in-memory update gets, the spans in place of the
   arrays. */
static zs_status unit_pass(zs_engine *e, zs_unit *u, uint64_t *rd, uint64_t *wr) {
  zs_nvme_tier *t = e->nvme;
  int at[ZS_NVME_NARRAYS];
  const zs_nvme_stream_desc d = unit_desc(t, u, ZS_NVME_UPDATE, at);
  const int rem = zs_unit_has_rem(u);
  zs_nvme_stream *s = NULL;
  *rd = *wr = 0;
  zs_status rc = zs_nvme_stream_open(&d, t->ring, t->staging, &s);
  if (rc != ZS_OK) return zs_err_wrap(rc, "NVMe tier: the step's update of unit '%s'", u->name);
  const int params_host = zs_unit_on_host(u, zs_state_home(&u->st, ZS_ST_PARAM_FULL));
  for (;;) {
    zs_nvme_chunk c;
    rc = zs_nvme_stream_next(s, &c);
    if (rc != ZS_OK || c.count == 0) break;
    const size_t lo = u->opt_off + c.first, hi = lo + c.count;
    for (int k = 0; k < u->ntensors && rc == ZS_OK; k++) {
      size_t a, b;
      if (!zs_layout_overlap(&u->lay, k, lo, hi, &a, &b)) continue;
      const size_t j = a - lo;
      void *m0 = at[ZS_NVME_MASTER] >= 0 ? c.span[at[ZS_NVME_MASTER]] : NULL;
      float *master = m0 && !rem  ? (float *)m0 + j
                      : u->master ? u->master + (a - u->opt_off) /* ZS_MASTER_PARAMS' alias */
                                  : NULL;                        /* lean, remainder: none */
      zs_optim_seg seg = {master,
                          {NULL},
                          zs_unit_home_at(u, ZS_ST_GRAD_FULL, a),
                          zs_unit_home_at(u, ZS_ST_PARAM_FULL, a),
                          b - a,
                          u->t[k].no_weight_decay,
                          1, /* the host tier's update: the bits of host offload */
                          params_host,
                          u->index,
                          a,
                          rem ? (uint16_t *)m0 + j : NULL};
      for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
        if (at[ZS_NVME_OPT0 + i] >= 0)
          seg.state[i] = zs_ptr_add(c.span[at[ZS_NVME_OPT0 + i]], j, u->st.s[ZS_ST_OPT(i)].dtype);
      rc = zs_optim_update(e->optim, &seg);
    }
    if (rc == ZS_OK) rc = zs_nvme_stream_commit(s);
    if (rc != ZS_OK) break;
  }
  if (rc == ZS_OK) rc = zs_nvme_stream_finish(s);
  zs_nvme_stream_bytes(s, rd, wr);
  zs_nvme_stream_close(s);
  return rc == ZS_OK ? rc : zs_err_wrap(rc, "NVMe tier: the step's update of unit '%s'", u->name);
}

zs_status zs_engine_nvme_step(zs_engine *e, zs_status rc) {
  zs_nvme_tier *t = e->nvme;
  if (!t) return rc;
  const double t0 = zs_clock_now_s();
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++) {
    zs_unit *u = e->units[i];
    if (!zs_unit_on_nvme(u)) continue;
    uint64_t rd = 0, wr = 0;
    rc = unit_pass(e, u, &rd, &wr);
    t->step_read += rd;
    t->step_written += wr;
  }
  t->step_seconds += zs_clock_now_s() - t0;
  /* The update is local, the publish after it collective: every rank learns here whether one
     failed, so that all fail together instead of waiting in the publish for the failed one. */
  const zs_agree_text say = {.what = "NVMe tier",
                             .phrase = "'s tier failed in the step's update (its error names the "
                                       "file and the offset); the engine failed on every rank: "
                                       "restart from the last checkpoint",
                             .theirs = ZS_ERR_IO};
  ZS_CHECK(zs_engine_agree(e, rc, NULL, &say)); /* a failed rank keeps its own failure */
  zs_engine_nvme_info(e);
  return ZS_OK;
}

void zs_engine_nvme_info(zs_engine *e) {
  const zs_nvme_tier *t = e->nvme;
  if (!t) return;
  zs_engine_facts *f = &e->facts; /* the numbers first, the text from them */
  f->nvme_dir = zs_nvme_dir_path(t->dir);
  f->nvme_file_bytes = t->file_bytes;
  f->nvme_chunk = t->chunk;
  f->nvme_read_bytes = t->step_read;
  f->nvme_written_bytes = t->step_written;
  f->nvme_io_seconds = t->step_seconds;
  if (t->info_at >= sizeof e->info) return;
  const double gb = (double)(f->nvme_read_bytes + f->nvme_written_bytes) / 1e9;
  snprintf(e->info + t->info_at, sizeof e->info - t->info_at,
           ", dir %s (%d units, %llu file bytes, chunk %zu elements); step I/O %llu bytes read, "
           "%llu written in %.3f s (%.3f GB/s)",
           f->nvme_dir, t->nunits, (unsigned long long)f->nvme_file_bytes, f->nvme_chunk,
           (unsigned long long)f->nvme_read_bytes, (unsigned long long)f->nvme_written_bytes,
           f->nvme_io_seconds, f->nvme_io_seconds > 0 ? gb / f->nvme_io_seconds : 0.0);
}
