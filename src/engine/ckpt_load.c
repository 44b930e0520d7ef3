/* zs_engine_load: any world size, shard group and stage saved -> any loaded. Each rank works out
 * which elements of each unit it holds under its own plan, reads only the blocks of the saved
 * files that contain them, and checks every block against its checksum. Two passes: the first
 * reads and checks everything this rank needs and all ranks agree on the verdict before anything
 * is written, so a refused load leaves the engine exactly as it was; the second reads again and
 * writes the values in (a file that changes between the passes fails the engine). Units on the
 * NVMe tier get their master and state arrays written into the tier's files block by block
 * (through their tier, tier/tier.h); an I/O error there also fails the engine. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/bf16.h"
#include "base/error.h"
#include "engine/ckpt.h"
#include "engine/ckpt_save.h"
#include "engine/fail.h"
#include "ckpt/ckpt_io.h"
#include "tier/master_io.h"
#include "base/bf16_rem.h"

#define MANIFEST_MAX ((size_t)1 << 30)

/* The checkpoint directory: dir itself when it holds a manifest, else its newest committed
   ckpt-<seq>. */
static zs_status resolve(const char *dir, char *ck, size_t cap) {
  char m[4200];
  snprintf(m, sizeof m, "%s/%s", dir, ZS_CKPT_MANIFEST);
  if (access(m, F_OK) == 0) {
    snprintf(ck, cap, "%s", dir);
    return ZS_OK;
  }
  uint64_t *seqs;
  int *com, n, pick = -1;
  ZS_CHECK(zs_io_scan(dir, &seqs, &com, &n));
  for (int i = 0; i < n; i++)
    if (com[i]) pick = i;
  if (pick >= 0) zs_io_ckpt_path(ck, cap, dir, seqs[pick]);
  free(seqs);
  free(com);
  if (pick < 0)
    return zs_err(ZS_ERR_IO,
                  "zs_engine_load: %s holds no committed checkpoint (no %s in it or in "
                  "a ckpt-<n> directory inside it)",
                  dir, ZS_CKPT_MANIFEST);
  return ZS_OK;
}

