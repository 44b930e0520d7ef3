/* The NVMe tier's life and its update (nvme_tier.h): open at commit (directory, ring, staging,
 * each unit's files), close at destroy, and the step's streamed update of a unit on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tier/nvme_tier.h"
#include "base/clock.h"
#include "base/error.h"
#include "offload/nvme_stream.h"
#include "optim/optim.h"

/* The stream of one unit's update pass over the files it has (look-ahead 1, 3 staging slots):
   array at[w] of the stream is file nv[w], or at[w] = -1 where the unit has no such file (its
   master is its params). */
static zs_nvme_stream_desc unit_desc(const zs_nvme_tier *t, const zs_unit *u, zs_nvme_mode mode,
                                     int at[ZS_ARR_N]) {
  zs_nvme_stream_desc d = {mode, 0, {NULL}, {0}, u->opt_n, t->chunk, 1};
  for (int w = 0; w < ZS_ARR_N; w++) {
    at[w] = -1;
    if (!u->nv[w]) continue;
    at[w] = (int)d.narrays;
    d.files[d.narrays] = u->nv[w];
    d.elem_bytes[d.narrays++] = zs_tier_elem(u, (zs_arr)w);
  }
  return d;
}

/* The arrays' element sizes of the mode (zs_placement_nvme_elems), those it has, in at most
   ZS_ARR_N entries of el; returns how many. */
static unsigned mode_elems(const zs_config *c, size_t el[ZS_ARR_N]) {
  size_t eb[ZS_ARR_N];
  unsigned n = 0;
  zs_placement_nvme_elems(c, eb);
  for (int w = 0; w < ZS_ARR_N; w++)
    if (eb[w]) el[n++] = eb[w];
  return n;
}

/* Elements per chunk: offload_chunk rounded up to the O_DIRECT quantum of the mode's arrays
   (align / 4 elements with fp32 arrays only, align / 2 with a 2-byte one), at most 2^28 (the
   stream's 1 GiB per array). */
static size_t tier_chunk(const zs_config *c, size_t align) {
  size_t el[ZS_ARR_N];
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
  if (which == ZS_ARR_MASTER)
    return (zs_state_is(&u->st, ZS_ST_MASTER, ZS_LIFE_PERSISTENT) &&
            u->st.s[ZS_ST_MASTER].tier == ZS_TIER_NVME) ||
           (zs_state_is(&u->st, ZS_ST_MASTER_REM, ZS_LIFE_PERSISTENT) &&
            u->st.s[ZS_ST_MASTER_REM].tier == ZS_TIER_NVME);
  const zs_state st = ZS_ST_OPT(which - ZS_ARR_OPT0);
  return zs_state_is(&u->st, st, ZS_LIFE_PERSISTENT) && u->st.s[st].tier == ZS_TIER_NVME;
}

/* Bytes of file `which` of u before alignment (its elements' size, zs_tier_elem). */
static uint64_t file_bytes(const zs_unit *u, int which) {
  return (uint64_t)u->opt_n * zs_tier_elem(u, (zs_arr)which);
}

/* Creates the files of unit u ("u<index>.master" (or ".rem" for remainders), then one per state
   array named by its short name, such as ".m" and ".v") that its table keeps on the tier,
   zero-filled. */
