/* zs_engine_export_safetensors: the consolidated fp32 master weights (or bf16) in one
 * safetensors file, streamed: unit by unit, the full master of one unit is gathered, rank 0 writes
 * its tensors in bounded chunks, and the file appears under its name only when it is complete
 * (temporary name, fsync, rename). The gather buffer is the largest unit's fp32 size. A unit on
 * the NVMe tier has its master read from the tier's files into that buffer by the gather. With
 * tensor parallelism the file holds whole tensors: rank 0's tp group joins each split tensor's
 * slices (zs_engine_tp_join; the other tp groups make no such calls, so these go into the second
 * running hash that the step's agreement compares within each tp group: zs_coll_hash_pause) and
 * rank 0 writes them. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/bf16.h"
#include "base/error.h"
#include "engine/ckpt.h"
#include "engine/fail.h"
#include "tier/master_io.h"
#include "ckpt/ckpt_io.h"

#define CHUNK_ELEMS ((size_t)1 << 18) /* output elements per write: 1 MiB of fp32 */

void zs_export_options_default(zs_export_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->dtype = ZS_F32;
}

/* One tensor as it goes into the file. */
typedef struct {
  zs_export_tensor x;
  int ndim;
  int64_t shape[4]; /* in the file */
  uint64_t begin, end;
  zs_tensor_desc whole; /* the engine's tensor, whole (its slices joined at tp_size > 1) */
} entry;

static zs_status plan_entries(zs_engine *e, const zs_export_options *o, entry *ent, int *count) {
  int n = 0;
  uint64_t off = 0;
  const size_t es = zs_dtype_size(o->dtype);
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    for (int k = 0; k < u->ntensors; k++, n++) {
      entry *x = &ent[n];
      memset(x, 0, sizeof *x);
      x->whole = zs_engine_tp_whole(u, k);
      const zs_tensor_desc *t = &x->whole;
      snprintf(x->x.name, sizeof x->x.name, "%s.%s", u->name, t->name);
      if (o->tensor_fn && o->tensor_fn(o->ctx, u->name, t->name, t->ndim, t->shape, &x->x) != 0)
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_export_safetensors: the tensor callback "
                      "refused '%s.%s'",
                      u->name, t->name);
      x->x.name[sizeof x->x.name - 1] = 0;
      if (x->x.skip) continue;
      if (!x->x.name[0] || strcmp(x->x.name, "__metadata__") == 0)
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_export_safetensors: '%s.%s' gets the name "
                      "'%s', which safetensors cannot use",
                      u->name, t->name, x->x.name);
      if (x->x.rows < 0 || x->x.rows > t->shape[0] || (x->x.transpose && t->ndim != 2))
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_export_safetensors: '%s.%s': rows %lld or "
                      "transpose %d does not fit its shape (rows in 0..%lld, "
                      "transpose for 2-D tensors only)",
                      u->name, t->name, (long long)x->x.rows, x->x.transpose,
                      (long long)t->shape[0]);
      const int64_t rows = x->x.rows ? x->x.rows : t->shape[0];
      x->ndim = t->ndim;
      memcpy(x->shape, t->shape, sizeof x->shape);
      x->shape[0] = rows;
      if (x->x.transpose) {
        x->shape[0] = t->shape[1];
        x->shape[1] = rows;
      }
      uint64_t numel = 1;
      for (int d = 0; d < x->ndim; d++)
        numel *= (uint64_t)x->shape[d];
      x->begin = off;
      x->end = off += numel * es;
      for (int j = 0; j < n; j++)
        if (!ent[j].x.skip && strcmp(ent[j].x.name, x->x.name) == 0)
          return zs_err(ZS_ERR_INVALID_ARG,
                        "zs_engine_export_safetensors: two tensors are named "
                        "'%s' in the file",
                        x->x.name);
    }
  }
  *count = n;
  return ZS_OK;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes. */