/* The saved model must be this engine's: names, shapes and dtype, in order. */
static zs_status check_model(const zs_engine *e, const zs_ckpt_manifest *m) {
  const char *opt = zs_opt_name_of(&e->cfg);
  if (strcmp(m->optimizer, opt) != 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_load: the checkpoint holds the state of optimizer '%s', the engine "
                  "runs '%s': load it into an engine with the same optimizer",
                  m->optimizer, opt);
  const int na = zs_state_narrays(&e->cfg);
  for (int a = 0; a < na || a < m->narrays; a++)
    if (a >= na || a >= m->narrays ||
        strcmp(m->arrays[a], zs_arr_ckpt_name(&e->cfg, (zs_arr)a)) != 0)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_engine_load: the checkpoint's optimizer state has array %d '%s', the "
                    "engine's '%s' (optimizer '%s' keeps other state, e.g. SGD with and without "
                    "momentum): configure the engine as the run that saved it",
                    a, a < m->narrays ? m->arrays[a] : "(none)",
                    a < na ? zs_arr_ckpt_name(&e->cfg, (zs_arr)a) : "(none)", opt);
  if (m->param_dtype != e->cfg.param_dtype)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_load: the checkpoint's params are %s, the "
                  "engine's %s: use the same param_dtype",
                  m->param_dtype == ZS_BF16 ? "bf16" : "fp32",
                  e->cfg.param_dtype == ZS_BF16 ? "bf16" : "fp32");
  for (int i = 0; i < e->nunits || i < m->nunits; i++) {
    if (i >= m->nunits)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_engine_load: unit %d '%s' is not in the checkpoint "
                    "(it has %d units)",
                    i, e->units[i]->name, m->nunits);
    if (i >= e->nunits)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_engine_load: the checkpoint has unit %d '%s', the "
                    "engine only %d units",
                    i, m->units[i].name, e->nunits);
    const zs_unit *u = e->units[i];
    const zs_ckpt_unit *cu = &m->units[i];
    if (strcmp(u->name, cu->name) != 0)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_engine_load: unit %d is '%s' in the engine and '%s' "
                    "in the checkpoint",
                    i, u->name, cu->name);
    for (int k = 0; k < u->ntensors || k < cu->ntensors; k++) {
      if (k >= u->ntensors || k >= cu->ntensors)
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_load: unit '%s' has %d tensors in the engine "
                      "and %d in the checkpoint",
                      u->name, u->ntensors, cu->ntensors);
      const zs_tensor_desc *t = &u->t[k];
      const zs_ckpt_tensor *ct = &cu->t[k];
      const zs_tensor_desc wd = zs_engine_tp_whole(u, k); /* the manifest's shapes are whole */
      const int64_t *whole = wd.shape;
      if (strcmp(t->name, ct->name) != 0)
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_load: unit '%s' tensor %d is '%s' in the "
                      "engine and '%s' in the checkpoint",
                      u->name, k, t->name, ct->name);
      int same = t->ndim == ct->ndim;
      for (int d = 0; same && d < t->ndim; d++)
        same = whole[d] == ct->shape[d];
      if (!same) {
        char a[96] = "", b[96] = "";
        for (int d = 0; d < t->ndim; d++)
          snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? ", " : "",
                   (long long)whole[d]);
        for (int d = 0; d < ct->ndim; d++)
          snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? ", " : "",
                   (long long)ct->shape[d]);
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_load: tensor '%s.%s' is [%s] in the engine "
                      "and [%s] in the checkpoint",
                      u->name, t->name, a, b);
      }
      /* Its state is its group's optimizer's: the same one must read it (a frozen unit reads
         none). */
      if (u->frozen) continue;
      const int g = ct->group;
      const char *saved = g > 0 && g < m->ngroups && m->group_optimizer[g][0]
                              ? m->group_optimizer[g]
                              : m->optimizer,
                 *mine = zs_optimizer_name(e->group_opt[u->group[k]]);
      if (strcmp(saved, mine) != 0)
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_load: tensor '%s.%s' holds the state of optimizer '%s' (its "
                      "group %d in the checkpoint), the engine updates it with '%s': put it in "
                      "a group on the same optimizer before commit",
                      u->name, t->name, saved, g, mine);
    }
  }
  return ZS_OK;
}

/* What this rank needs of unit u: master over [*ma, *mb) (the params it holds come from it) and
   m, v over [*oa, *ob) (its optimizer range; empty for a frozen unit), both without padding;
   [oa, ob) is inside. */
static void needed(const zs_engine *e, const zs_unit *u, uint64_t *ma, uint64_t *mb, uint64_t *oa,
                   uint64_t *ob) {
  const uint64_t n = u->lay.numel_total;
  *oa = u->opt_off < n ? u->opt_off : n;
  *ob = u->opt_off + u->opt_n < n ? u->opt_off + u->opt_n : n;
  if (zs_state_is(&u->st, ZS_ST_PARAM_FULL, ZS_LIFE_PERSISTENT)) {
    *ma = 0;
    *mb = n;
  } else {
    *ma = *oa;
    *mb = *ob;
  }
  if (u->frozen) *oa = *ob = *ma; /* no master, m or v: the master values go to the params only */
}