static zs_status unit_files(zs_nvme_tier *t, const zs_opt_shape *sh, zs_unit *u) {
  for (int j = 0; j < ZS_ARR_N; j++) {
    if (!has_file(u, j)) continue;
    const char *what = j >= ZS_ARR_OPT0 ? sh->state_short[j - ZS_ARR_OPT0]
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
  for (int j = 0; j < ZS_ARR_N; j++)
    if (has_file(u, j)) return 1;
  return 0;
}

uint64_t zs_nvme_tier_disk_bytes(const zs_tiers *tiers, size_t align) {
  const zs_shard_ctx *x = tiers->sh;
  uint64_t b = 0;
  for (int i = 0; i < x->nunits; i++)
    for (int j = 0; j < ZS_ARR_N; j++)
      if (has_file(x->units[i], j)) b += (file_bytes(x->units[i], j) + align - 1) / align * align;
  return b;
}

zs_status zs_nvme_tier_open(zs_tiers *tiers, const zs_placement *pl) {
  const zs_shard_ctx *x = tiers->sh;
  const zs_config *cfg = x->cfg;
  tiers->nvme = NULL;
  if (!pl->nnvme) return ZS_OK;
  zs_nvme_tier *t = calloc(1, sizeof *t);
  if (!t) return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no host memory for its handle");
  tiers->nvme = t;
  zs_status rc = zs_nvme_dir_open(cfg->nvme_path, x->world_rank, &t->dir);
  if (rc != ZS_OK) goto fail;
  const size_t al = zs_nvme_dir_align(t->dir);
  t->chunk = tier_chunk(cfg, al);
  for (int i = 0; i < x->nunits; i++)
    t->nunits += on_tier(x->units[i]);
  t->file_bytes = zs_nvme_tier_disk_bytes(tiers, al);
  rc = zs_nvme_dir_check_space(t->dir, t->file_bytes);
  if (rc != ZS_OK) goto fail;
  /* The largest pass: every array of the mode (zs_placement_nvme_elems, as the planner sizes the
     staging). */
  zs_nvme_stream_desc d = {ZS_NVME_UPDATE, 0, {NULL}, {0}, 1, t->chunk, 1};
  d.narrays = mode_elems(cfg, d.elem_bytes);
  rc = zs_nvme_ring_create(zs_nvme_stream_ring_entries(&d), &t->ring);
  if (rc != ZS_OK) goto fail;
  /* Pinned on CUDA (cudaHostRegister), so that host_pinned, where the ledger books it, is what
     it is (unpinned only where pinning fails and offload_allow_unpinned allows it, as for the
     arena); unpinned on the CPU device, as the host arena there (zs_nvme_staging_flags_for). */
  const unsigned sf = zs_nvme_staging_flags_for(x->dev->kind);
  rc = zs_nvme_staging_create(zs_nvme_stream_slot_bytes(&d), zs_nvme_stream_slots(1), al, sf,
                              &t->staging);
  if (rc == ZS_ERR_DEVICE && sf && cfg->offload_allow_unpinned) /* as the arena does */
    rc = zs_nvme_staging_create(zs_nvme_stream_slot_bytes(&d), zs_nvme_stream_slots(1), al, 0,
                                &t->staging);
  if (rc != ZS_OK) goto fail;
  /* Booked as the planner counts it (zs_placement_nvme_staging: 3 x offload_chunk x the arrays'
     bytes). The slots round the chunk up to the O_DIRECT quantum (1024 elements at 4 KiB with
     fp32 arrays, 2048 with a 2-byte one), so for an offload_chunk that is not a multiple of it
     they hold up to that many elements' bytes more than booked (zshard.h, nvme_path, says so). */
  t->booked = zs_placement_nvme_staging(cfg);
  zs_ledger_add(&x->mem->ledger, ZS_MEM_HOST_PINNED, t->booked);
  /* Initial state: master = the params at commit widened to fp32 (remainders 0), m = v = 0.
     Commit zeroes every state it allocates (params included), so the files' zero fill is that
     state; a later zs_unit_set_param writes the master (or remainder) range through
     the tier's write. */
  for (int i = 0; i < x->nunits && rc == ZS_OK; i++)
    if (on_tier(x->units[i])) rc = unit_files(t, zs_opt_shape_of(cfg), x->units[i]);
  if (rc != ZS_OK) goto fail;
  return ZS_OK;
fail:
  zs_nvme_tier_close(tiers);
  return rc;
}

void zs_nvme_tier_close(zs_tiers *tiers) {
  zs_nvme_tier *t = tiers ? tiers->nvme : NULL;
  if (!t) return;
  const zs_shard_ctx *x = tiers->sh;
  zs_nvme_ring_destroy(t->ring); /* drains: no I/O targets the staging after this */
  for (int i = 0; i < x->nunits; i++)
    for (int j = 0; j < ZS_ARR_N; j++) {
      zs_nvme_file_close(x->units[i]->nv[j]);
      x->units[i]->nv[j] = NULL;
    }
  zs_nvme_staging_destroy(t->staging);
  if (t->booked) zs_ledger_sub(&x->mem->ledger, ZS_MEM_HOST_PINNED, t->booked);
  zs_nvme_dir_close(t->dir);
  free(t);
  tiers->nvme = NULL;
}

/* The optimizer's segment of tensor k of u over flat elements [a, b) of chunk c (lo: the chunk's
   first flat element). The master is the master file's span (fp32), or the params (u->master's
   alias with ZS_MASTER_PARAMS and host params; none in lean mode, whose update rounds the bf16
   params in place), or the params with the remainders' span (ZS_MASTER_REMAINDER): the segment the
   in-memory update gets (zs_tier_mem_seg), the spans in place of the arrays. */
static zs_optim_seg chunk_seg(zs_unit *u, const zs_nvme_chunk *c, const int at[ZS_ARR_N], int k,
                              size_t lo, size_t a, size_t b) {
  const int rem = zs_arr_state(u, ZS_ARR_MASTER) == ZS_ST_MASTER_REM;
  const size_t j = a - lo;
  void *m0 = at[ZS_ARR_MASTER] >= 0 ? c->span[at[ZS_ARR_MASTER]] : NULL;
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
                      zs_unit_on_host(u, zs_state_home(&u->st, ZS_ST_PARAM_FULL)),
                      u->group[k],
                      u->index,
                      a,
                      rem ? (uint16_t *)m0 + j : NULL,
                      u->whole_dir && u->whole_owner[k] >= 0 ? u->whole_dir + a : NULL};
  for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
    if (at[ZS_ARR_OPT0 + i] >= 0)
      seg.state[i] = zs_ptr_add(c->span[at[ZS_ARR_OPT0 + i]], j, u->st.s[ZS_ST_OPT(i)].dtype);
  return seg;
}