static zs_status header_text(zs_engine *e, const zs_export_options *o, const entry *ent, int n,
                             char **out, size_t *len) {
  cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject();
  int ok = root && meta && cJSON_AddItemToObject(root, "__metadata__", meta);
  if (!ok) cJSON_Delete(meta);
  char step[32];
  snprintf(step, sizeof step, "%" PRId64, e->opt_steps);
  ok = ok && cJSON_AddStringToObject(meta, "format", "pt") &&
       cJSON_AddStringToObject(meta, "zshard_version", zs_version()) &&
       cJSON_AddStringToObject(meta, "step", step);
  for (int i = 0; i < n && ok; i++) {
    if (ent[i].x.skip) continue;
    cJSON *t = cJSON_CreateObject(), *sh, *of;
    ok = t && cJSON_AddItemToObject(root, ent[i].x.name, t) &&
         cJSON_AddStringToObject(t, "dtype", o->dtype == ZS_BF16 ? "BF16" : "F32") &&
         (sh = cJSON_AddArrayToObject(t, "shape")) &&
         (of = cJSON_AddArrayToObject(t, "data_offsets"));
    for (int d = 0; d < ent[i].ndim && ok; d++)
      ok = cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)ent[i].shape[d]));
    ok = ok && cJSON_AddItemToArray(of, cJSON_CreateNumber((double)ent[i].begin)) &&
         cJSON_AddItemToArray(of, cJSON_CreateNumber((double)ent[i].end));
  }
  char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  if (!s) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_export_safetensors: out of host memory");
  size_t l = strlen(s), padded = (l + 7) / 8 * 8;
  char *p = realloc(s, padded + 1);
  if (!p) {
    free(s);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_export_safetensors: out of host memory");
  }
  memset(p + l, ' ', padded - l);
  p[padded] = 0;
  *out = p;
  *len = padded;
  return ZS_OK;
}

/* Rank 0's writer: the open temporary file and a bounded output chunk. */
typedef struct {
  int fd;
  const char *path;
  zs_dtype dt;
  unsigned char *chunk; /* CHUNK_ELEMS output elements */
  zs_status rc;         /* the first write error (the gathers go on: the others are in them) */
} out_file;

/* Writes tensor x whose fp32 values (input layout [shape0, rest]) are at src (host). */
static void write_tensor(out_file *w, const entry *x, const zs_tensor_desc *t, const float *src) {
  if (w->rc != ZS_OK) return;
  const uint64_t es = zs_dtype_size(w->dt), total = (x->end - x->begin) / es;
  const uint64_t in_cols = t->ndim >= 2 ? (uint64_t)(t->shape[1]) : 1;
  const uint64_t rows = (uint64_t)x->shape[x->x.transpose ? 1 : 0];
  for (uint64_t o0 = 0; o0 < total && w->rc == ZS_OK; o0 += CHUNK_ELEMS) {
    const uint64_t o1 = o0 + CHUNK_ELEMS < total ? o0 + CHUNK_ELEMS : total;
    for (uint64_t o = o0; o < o1; o++) {
      /* Output element o: transposed [cols, rows] reads input (o % rows, o / rows). */
      const uint64_t in = x->x.transpose ? (o % rows) * in_cols + o / rows : o;
      const float v = src[in];
      if (w->dt == ZS_BF16)
        ((uint16_t *)w->chunk)[o - o0] = zs_f32_to_bf16(v);
      else
        ((float *)w->chunk)[o - o0] = v;
    }
    w->rc = zs_io_write(w->fd, w->chunk, (size_t)((o1 - o0) * es), w->path, 0, 0);
  }
}

/* Gathers unit u's full master into `full` (room for the largest unit; collective) and, on rank
   0, writes its tensors. A local failure on rank 0 (host memory, the file) goes into w->rc and
   the gathers go on: the other ranks are in them. A unit on the NVMe tier reads its master from
   the tier's file; a failed read goes into *tier_rc (the first one) and the gathers go on. At
   tp_size > 1 rank 0's tp group (joins) joins every split tensor whatever its own failures (the
   others are in the joins), a rank that cannot give its slice giving zeros; a local failure goes
   into *local_rc, agreed before the file is published. */