static int cmp_seg(const void *x, const void *y) {
  const zs_ckpt_seg *a = *(const zs_ckpt_seg *const *)x, *b = *(const zs_ckpt_seg *const *)y;
  if (a->tp != b->tp) return a->tp < b->tp ? -1 : 1;
  return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/* Each unit's runs (zs_ckpt_runs) over what this rank needs of it: [ma, mb) of needed(), and
   their order by saved tp rank, then saved position (ord): the runs of one tp rank come in
   increasing, disjoint source ranges (the dst order keeps them so), so a segment finds its runs
   by binary search however many rows a dim-1 split cut them into. */
typedef struct {
  zs_ckpt_run **r;
  size_t *n;
  size_t **ord;
  int nunits;
} unit_runs;

static void runs_free(unit_runs *ur) {
  for (int i = 0; i < ur->nunits; i++) {
    if (ur->r) free(ur->r[i]);
    if (ur->ord) free(ur->ord[i]);
  }
  free(ur->r);
  free(ur->n);
  free(ur->ord);
  memset(ur, 0, sizeof *ur);
}

/* ord: the n runs' indexes, by src_tp (0 .. T - 1) and then their own order; cnt has T + 1. */
static void order_runs(const zs_ckpt_run *r, size_t n, int T, size_t *cnt, size_t *ord) {
  memset(cnt, 0, ((size_t)T + 1) * sizeof *cnt);
  for (size_t j = 0; j < n; j++)
    cnt[r[j].src_tp + 1]++;
  for (int t = 0; t < T; t++)
    cnt[t + 1] += cnt[t];
  for (size_t j = 0; j < n; j++)
    ord[cnt[r[j].src_tp]++] = j;
}

static zs_status runs_make(const zs_engine *e, const zs_ckpt_manifest *m, unit_runs *ur) {
  ur->r = calloc((size_t)e->nunits, sizeof *ur->r);
  ur->n = calloc((size_t)e->nunits, sizeof *ur->n);
  ur->ord = calloc((size_t)e->nunits, sizeof *ur->ord);
  ur->nunits = e->nunits;
  size_t *cnt = calloc((size_t)m->tp_size + 1, sizeof *cnt);
  zs_status rc = ur->r && ur->n && ur->ord && cnt
                     ? ZS_OK
                     : zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_load: out of host memory");
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++) {
    uint64_t ma, mb, oa, ob;
    needed(e, e->units[i], &ma, &mb, &oa, &ob);
    rc = zs_ckpt_runs(e, m, i, ma, mb, &ur->r[i], &ur->n[i]);
    if (rc == ZS_OK && ur->n[i] && !(ur->ord[i] = malloc(ur->n[i] * sizeof *ur->ord[i])))
      rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_load: out of host memory");
    if (rc == ZS_OK && ur->n[i]) order_runs(ur->r[i], ur->n[i], m->tp_size, cnt, ur->ord[i]);
  }
  free(cnt);
  return rc;
}

/* The first of unit i's ordered runs of saved tp rank tp that ends after saved element x (or
   one past them). */
static size_t first_run(const unit_runs *ur, int i, int tp, uint64_t x) {
  const zs_ckpt_run *r = ur->r[i];
  const size_t *ord = ur->ord[i];
  size_t lo = 0, hi = ur->n[i];
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const zs_ckpt_run *q = &r[ord[mid]];
    if (q->src_tp < tp || (q->src_tp == tp && q->src + q->n <= x))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Every element this rank needs is in some file (a missing shard, or a manifest that does not
   cover the model, is caught here rather than loading zeros): one sweep per unit over its
   segments and its ordered runs, both by tp rank and position. */
static zs_status check_coverage(const zs_engine *e, const zs_ckpt_manifest *m,
                                const unit_runs *ur) {
  int total = 0;
  for (int f = 0; f < m->nfiles; f++)
    total += m->files[f].nsegs;
  const zs_ckpt_seg **list = calloc((size_t)total + 1, sizeof *list);
  if (!list) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_load: out of host memory");
  zs_status rc = ZS_OK;
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++) {
    int n = 0;
    for (int f = 0; f < m->nfiles; f++)
      for (int k = 0; k < m->files[f].nsegs; k++)
        if (m->files[f].segs[k].unit == i) list[n++] = &m->files[f].segs[k];
    qsort(list, (size_t)n, sizeof *list, cmp_seg);
    int k = 0, tp = -1;
    uint64_t reach = 0; /* the end of what the segments of tp so far cover from their start */
    for (size_t j = 0; j < ur->n[i] && rc == ZS_OK; j++) {
      const zs_ckpt_run *r = &ur->r[i][ur->ord[i][j]];
      if (r->src_tp != tp) { /* the next tp rank's segments */
        tp = r->src_tp;
        reach = 0;
        while (k < n && list[k]->tp < tp)
          k++;
      }
      uint64_t at = r->src;
      while (at < r->src + r->n) {
        for (; k < n && list[k]->tp == tp && list[k]->begin <= at; k++)
          if (list[k]->end > reach) reach = list[k]->end;
        if (reach <= at) break;
        at = reach;
      }
      if (at < r->src + r->n)
        rc = zs_err(ZS_ERR_CORRUPT,
                    "zs_engine_load: no file of the checkpoint holds element %" PRIu64
                    " of unit '%s' (of tp rank %d's slices; a missing or incomplete shard)",
                    at, e->units[i]->name, r->src_tp);
    }
  }
  free(list);
  return rc;
}