/* What a pass does to each segment: the step's update (with a whole tensor's results stored
   first), or the whole tensors' gather into their channels. */
typedef enum { PASS_UPDATE, PASS_GATHER } pass_kind;

/* One UPDATE pass over unit u's files, `kind` on each chunk's segments in place. *rd and *wr get
   the bytes the pass moved (whatever its outcome). */
static zs_status unit_pass(zs_tiers *tiers, zs_unit *u, pass_kind kind, uint64_t *rd,
                           uint64_t *wr) {
  zs_nvme_tier *t = tiers->nvme;
  int at[ZS_ARR_N];
  const zs_nvme_stream_desc d = unit_desc(t, u, ZS_NVME_UPDATE, at);
  zs_nvme_stream *s = NULL;
  *rd = *wr = 0;
  zs_status rc = zs_nvme_stream_open(&d, t->ring, t->staging, &s);
  if (rc != ZS_OK) return rc;
  for (;;) {
    zs_nvme_chunk c;
    rc = zs_nvme_stream_next(s, &c);
    if (rc != ZS_OK || c.count == 0) break;
    const size_t lo = u->opt_off + c.first, hi = lo + c.count;
    for (int k = 0; k < u->ntensors && rc == ZS_OK; k++) {
      size_t a, b;
      if (!zs_layout_overlap(&u->lay, k, lo, hi, &a, &b)) continue;
      if (kind == PASS_GATHER && u->whole_owner[k] < 0) continue;
      const zs_optim_seg seg = chunk_seg(u, &c, at, k, lo, a, b);
      float *ch[ZS_OPT_MAX_CHANNELS] = {NULL}; /* the whole step's channels at element a */
      for (int i = 0; seg.dir && i < u->whole_channels; i++)
        ch[i] = u->whole_dir + (size_t)i * u->lay.padded + a;
      if (kind == PASS_GATHER) {
        zs_optim_gather(tiers->optim, &seg, ch);
        continue;
      }
      if (seg.dir) zs_optim_store(tiers->optim, &seg, (const float *const *)ch);
      rc = zs_optim_update(tiers->optim, &seg);
    }
    if (rc == ZS_OK) rc = zs_nvme_stream_commit(s);
    if (rc != ZS_OK) break;
  }
  if (rc == ZS_OK) rc = zs_nvme_stream_finish(s);
  zs_nvme_stream_bytes(s, rd, wr);
  zs_nvme_stream_close(s);
  return rc;
}

/* unit_pass, its bytes and seconds added to the tier's totals, its error naming the unit. */
static zs_status timed_pass(zs_tiers *tiers, zs_unit *u, pass_kind kind) {
  zs_nvme_tier *t = tiers->nvme;
  const double t0 = zs_clock_now_s(), w0 = zs_nvme_ring_wait_seconds(t->ring);
  uint64_t rd = 0, wr = 0;
  const zs_status rc = unit_pass(tiers, u, kind, &rd, &wr);
  t->step_read += rd;
  t->step_written += wr;
  t->step_seconds += zs_clock_now_s() - t0;
  t->step_wait += zs_nvme_ring_wait_seconds(t->ring) - w0;
  return rc == ZS_OK ? rc
                     : zs_err_wrap(rc, "NVMe tier: the step's %s of unit '%s'",
                                   kind == PASS_GATHER ? "whole-tensor gather" : "update", u->name);
}

static zs_status nvme_update(zs_tiers *tiers, zs_unit *u) {
  return timed_pass(tiers, u, PASS_UPDATE);
}

zs_status zs_nvme_tier_whole_gather(zs_tiers *tiers, zs_unit *u) {
  return timed_pass(tiers, u, PASS_GATHER);
}

/* The files are made at open (zs_nvme_tier_open) and closed there: a state's slot stays NULL. */
static zs_status nvme_alloc(zs_tiers *t, zs_unit *u, zs_state s) {
  (void)t;
  *zs_unit_slot(u, s) = NULL;
  return ZS_OK;
}
static void nvme_free(zs_tiers *t, zs_unit *u, zs_state s) {
  (void)t;
  *zs_unit_slot(u, s) = NULL;
}

const zs_tier_ops zs_tier_nvme_ops = {
    "nvme", nvme_alloc, nvme_free, zs_nvme_tier_read, zs_nvme_tier_write, nvme_update};