static zs_status export_unit(zs_engine *e, zs_unit *u, const entry *ent, out_file *w, float *full,
                             int joins, zs_status *tier_rc, zs_status *local_rc) {
  const int writer = e->all_rank == 0;
  const float *src_full = full;
  int have = 1;                     /* this rank has the unit's master */
  if (zs_state_master_on_tier(u)) { /* the fp32 master's or the remainders' file */
    /* On the NVMe tier: the gather reads this rank's range from its file (its shard group agrees
       on a failed read before the all-gather, so all its ranks return the error together). A
       failed read is the tier's verdict, agreed before the file is published; the other units'
       gathers go on. */
    const zs_status rc = zs_master_gather(&e->tiers, u, full);
    if (rc != ZS_OK && zs_mem_may_be_written(rc)) return zs_engine_fail(e, rc);
    if (rc != ZS_OK && *tier_rc == ZS_OK)
      *tier_rc = zs_err_wrap(rc, "reading unit '%s' master from the NVMe tier", u->name);
    have = *tier_rc == ZS_OK; /* nothing more of it is written */
  } else if (zs_state_master_in_host(u)) {
    src_full = zs_state_master_in_host(u); /* already whole, in host memory */
  } else {
    const zs_status rc = zs_master_gather(&e->tiers, u, full);
    if (rc != ZS_OK) return zs_engine_fail(e, rc);
  }
  for (int k = 0; k < u->ntensors; k++) {
    const int split = joins && zs_engine_tp_split(u, k);
    if (ent[k].x.skip || !(split || (writer && have && w->rc == ZS_OK))) continue;
    const size_t n = u->lay.numel[k];
    const float *src = have ? src_full + u->lay.off[k] : NULL;
    float *host = NULL, *whole = NULL;
    int oom = 0;
    if (src && e->dev.kind == ZS_DEVICE_CUDA && !zs_state_master_in_host(u) &&
        (split || *local_rc == ZS_OK)) {
      /* One tensor at a time on the host. */
      host = malloc(n * 4 + 4);
      const zs_status rc = host ? zs_dev_to_host(&e->dev, host, src, n * 4) : ZS_OK;
      if (rc != ZS_OK) {
        free(host);
        return zs_engine_fail(e, rc);
      }
      oom = !host;
      src = host;
    }
    /* Only the writer keeps the whole tensor; the others give their slices. */
    if (split && writer && !(whole = malloc(n * (size_t)e->tp_size * 4 + 4))) oom = 1;
    if (oom && *local_rc == ZS_OK)
      *local_rc = zs_err(ZS_ERR_OUT_OF_MEMORY,
                         "zs_engine_export_safetensors: out of host memory for tensor '%s.%s'",
                         u->name, u->t[k].name);
    if (split) { /* the join moves zeros for a slice this rank cannot give, and keeps nothing */
      const zs_status rc = zs_engine_tp_join(e, u, k, src, whole);
      if (rc != ZS_OK && rc != ZS_ERR_OUT_OF_MEMORY) {
        free(host);
        free(whole);
        return zs_engine_fail(e, rc);
      }
      if (rc != ZS_OK && *local_rc == ZS_OK) *local_rc = rc;
      src = rc == ZS_OK ? whole : NULL;
    }
    if (writer && have && src && *local_rc == ZS_OK) write_tensor(w, &ent[k], &ent[k].whole, src);
    free(host);
    free(whole);
  }
  return ZS_OK;
}