/* One pass over the files: reads every block holding something this rank needs, checks it, and
   when `apply` writes the values into the engine. */
typedef struct {
  zs_engine *e;
  const zs_ckpt_manifest *m;
  const unit_runs *ur;
  const char *ck;
  int apply;
  unsigned char *block;
  uint16_t *conv; /* bf16 conversion of params */
} pass;

/* Writes n master values of flat elements [x, x + n) of u into its params (converted). */
static zs_status put_params(pass *p, zs_unit *u, uint64_t x, const float *src, size_t n) {
  zs_engine *e = p->e;
  const zs_dtype pd = e->cfg.param_dtype;
  void *dst = zs_unit_home_at(u, ZS_ST_PARAM_FULL, x);
  const void *from = src;
  if (pd == ZS_BF16) {
    const int ta = zs_unit_ties_away(u); /* the unit's compute-copy rounding */
    for (size_t i = 0; i < n; i++)
      p->conv[i] = ta ? zs_f32_to_bf16_ta(src[i]) : zs_f32_to_bf16(src[i]);
    from = p->conv;
  }
  const size_t bytes = n * zs_dtype_size(pd);
  if (zs_unit_on_host(u, zs_state_home(&u->st, ZS_ST_PARAM_FULL)) || e->dev.kind == ZS_DEVICE_CPU) {
    memcpy(dst, from, bytes);
    return ZS_OK;
  }
  return zs_dev_from_host(&e->dev, dst, from, bytes);
}

/* Source elements [x0, x1) of array `kind` (zs_arr: 0 the master, 1 + i the optimizer's state
   i), at src in p->block, written into the engine's elements from x (tier/master_io.h). */
static zs_status scatter(pass *p, zs_unit *u, int kind, const float *src, uint64_t x, size_t cnt) {
  if (kind == 0) { /* the params (their whole range), then the master over the optimizer's */
    uint64_t ma, mb, oa, ob;
    needed(p->e, u, &ma, &mb, &oa, &ob);
    ZS_CHECK(put_params(p, u, x, src, cnt));
    const uint64_t s0 = x > oa ? x : oa, s1 = x + cnt < ob ? x + cnt : ob;
    if (s0 >= s1) return ZS_OK;
    return zs_state_write(&p->e->tiers, u, ZS_ARR_MASTER, s0, (size_t)(s1 - s0), src + (s0 - x),
                          p->conv, "zs_engine_load");
  }
  /* p->conv holds a block's elements in bf16: no allocation after pass 1 agreed */
  return zs_state_write(&p->e->tiers, u, (zs_arr)kind, x, cnt, src, p->conv, "zs_engine_load");
}

/* Array `kind` of u over engine elements [x, x + n) set to zeros, through the block buffer. */
static zs_status zero_fill(pass *p, zs_unit *u, int kind, uint64_t x, uint64_t n) {
  const uint64_t step = p->m->block_bytes / 4;
  memset(p->block, 0, (size_t)(step < n ? step : n) * 4);
  for (uint64_t i = 0; i < n; i += step)
    ZS_CHECK(
        scatter(p, u, kind, (const float *)p->block, x + i, (size_t)(n - i < step ? n - i : step)));
  return ZS_OK;
}

/* What of array `kind` of segment g run r brings this rank: saved elements [*x0, *x1) (0 when
   nothing), which go to the engine's from *dst. */
static int wanted(const pass *p, const zs_ckpt_seg *g, const zs_ckpt_run *r, int kind, uint64_t *x0,
                  uint64_t *x1, uint64_t *dst) {
  if (r->src_tp != g->tp) return 0;
  uint64_t ma, mb, oa, ob;
  needed(p->e, p->e->units[g->unit], &ma, &mb, &oa, &ob);
  const uint64_t wa = kind == 0 ? ma : oa, wb = kind == 0 ? mb : ob;
  /* The run's part this array wants (in the engine's order), then in the segment (saved order). */
  const uint64_t d0 = r->dst > wa ? r->dst : wa, d1 = r->dst + r->n < wb ? r->dst + r->n : wb;
  if (d0 >= d1) return 0;
  const uint64_t s0 = r->src + (d0 - r->dst), s1 = s0 + (d1 - d0);
  *x0 = s0 > g->begin ? s0 : g->begin;
  *x1 = s1 < g->end ? s1 : g->end;
  if (*x0 >= *x1) return 0;
  *dst = r->dst + (*x0 - r->src);
  return 1;
}

/* Opens file f, checks its size and header against the manifest and reads its block table. */
static zs_status open_file(pass *p, const zs_ckpt_file *f, int *fd, unsigned char **table,
                           char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", p->ck, f->name);
  *table = NULL;
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0)
    return zs_err(errno == ENOENT ? ZS_ERR_CORRUPT : ZS_ERR_IO, "zs_engine_load: %s: %s", path,
                  errno == ENOENT ? "missing (the checkpoint is incomplete)" : strerror(errno));
  struct stat st;
  if (fstat(*fd, &st) != 0)
    return zs_err(ZS_ERR_IO, "zs_engine_load: %s: %s", path, strerror(errno));
  if ((uint64_t)st.st_size != f->bytes)
    return zs_err(ZS_ERR_CORRUPT,
                  "zs_engine_load: %s has %lld bytes, the manifest says %" PRIu64
                  " (truncated or damaged)",
                  path, (long long)st.st_size, f->bytes);
  const size_t hb = ZS_CKPT_HEADER_BYTES + 8 * (size_t)f->nblocks;
  if (!(*table = malloc(hb))) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_load: out of memory");
  ZS_CHECK(zs_io_pread(*fd, *table, hb, 0, path));
  zs_ckpt_header h;
  if (zs_ckpt_header_parse(*table, hb, &h) != ZS_OK)
    return zs_err_wrap(ZS_ERR_CORRUPT, "zs_engine_load: %s", path);
  const uint32_t dv = zs_ckpt_files_data_version(p->m->format_version); /* 1 reads as 2 */
  if (h.self_xxh64 != f->header_xxh64 || h.data_bytes != f->data_bytes ||
      h.block_bytes != p->m->block_bytes || (h.version < 3 ? 2u : h.version) != dv)
    return zs_err(ZS_ERR_CORRUPT,
                  "zs_engine_load: %s does not match the manifest (another "
                  "checkpoint's file?)",
                  path);
  /* Data version 3's zeros between the table and the data (under ZS_CKPT_DATA_ALIGN bytes): no
     checksum covers them, so they are checked as what they must be. */
  const uint64_t pad = zs_ckpt_data_offset(dv, f->nblocks) - hb;
  unsigned char zeros[ZS_CKPT_DATA_ALIGN];
  if (pad) ZS_CHECK(zs_io_pread(*fd, zeros, (size_t)pad, hb, path));
  for (uint64_t i = 0; i < pad; i++)
    if (zeros[i])
      return zs_err(ZS_ERR_CORRUPT,
                    "zs_engine_load: %s: byte %" PRIu64 " (between the block table and the data) "
                    "is not zero: the file is damaged",
                    path, hb + i);
  return ZS_OK;
}