/* Rank 0: opens the temporary file and writes the size and the header. */
static zs_status open_out(out_file *w, const char *tmp, const char *hdr, size_t hlen) {
  w->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd < 0)
    return zs_err(ZS_ERR_IO, "zs_engine_export_safetensors: creating %s: %s", tmp, strerror(errno));
  unsigned char n8[8];
  for (int i = 0; i < 8; i++)
    n8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
  ZS_CHECK(zs_io_write(w->fd, n8, 8, tmp, 0, 0));
  return zs_io_write(w->fd, hdr, hlen, tmp, 0, 0);
}

/* Rank 0: fsync, rename, fsync of the directory. */
static zs_status close_out(out_file *w, const char *tmp, const char *path) {
  zs_status rc = w->rc;
  if (rc == ZS_OK) rc = zs_io_fsync(w->fd, tmp);
  if (close(w->fd) != 0 && rc == ZS_OK)
    rc = zs_err(ZS_ERR_IO, "zs_engine_export_safetensors: closing %s: %s", tmp, strerror(errno));
  w->fd = -1;
  if (rc == ZS_OK && rename(tmp, path) != 0)
    rc = zs_err(ZS_ERR_IO, "zs_engine_export_safetensors: renaming %s to %s: %s", tmp, path,
                strerror(errno));
  if (rc != ZS_OK) {
    unlink(tmp);
    return rc;
  }
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    dir[1] = 0;
  else if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  return zs_io_fsync_dir(dir);
}