/* Reads and checks block k of f into p->block; *len its size. */
static zs_status read_block(pass *p, const zs_ckpt_file *f, int fd, const unsigned char *table,
                            uint64_t k, const char *path, uint64_t *len) {
  const uint64_t B = p->m->block_bytes, b0 = k * B;
  *len = f->data_bytes - b0 < B ? f->data_bytes - b0 : B;
  const uint64_t data_off =
      zs_ckpt_data_offset(zs_ckpt_files_data_version(p->m->format_version), f->nblocks);
  ZS_CHECK(zs_io_pread(fd, p->block, (size_t)*len, data_off + b0, path));
  uint64_t want = 0;
  for (int i = 7; i >= 0; i--)
    want = want << 8 | table[ZS_CKPT_HEADER_BYTES + 8 * k + (uint64_t)i];
  if (XXH64(p->block, (size_t)*len, 0) != want)
    return zs_err(ZS_ERR_CORRUPT,
                  "zs_engine_load: %s: block %" PRIu64 " (bytes %" PRIu64 "..%" PRIu64
                  " of its data) fails its checksum: the file is "
                  "damaged",
                  path, k, b0, b0 + *len);
  return ZS_OK;
}

/* Whether file f holds anything this rank needs. */
static int file_wanted(const pass *p, const zs_ckpt_file *f) {
  uint64_t x0, x1, dst;
  for (int k = 0; k < f->nsegs; k++) {
    const zs_ckpt_seg *g = &f->segs[k];
    const unit_runs *ur = p->ur;
    for (size_t j = first_run(ur, g->unit, g->tp, g->begin); j < ur->n[g->unit]; j++) {
      const zs_ckpt_run *r = &ur->r[g->unit][ur->ord[g->unit][j]];
      if (r->src_tp != g->tp || r->src >= g->end) break;
      for (int kind = 0; kind < p->m->narrays; kind++)
        if (wanted(p, g, r, kind, &x0, &x1, &dst)) return 1;
    }
  }
  return 0;
}

static zs_status pass_file(pass *p, const zs_ckpt_file *f) {
  if (!file_wanted(p, f)) return ZS_OK; /* nothing of this file is ours: not even opened */
  int fd = -1;
  unsigned char *table = NULL;
  char path[4200];
  zs_status rc = open_file(p, f, &fd, &table, path, sizeof path);
  uint64_t have = UINT64_MAX, len = 0, x0, x1, dst;
  const uint64_t B = p->m->block_bytes;
  for (int k = 0; k < f->nsegs && rc == ZS_OK; k++) {
    const zs_ckpt_seg *g = &f->segs[k];
    zs_unit *u = p->e->units[g->unit];
    const uint64_t n = g->end - g->begin;
    /* Array by array, then the segment's runs in saved order: each block is read once. */
    const unit_runs *ur = p->ur;
    const size_t j0 = first_run(ur, g->unit, g->tp, g->begin);
    for (int kind = 0; kind < p->m->narrays && rc == ZS_OK; kind++)
      for (size_t j = j0; j < ur->n[g->unit] && rc == ZS_OK; j++) {
        const zs_ckpt_run *r = &ur->r[g->unit][ur->ord[g->unit][j]];
        if (r->src_tp != g->tp || r->src >= g->end) break;
        if (!wanted(p, g, r, kind, &x0, &x1, &dst)) continue;
        if (kind >= g->narrays) { /* not saved (the saving unit kept no such array): zeros */
          if (p->apply) rc = zero_fill(p, u, kind, dst, x1 - x0);
          have = UINT64_MAX; /* the block buffer lent the zeros */
          continue;
        }
        const uint64_t a0 = g->offset + 4 * n * (uint64_t)kind; /* the array in the data */
        const uint64_t c0 = a0 + 4 * (x0 - g->begin), c1 = a0 + 4 * (x1 - g->begin);
        for (uint64_t blk = c0 / B; blk <= (c1 - 1) / B && rc == ZS_OK; blk++) {
          if (blk != have) {
            rc = read_block(p, f, fd, table, blk, path, &len);
            have = rc == ZS_OK ? blk : UINT64_MAX;
          }
          if (rc != ZS_OK || !p->apply) continue;
          const uint64_t b0 = blk * B, e0 = c0 > b0 ? c0 : b0;
          const uint64_t e1 = c1 < b0 + len ? c1 : b0 + len;
          if (e0 >= e1) continue;
          rc = scatter(p, u, kind, (const float *)(p->block + (e0 - b0)), dst + (e0 - c0) / 4,
                       (size_t)((e1 - e0) / 4));
        }
      }
  }
  if (fd >= 0) close(fd);
  free(table);
  return rc;
}

/* Reads the manifest and checks it against the engine (local). */
static zs_status read_manifest(zs_engine *e, const char *dir, char *ck, size_t cap,
                               zs_ckpt_manifest *m, unit_runs *ur) {
  memset(m, 0, sizeof *m);
  ZS_CHECK(resolve(dir, ck, cap));
  char path[4200], *text;
  size_t len;
  snprintf(path, sizeof path, "%s/%s", ck, ZS_CKPT_MANIFEST);
  ZS_CHECK(zs_io_slurp(path, MANIFEST_MAX, &text, &len));
  zs_status rc = zs_ckpt_manifest_parse(text, len, m);
  free(text);
  if (rc != ZS_OK) return zs_err_wrap(rc, "zs_engine_load: %s", path);
  if (m->block_bytes % 4 != 0) rc = zs_err(ZS_ERR_CORRUPT, "zs_engine_load: bad block size");
  for (int f = 0; f < m->nfiles && rc == ZS_OK; f++)
    for (int k = 0; k < m->files[f].nsegs && rc == ZS_OK; k++)
      if (m->files[f].segs[k].offset % 4 != 0)
        rc = zs_err(ZS_ERR_CORRUPT, "zs_engine_load: %s: a segment is not aligned", path);
  if (rc == ZS_OK) rc = check_model(e, m);
  if (rc == ZS_OK) rc = runs_make(e, m, ur);
  if (rc == ZS_OK) rc = check_coverage(e, m, ur);
  if (rc != ZS_OK) zs_ckpt_manifest_free(m);
  return rc;
}

/* One pass over the files with the caller's buffers (block_bytes, and bf16 conversion). */
static zs_status run_pass(zs_engine *e, const zs_ckpt_manifest *m, const unit_runs *ur,
                          const char *ck, int apply, unsigned char *block, uint16_t *conv) {
  pass p = {e, m, ur, ck, apply, block, conv};
  zs_status rc = ZS_OK;
  for (int f = 0; f < m->nfiles && rc == ZS_OK; f++)
    rc = pass_file(&p, &m->files[f]);
  return rc;
}

/* This rank's verdict before anything collective: the path, the units it holds, the manifest
   against the engine, the buffers of the passes. */
static zs_status prepare_load(zs_engine *e, const char *dir, char *ck, size_t cap,
                              zs_ckpt_manifest *m, unit_runs *ur, unsigned char **block,
                              uint16_t **conv) {
  if (!dir || !*dir || strlen(dir) > 3000)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_load: the directory path is NULL, empty or too "
                                      "long");
  for (int i = 0; i < e->nunits; i++)
    if (e->units[i]->held)
      return zs_err(ZS_ERR_STATE,
                    "zs_engine_load: unit '%s' is gathered by the caller: release "
                    "it first",
                    e->units[i]->name);
  ZS_CHECK(read_manifest(e, dir, ck, cap, m, ur));
  *block = malloc((size_t)m->block_bytes);
  *conv = malloc((size_t)m->block_bytes / 4 * 2 + 2);
  if (!*block || !*conv)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_load: out of host memory for a %llu-byte block",
                  (unsigned long long)m->block_bytes);
  return ZS_OK;
}

/* Every rank's verdict and checkpoint in one all-gather: ZS_OK when all succeeded and found the
   same checkpoint, else the same status on every rank. */