zs_status zs_engine_export_safetensors_ex(zs_engine *e, const char *path,
                                          const zs_export_options *opt) {
  static const char fn[] = "zs_engine_export_safetensors";
  ZS_CHECK(zs_ckpt_check_state(e, fn));
  zs_engine_call(e, ZS_CALL_EXPORT, NULL);
  /* Every check below (the path, the options, the callback's names, the gather buffer) ends in
     one agreement, so every rank refuses together before the first gather. */
  zs_status rc = ZS_OK;
  if (!path || !*path || strlen(path) > 3000)
    rc = zs_err(ZS_ERR_INVALID_ARG, "%s: the path is NULL, empty or too long", fn);
  zs_export_options o;
  zs_export_options_default(&o);
  if (opt && opt->struct_size < offsetof(zs_export_options, dtype) + sizeof o.dtype)
    rc = zs_err(ZS_ERR_INVALID_ARG,
                "%s: the options' struct_size is %zu, which no zshard header gives: start from "
                "zs_export_options_default, then change fields",
                fn, opt->struct_size);
  else if (opt)
    memcpy(&o, opt, opt->struct_size < sizeof o ? opt->struct_size : sizeof o);
  if (rc == ZS_OK && o.dtype != ZS_F32 && o.dtype != ZS_BF16)
    rc = zs_err(ZS_ERR_INVALID_ARG, "%s: dtype %d: use ZS_F32 or ZS_BF16", fn, (int)o.dtype);
  int total = 0;
  size_t P = 0; /* the largest unit: one gather buffer for all */
  for (int i = 0; i < e->nunits; i++) {
    total += e->units[i]->ntensors;
    if (e->units[i]->lay.padded > P) P = e->units[i]->lay.padded;
  }
  entry *ent = calloc((size_t)total, sizeof *ent);
  char *hdr = NULL, tmp[4200];
  size_t hlen = 0;
  float *full = NULL;
  int need_buf = 0; /* a unit whose master is not whole in host memory is gathered */
  for (int i = 0; i < e->nunits; i++)
    if (!zs_state_master_in_host(e->units[i])) need_buf = 1;
  if (rc == ZS_OK && !ent) rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  if (rc == ZS_OK) rc = plan_entries(e, &o, ent, &total);
  if (rc == ZS_OK) rc = header_text(e, &o, ent, total, &hdr, &hlen);
  if (rc == ZS_OK && need_buf)
    rc = zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, P * 4, (void **)&full, NULL);
  /* The header says which tensors go out (the callback's names and skips): the same on every
     rank, or the ranks would join and gather different tensors. */
  const uint64_t hh = rc == ZS_OK ? XXH64(hdr, hlen, 0) : 0;
  uint64_t *rows = calloc((size_t)e->all_size * 2, sizeof *rows);
  if (rc == ZS_OK && !rows) rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  rc = zs_ckpt_agree_words(e, rc, &hh, 1, rows, fn);
  for (int r = 0; rc == ZS_OK && r < e->all_size; r++)
    if (rows[2 * (size_t)r + 1] != hh)
      rc = zs_err(ZS_ERR_INVALID_ARG,
                  "%s: rank %d exports other tensors than rank %d (names, shapes or skips: the "
                  "tensor callback must decide alike on every rank)",
                  fn, r, e->all_rank);
  free(rows);
  if (rc != ZS_OK) {
    if (full) zs_mem_free(&e->mem, ZS_MEM_BUFFERS, full, P * 4, NULL);
    free(hdr);
    free(ent);
    return rc;
  }
  out_file w = {-1, tmp, o.dtype, NULL, ZS_OK};
  if (e->all_rank == 0) {
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    w.chunk = malloc(CHUNK_ELEMS * 4);
    w.rc = w.chunk ? open_out(&w, tmp, hdr, hlen)
                   : zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  }
  free(hdr);
  zs_status tier_rc = ZS_OK;  /* this rank's first failed read of the NVMe tier */
  zs_status local_rc = ZS_OK; /* a tp join's own failure (out of host memory) */
  /* The slices are joined by rank 0's tp group alone (tp groups are consecutive ranks). */
  const int joins = e->tp_size > 1 && e->all_rank < e->tp_size;
  zs_coll_hash_pause(e->tp, 1);
  for (int i = 0, t0 = 0; i < e->nunits && rc == ZS_OK; t0 += e->units[i]->ntensors, i++)
    rc = export_unit(e, e->units[i], ent + t0, &w, full, joins, &tier_rc, &local_rc);
  zs_coll_hash_pause(e->tp, 0);
  if (full) zs_mem_free(&e->mem, ZS_MEM_BUFFERS, full, P * 4, NULL);
  int tier_failed = 0;
  if (rc == ZS_OK && (e->tiers.nvme || e->tp_size > 1)) {
    /* Every rank's tier verdict and own failures (a tp join's) before rank 0 publishes the file
       (the same units are on the tier on every rank, so every rank is here). */
    const uint64_t word = tier_rc != ZS_OK;
    uint64_t *all = calloc((size_t)e->all_size * 2, sizeof *all);
    if (!all) rc = zs_engine_fail(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of memory", fn));
    if (all) rc = zs_ckpt_agree_words(e, tier_rc != ZS_OK ? tier_rc : local_rc, &word, 1, all, fn);
    for (int r = 0; all && r < e->all_size && rc != ZS_OK && e->state != ZS_ENGINE_FAILED; r++)
      if (all[2 * (size_t)r + 1]) tier_failed = 1;
    free(all);
  }
  if (w.rc == ZS_OK && local_rc != ZS_OK) w.rc = local_rc;
  if (e->all_rank == 0) {
    if (rc != ZS_OK && w.rc == ZS_OK) w.rc = rc;
    if (w.fd >= 0) {
      const zs_status c = close_out(&w, tmp, path);
      if (rc == ZS_OK) rc = c;
    } else if (rc == ZS_OK) {
      rc = w.rc;
    }
    if (rc != ZS_OK) unlink(tmp);
  }
  free(w.chunk);
  free(ent);
  if (tier_failed) /* the tier's state could not be read: the engine fails on every rank */
    return zs_engine_fail_hard(
        e, zs_err_wrap(rc, "%s: the NVMe tier's I/O failed, so the engine has failed (destroy it)",
                       fn));
  if (e->state == ZS_ENGINE_FAILED) return rc;
  return zs_ckpt_agree(e, rc, fn);
}

zs_status zs_engine_export_safetensors(zs_engine *e, const char *path) {
  return zs_engine_export_safetensors_ex(e, path, NULL);
}