static zs_status agree_start(zs_engine *e, zs_status mine, const zs_ckpt_manifest *m,
                             const char *ck) {
  const uint64_t w[2] = {mine == ZS_OK ? m->seq : 0, mine == ZS_OK ? XXH64(ck, strlen(ck), 0) : 0};
  uint64_t *all = calloc((size_t)e->all_size * 3, sizeof *all);
  if (!all) return zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_load: out of memory"));
  zs_status rc = zs_ckpt_agree_words(e, mine, w, 2, all, "zs_engine_load");
  int other = -1;
  for (int r = 0; r < e->all_size && rc == ZS_OK && other < 0; r++)
    if (all[3 * r + 1] != all[1] || all[3 * r + 2] != all[2]) other = r;
  free(all);
  if (other >= 0)
    rc = zs_err(ZS_ERR_INVALID_ARG,
                "zs_engine_load: rank %d found another checkpoint than rank 0: every rank must "
                "see the same directory",
                other);
  return rc;
}

zs_status zs_engine_load(zs_engine *e, const char *dir) {
  ZS_CHECK(zs_ckpt_check_state(e, "zs_engine_load"));
  zs_engine_call(e, ZS_CALL_LOAD, NULL);
  zs_ckpt_save_settle(e); /* a save still staged commits first (its outcome: zs_engine_save_wait) */
  if (e->state == ZS_ENGINE_FAILED) return zs_err_wrap(ZS_ERR_STATE, "zs_engine_load");
  zs_ckpt_manifest m;
  memset(&m, 0, sizeof m);
  unsigned char *block = NULL;
  uint16_t *conv = NULL;
  char ck[4096] = "";
  unit_runs ur = {0};
  zs_status rc = prepare_load(e, dir, ck, sizeof ck, &m, &ur, &block, &conv);
  rc = agree_start(e, rc, &m, ck);
  /* Pass 1: read and check everything this rank needs; all agree before anything is written. */
  if (rc == ZS_OK) {
    rc = run_pass(e, &m, &ur, ck, 0, block, conv);
    rc = zs_ckpt_agree(e, rc, "zs_engine_load: reading the checkpoint");
  }
  if (rc == ZS_OK) {
    /* Pass 2: write it in. Stage 3's gathered copies would keep the old values. */
    zs_shard_drop_all(&e->sh);
    rc = run_pass(e, &m, &ur, ck, 1, block, conv);
    if (rc == ZS_OK) rc = zs_dev_sync(&e->dev, e->dev.compute_stream);
    /* Every rank takes part in the verdict; a half-written engine (on any rank) fails on all. The
       step counts change only after it: the collectives' signatures carry them, so a rank whose
       pass failed must still meet the others' verdict with the same counts. */
    if (e->state != ZS_ENGINE_FAILED) rc = zs_ckpt_agree(e, rc, "zs_engine_load");
    if (rc == ZS_OK) {
      e->opt_steps = m.step;
      e->steps_done = m.steps_done;
      for (int i = 0; i < e->nunits; i++)
        e->units[i]->opt_steps = m.units[i].steps >= 0 ? m.units[i].steps : m.step;
      free(e->user_meta); /* the checkpoint's bytes (or none) are the program's now */
      e->user_meta = m.user_meta;
      e->user_meta_bytes = m.user_meta_bytes;
      m.user_meta = NULL;
      zs_engine_set_clear(e, 0); /* values set before are overwritten: nothing left to compare */
    }
    if (rc != ZS_OK && e->state != ZS_ENGINE_FAILED)
      zs_engine_fail_hard(e, zs_err_wrap(rc, "zs_engine_load: writing the checked checkpoint in "
                                             "failed (a file changed while it was read, or the "
                                             "NVMe tier's I/O failed); the engine's state is half "
                                             "loaded"));
  }
  zs_ckpt_manifest_free(&m);
  runs_free(&ur);
  free(block);
  free(conv);
  return rc;
}
