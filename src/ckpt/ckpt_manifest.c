/* The checkpoint manifest: JSON written and read with cJSON, checked field by field on the way
 * in (it comes from disk: anything may be wrong with it), with its own xxh64. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/error.h"
#include "ckpt/ckpt_format.h"

#define CK_KEY "\"manifest_xxh64\""
#define MAX_EXACT 9007199254740992.0 /* 2^53: larger integers do not survive a JSON double */

void zs_ckpt_manifest_free(zs_ckpt_manifest *m) {
  if (!m) return;
  for (int i = 0; i < m->nunits && m->units; i++)
    free(m->units[i].t);
  for (int i = 0; i < m->nfiles && m->files; i++)
    free(m->files[i].segs);
  free(m->units);
  free(m->files);
  free(m->user_meta);
  memset(m, 0, sizeof *m);
}

uint64_t zs_ckpt_slice_numel(const zs_ckpt_tensor *t, int T) {
  uint64_t n = 1;
  for (int d = 0; d < t->ndim; d++)
    n *= (uint64_t)t->shape[d];
  return (t->tp == ZS_TP_SPLIT_DIM0 || t->tp == ZS_TP_SPLIT_DIM1) && T > 1 ? n / (uint64_t)T : n;
}

static const char *dtype_name(zs_dtype d) {
  return d == ZS_BF16 ? "bf16" : "fp32";
}

/* ---- writing ---- */

static int add_u64(cJSON *o, const char *k, uint64_t v) {
  return cJSON_AddNumberToObject(o, k, (double)v) != NULL;
}
static int add_hex(cJSON *o, const char *k, uint64_t v) {
  char s[24];
  snprintf(s, sizeof s, "%016" PRIx64, v);
  return cJSON_AddStringToObject(o, k, s) != NULL;
}

static int write_units(cJSON *root, const zs_ckpt_manifest *m) {
  cJSON *us = cJSON_AddArrayToObject(root, "units");
  if (!us) return 0;
  for (int i = 0; i < m->nunits; i++) {
    const zs_ckpt_unit *u = &m->units[i];
    cJSON *o = cJSON_CreateObject(), *ts;
    if (!o || !cJSON_AddItemToArray(us, o)) return 0;
    if (!cJSON_AddStringToObject(o, "name", u->name) || !add_u64(o, "numel", u->numel) ||
        (u->steps >= 0 && !cJSON_AddNumberToObject(o, "steps", (double)u->steps)) ||
        !(ts = cJSON_AddArrayToObject(o, "tensors")))
      return 0;
    for (int k = 0; k < u->ntensors; k++) {
      cJSON *t = cJSON_CreateObject(), *sh;
      if (!t || !cJSON_AddItemToArray(ts, t)) return 0;
      if (!cJSON_AddStringToObject(t, "name", u->t[k].name) ||
          !(sh = cJSON_AddArrayToObject(t, "shape")) ||
          !cJSON_AddNumberToObject(t, "no_weight_decay", u->t[k].no_weight_decay) ||
          (u->t[k].group && !cJSON_AddNumberToObject(t, "group", u->t[k].group)) ||
          (u->t[k].tp && !cJSON_AddNumberToObject(t, "tp", u->t[k].tp)))
        return 0;
      for (int d = 0; d < u->t[k].ndim; d++) {
        cJSON *n = cJSON_CreateNumber((double)u->t[k].shape[d]);
        if (!n || !cJSON_AddItemToArray(sh, n)) return 0;
      }
    }
  }
  return 1;
}

static int write_files(cJSON *root, const zs_ckpt_manifest *m) {
  cJSON *fs = cJSON_AddArrayToObject(root, "files");
  if (!fs) return 0;
  for (int i = 0; i < m->nfiles; i++) {
    const zs_ckpt_file *f = &m->files[i];
    cJSON *o = cJSON_CreateObject(), *ss;
    if (!o || !cJSON_AddItemToArray(fs, o)) return 0;
    if (!cJSON_AddStringToObject(o, "name", f->name) || !add_u64(o, "bytes", f->bytes) ||
        !add_u64(o, "data_bytes", f->data_bytes) || !add_u64(o, "nblocks", f->nblocks) ||
        !add_hex(o, "header_xxh64", f->header_xxh64) ||
        !(ss = cJSON_AddArrayToObject(o, "segments")))
      return 0;
    for (int k = 0; k < f->nsegs; k++) {
      cJSON *s = cJSON_CreateObject();
      if (!s || !cJSON_AddItemToArray(ss, s)) return 0;
      if (!cJSON_AddNumberToObject(s, "unit", f->segs[k].unit) ||
          !add_u64(s, "begin", f->segs[k].begin) || !add_u64(s, "end", f->segs[k].end) ||
          !add_u64(s, "offset", f->segs[k].offset) ||
          (m->tp_size > 1 && !cJSON_AddNumberToObject(s, "tp", f->segs[k].tp)) ||
          (f->segs[k].narrays < m->narrays &&
           !cJSON_AddNumberToObject(s, "narrays", f->segs[k].narrays)))
        return 0;
    }
  }
  return 1;
}

/* "arrays": the segments' array names (format version 2 on). */
static int add_arrays(cJSON *r, const zs_ckpt_manifest *m) {
  cJSON *as = cJSON_AddArrayToObject(r, "arrays");
  if (!as) return 0;
  for (int i = 0; i < m->narrays; i++) {
    cJSON *s = cJSON_CreateString(m->arrays[i]);
    if (!s || !cJSON_AddItemToArray(as, s)) return 0;
  }
  return 1;
}

/* The names of zs_param_group's fields, in its order. */
static const char *const group_keys[6] = {"lr_scale", "weight_decay", "beta1",
                                          "beta2",    "eps",          "momentum"};
static void group_values(const zs_param_group *g, float v[6]) {
  v[0] = g->lr_scale, v[1] = g->weight_decay, v[2] = g->beta1, v[3] = g->beta2, v[4] = g->eps,
  v[5] = g->momentum;
}

static int write_groups(cJSON *r, const zs_ckpt_manifest *m) {
  if (m->ngroups <= 1) return 1;
  cJSON *gs = cJSON_AddArrayToObject(r, "groups");
  if (!gs) return 0;
  for (int i = 1; i < m->ngroups; i++) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(gs, o)) return 0;
    float v[6];
    group_values(&m->groups[i], v);
    for (int k = 0; k < 6; k++)
      if (!cJSON_AddNumberToObject(o, group_keys[k], v[k])) return 0;
    if (m->group_optimizer[i][0] && !cJSON_AddStringToObject(o, "optimizer", m->group_optimizer[i]))
      return 0;
  }
  return 1;
}

/* The program's blob as lowercase hex (key "user_meta"), when there is one. */
static int write_user_meta(cJSON *r, const zs_ckpt_manifest *m) {
  if (!m->user_meta_bytes) return 1;
  char *hex = malloc(2 * m->user_meta_bytes + 1);
  if (!hex) return 0;
  for (size_t i = 0; i < m->user_meta_bytes; i++)
    snprintf(hex + 2 * i, 3, "%02x", m->user_meta[i]);
  const int ok = cJSON_AddStringToObject(r, "user_meta", hex) != NULL;
  free(hex);
  return ok;
}

static int write_body(cJSON *r, const zs_ckpt_manifest *m) {
  cJSON *sh, *ad;
  return cJSON_AddStringToObject(r, "format", "zshard-checkpoint") &&
         cJSON_AddNumberToObject(r, "format_version", m->format_version) &&
         cJSON_AddStringToObject(r, "zshard_version", m->zshard_version) &&
         add_u64(r, "seq", m->seq) && cJSON_AddNumberToObject(r, "step", (double)m->step) &&
         cJSON_AddNumberToObject(r, "steps_done", (double)m->steps_done) &&
         cJSON_AddNumberToObject(r, "world_size", m->world_size) &&
         cJSON_AddNumberToObject(r, "shard_group_size", m->shard_group_size) &&
         cJSON_AddNumberToObject(r, "stage", m->stage) &&
         (m->tp_size <= 1 || cJSON_AddNumberToObject(r, "tp_size", m->tp_size)) &&
         (sh = cJSON_AddObjectToObject(r, "sharded")) &&
         cJSON_AddNumberToObject(sh, "params", m->shard_params) &&
         cJSON_AddNumberToObject(sh, "grads", m->shard_grads) &&
         cJSON_AddNumberToObject(sh, "optimizer", m->shard_optimizer) &&
         cJSON_AddNumberToObject(r, "offload", m->offload) &&
         cJSON_AddStringToObject(r, "param_dtype", dtype_name(m->param_dtype)) &&
         cJSON_AddStringToObject(r, "reduce_dtype", dtype_name(m->reduce_dtype)) &&
         cJSON_AddNumberToObject(r, "deterministic", m->deterministic) &&
         (!m->optimizer[0] || cJSON_AddStringToObject(r, "optimizer", m->optimizer)) &&
         (m->format_version < 2 || add_arrays(r, m)) &&
         (ad = cJSON_AddObjectToObject(r, "adamw")) && cJSON_AddNumberToObject(ad, "lr", m->lr) &&
         cJSON_AddNumberToObject(ad, "beta1", m->beta1) &&
         cJSON_AddNumberToObject(ad, "beta2", m->beta2) &&
         cJSON_AddNumberToObject(ad, "eps", m->eps) &&
         cJSON_AddNumberToObject(ad, "weight_decay", m->weight_decay) &&
         cJSON_AddNumberToObject(ad, "max_grad_norm", m->max_grad_norm) && write_groups(r, m) &&
         write_user_meta(r, m) && add_u64(r, "block_bytes", m->block_bytes) && write_units(r, m) &&
         write_files(r, m) && add_hex(r, "manifest_xxh64", 0);
}

/* The 16 hex digits of the checksum field in text (the last occurrence of its key), or NULL. */
static char *checksum_digits(char *text, size_t len) {
  const size_t kl = strlen(CK_KEY);
  char *hit = NULL;
  for (size_t i = 0; i + kl <= len; i++)
    if (memcmp(text + i, CK_KEY, kl) == 0) hit = text + i + kl;
  if (!hit) return NULL;
  char *p = hit, *end = text + len;
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  if (p >= end || *p != ':') return NULL;
  p++;
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  if (end - p < 18 || *p != '"' || p[17] != '"') return NULL;
  return p + 1;
}

zs_status zs_ckpt_manifest_write(const zs_ckpt_manifest *m, char **text) {
  *text = NULL;
  cJSON *root = cJSON_CreateObject();
  char *s = NULL;
  if (root && write_body(root, m)) s = cJSON_Print(root);
  cJSON_Delete(root);
  if (!s) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory writing the manifest");
  const size_t len = strlen(s);
  char *d = checksum_digits(s, len);
  if (!d) {
    free(s);
    return zs_err(ZS_ERR_INVALID_ARG, "manifest: checksum field not found (a unit named like it?)");
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016" PRIx64, (uint64_t)XXH64(s, len, 0));
  memcpy(d, hex, 16);
  *text = s;
  return ZS_OK;
}

/* ---- reading: every field checked ---- */

static zs_status bad(const char *what) {
  return zs_err(ZS_ERR_CORRUPT, "checkpoint manifest: %s", what);
}

/* A non-negative integer field <= max. */
static int get_u64(const cJSON *o, const char *k, uint64_t max, uint64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsNumber(v)) return 0;
  const double d = v->valuedouble;
  if (!(d >= 0) || d > MAX_EXACT || d > (double)max || floor(d) != d) return 0;
  *out = (uint64_t)d;
  return 1;
}
static int get_int(const cJSON *o, const char *k, int max, int *out) {
  uint64_t v;
  if (!get_u64(o, k, (uint64_t)max, &v)) return 0;
  *out = (int)v;
  return 1;
}
static int get_float(const cJSON *o, const char *k, float *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  /* Finite as a float too: a value past FLT_MAX would be written back as null. */
  if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) <= FLT_MAX)) return 0;
  *out = (float)v->valuedouble;
  return 1;
}
static int get_str(const cJSON *o, const char *k, char *out, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsString(v) || !v->valuestring) return 0;
  const size_t n = strlen(v->valuestring);
  if (n == 0 || n >= cap) return 0;
  memcpy(out, v->valuestring, n + 1);
  return 1;
}
static int get_hex(const cJSON *o, const char *k, uint64_t *out) {
  char s[24];
  if (!get_str(o, k, s, sizeof s) || strlen(s) != 16) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 16; i++) {
    const char c = s[i];
    const int dgt = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (dgt < 0) return 0;
    v = v << 4 | (uint64_t)dgt;
  }
  *out = v;
  return 1;
}
static int get_dtype(const cJSON *o, const char *k, zs_dtype *out) {
  char s[8];
  if (!get_str(o, k, s, sizeof s)) return 0;
  if (strcmp(s, "fp32") == 0)
    *out = ZS_F32;
  else if (strcmp(s, "bf16") == 0)
    *out = ZS_BF16;
  else
    return 0;
  return 1;
}

/* The program's blob (optional): hex digits, at most ZS_USER_META_MAX bytes. */
static zs_status parse_user_meta(const cJSON *root, zs_ckpt_manifest *m) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "user_meta");
  if (!v) return ZS_OK;
  const size_t len = cJSON_IsString(v) ? strlen(v->valuestring) : 1;
  if (len % 2 || len == 0 || len / 2 > ZS_USER_META_MAX)
    return bad("\"user_meta\" is not 1 to 65536 bytes of hex");
  if (!(m->user_meta = malloc(len / 2)))
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory reading the manifest");
  for (size_t i = 0; i < len / 2; i++) {
    unsigned b = 0;
    for (int k = 0; k < 2; k++) {
      const char c = v->valuestring[2 * i + (size_t)k];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return bad("\"user_meta\" holds a character that is not a hex digit");
      b = b * 16 + (unsigned)d;
    }
    m->user_meta[i] = (unsigned char)b;
  }
  m->user_meta_bytes = len / 2;
  return ZS_OK;
}

/* The parameter groups after group 0 (optional: a manifest without them has group 0 only). */
static zs_status parse_groups(const cJSON *root, zs_ckpt_manifest *m) {
  m->ngroups = 1;
  const cJSON *gs = cJSON_GetObjectItemCaseSensitive(root, "groups"), *o;
  if (!gs) return ZS_OK;
  if (!cJSON_IsArray(gs) || cJSON_GetArraySize(gs) < 1 ||
      cJSON_GetArraySize(gs) >= ZS_MAX_PARAM_GROUPS)
    return bad("the parameter groups are not a list of 1 to 63 groups");
  cJSON_ArrayForEach(o, gs) {
    float v[6];
    for (int k = 0; k < 6; k++)
      if (!cJSON_IsObject(o) || !get_float(o, group_keys[k], &v[k]))
        return bad("a parameter group has a missing or non-finite value");
    /* Its optimizer's name (absent before groups had their own: the checkpoint's). */
    char *name = m->group_optimizer[m->ngroups];
    name[0] = '\0';
    if (cJSON_GetObjectItemCaseSensitive(o, "optimizer") &&
        !get_str(o, "optimizer", name, sizeof m->group_optimizer[0]))
      return bad("a parameter group's optimizer is not a short name");
    m->groups[m->ngroups++] = (zs_param_group){.struct_size = sizeof(zs_param_group),
                                               .lr_scale = v[0],
                                               .weight_decay = v[1],
                                               .beta1 = v[2],
                                               .beta2 = v[3],
                                               .eps = v[4],
                                               .momentum = v[5],
                                               .optimizer = NULL};
  }
  return ZS_OK;
}

static zs_status parse_units(const cJSON *root, zs_ckpt_manifest *m) {
  const cJSON *us = cJSON_GetObjectItemCaseSensitive(root, "units");
  const int n = cJSON_GetArraySize(us);
  if (!cJSON_IsArray(us) || n < 1 || n > (1 << 24)) return bad("\"units\" is not a non-empty list");
  m->units = calloc((size_t)n, sizeof *m->units);
  if (!m->units) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory reading the manifest");
  m->nunits = n;
  int i = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, us) {
    zs_ckpt_unit *u = &m->units[i++];
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "tensors");
    const int nt = cJSON_GetArraySize(ts);
    if (!get_str(o, "name", u->name, sizeof u->name) ||
        !get_u64(o, "numel", UINT64_MAX, &u->numel) || !cJSON_IsArray(ts) || nt < 1 ||
        nt > (1 << 16))
      return zs_err(ZS_ERR_CORRUPT,
                    "checkpoint manifest: unit %d has a bad name, numel or tensor "
                    "list",
                    i - 1);
    uint64_t steps = 0;
    u->steps = -1;
    if (cJSON_GetObjectItemCaseSensitive(o, "steps")) {
      if (m->format_version < 3 || !get_u64(o, "steps", (uint64_t)m->step, &steps))
        return zs_err(ZS_ERR_CORRUPT, "checkpoint manifest: unit '%s' has a bad step count",
                      u->name);
      u->steps = (int64_t)steps;
    }
    if (!(u->t = calloc((size_t)nt, sizeof *u->t)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory reading the manifest");
    u->ntensors = nt;
    uint64_t total = 0;
    int k = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, ts) {
      zs_ckpt_tensor *d = &u->t[k++];
      const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape"), *x;
      d->ndim = cJSON_GetArraySize(sh);
      if (!get_str(t, "name", d->name, sizeof d->name) || !cJSON_IsArray(sh) || d->ndim < 1 ||
          d->ndim > 4 || !get_int(t, "no_weight_decay", 1, &d->no_weight_decay) ||
          (cJSON_GetObjectItemCaseSensitive(t, "group") &&
           !get_int(t, "group", m->ngroups - 1, &d->group)) ||
          (cJSON_GetObjectItemCaseSensitive(t, "tp") &&
           !get_int(t, "tp", ZS_TP_PARTIAL_GRAD, &d->tp)))
        return zs_err(ZS_ERR_CORRUPT, "checkpoint manifest: unit '%s' tensor %d is malformed",
                      u->name, k - 1);
      uint64_t numel = 1;
      int dd = 0;
      cJSON_ArrayForEach(x, sh) {
        const double v = cJSON_IsNumber(x) ? x->valuedouble : -1;
        if (!(v >= 0) || v > MAX_EXACT || floor(v) != v ||
            (v >= 1 && numel > (uint64_t)MAX_EXACT / (uint64_t)v))
          return zs_err(ZS_ERR_CORRUPT,
                        "checkpoint manifest: unit '%s' tensor '%s' has a bad shape", u->name,
                        d->name);
        d->shape[dd++] = (int64_t)v;
        numel *= (uint64_t)v;
      }
      /* A split dimension holds tp_size equal slices. */
      const int sd = d->tp == ZS_TP_SPLIT_DIM0 ? 0 : d->tp == ZS_TP_SPLIT_DIM1 ? 1 : -1;
      if (sd >= d->ndim || (sd >= 0 && d->shape[sd] % m->tp_size != 0))
        return zs_err(ZS_ERR_CORRUPT,
                      "checkpoint manifest: unit '%s' tensor '%s' is split along a dimension it "
                      "lacks or that %d tp ranks cannot share equally",
                      u->name, d->name, m->tp_size);
      total += zs_ckpt_slice_numel(d, m->tp_size);
      if (total > (uint64_t)MAX_EXACT) return bad("a unit's size overflows");
    }
    if (total != u->numel)
      return zs_err(ZS_ERR_CORRUPT,
                    "checkpoint manifest: unit '%s' says %" PRIu64
                    " elements, its tensors add up to %" PRIu64,
                    u->name, u->numel, total);
  }
  return ZS_OK;
}

/* One file entry; segments must lie inside their unit and the file's data. */
static zs_status parse_file(const cJSON *o, zs_ckpt_manifest *m, zs_ckpt_file *f, int idx) {
  const cJSON *ss = cJSON_GetObjectItemCaseSensitive(o, "segments"), *s;
  const int ns = cJSON_GetArraySize(ss);
  if (!get_str(o, "name", f->name, sizeof f->name) || !get_u64(o, "bytes", UINT64_MAX, &f->bytes) ||
      !get_u64(o, "data_bytes", UINT64_MAX, &f->data_bytes) ||
      !get_u64(o, "nblocks", UINT64_MAX, &f->nblocks) ||
      !get_hex(o, "header_xxh64", &f->header_xxh64) || !cJSON_IsArray(ss) || ns > (1 << 24))
    return zs_err(ZS_ERR_CORRUPT, "checkpoint manifest: file entry %d is malformed", idx);
  if (strchr(f->name, '/') || strcmp(f->name, ".") == 0 || strcmp(f->name, "..") == 0)
    return zs_err(ZS_ERR_CORRUPT, "checkpoint manifest: file name '%s' is not a plain name",
                  f->name);
  if (f->nblocks != zs_ckpt_nblocks(f->data_bytes, m->block_bytes) ||
      f->bytes != zs_ckpt_data_offset(zs_ckpt_files_data_version(m->format_version), f->nblocks) +
                      f->data_bytes)
    return zs_err(ZS_ERR_CORRUPT, "checkpoint manifest: file '%s' sizes do not add up", f->name);
  if (ns > 0 && !(f->segs = calloc((size_t)ns, sizeof *f->segs)))
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory reading the manifest");
  f->nsegs = ns;
  int k = 0;
  uint64_t at = 0; /* the writers lay the segments back to back over the whole data */
  cJSON_ArrayForEach(s, ss) {
    zs_ckpt_seg *g = &f->segs[k++];
    g->narrays = m->narrays;
    if (!get_int(s, "unit", m->nunits - 1, &g->unit) ||
        !get_u64(s, "begin", UINT64_MAX, &g->begin) || !get_u64(s, "end", UINT64_MAX, &g->end) ||
        !get_u64(s, "offset", UINT64_MAX, &g->offset) ||
        (cJSON_GetObjectItemCaseSensitive(s, "tp") && !get_int(s, "tp", m->tp_size - 1, &g->tp)) ||
        (cJSON_GetObjectItemCaseSensitive(s, "narrays") &&
         (m->format_version < 6 || !get_int(s, "narrays", m->narrays, &g->narrays) ||
          g->narrays < 1)) ||
        g->begin >= g->end || g->end > m->units[g->unit].numel || g->offset > f->data_bytes ||
        (g->end - g->begin) * 4 * (uint64_t)g->narrays > f->data_bytes - g->offset)
      return zs_err(ZS_ERR_CORRUPT, "checkpoint manifest: file '%s' segment %d is out of range",
                    f->name, k - 1);
    if (g->offset != at)
      return zs_err(ZS_ERR_CORRUPT,
                    "checkpoint manifest: file '%s' segment %d starts at byte %" PRIu64
                    " of the data, not where the one before it ends (%" PRIu64 ")",
                    f->name, k - 1, g->offset, at);
    at += (g->end - g->begin) * 4 * (uint64_t)g->narrays;
  }
  if (at != f->data_bytes)
    return zs_err(ZS_ERR_CORRUPT,
                  "checkpoint manifest: file '%s' has %" PRIu64
                  " bytes of data, its segments %" PRIu64,
                  f->name, f->data_bytes, at);
  return ZS_OK;
}

static zs_status parse_files(const cJSON *root, zs_ckpt_manifest *m) {
  const cJSON *fs = cJSON_GetObjectItemCaseSensitive(root, "files"), *o;
  const int n = cJSON_GetArraySize(fs);
  if (!cJSON_IsArray(fs) || n < 1 || n > (1 << 24)) return bad("\"files\" is not a non-empty list");
  if (!(m->files = calloc((size_t)n, sizeof *m->files)))
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory reading the manifest");
  m->nfiles = n;
  int i = 0;
  cJSON_ArrayForEach(o, fs) {
    ZS_CHECK(parse_file(o, m, &m->files[i], i));
    i++;
  }
  return ZS_OK;
}

/* The segments' arrays: version 1's AdamW three, or the "arrays" list ("master" first). */
static zs_status parse_arrays(const cJSON *r, zs_ckpt_manifest *m) {
  if (m->format_version == 1) {
    static const char *v1[3] = {"master", "exp_avg", "exp_avg_sq"};
    m->narrays = 3;
    for (int i = 0; i < 3; i++)
      snprintf(m->arrays[i], sizeof m->arrays[i], "%s", v1[i]);
    return ZS_OK;
  }
  const cJSON *as = cJSON_GetObjectItemCaseSensitive(r, "arrays"), *a;
  const int n = cJSON_IsArray(as) ? cJSON_GetArraySize(as) : 0;
  if (n < 1 || n > ZS_CKPT_MAX_ARRAYS) return bad("\"arrays\" is not a list of 1 to 3 names");
  m->narrays = 0;
  cJSON_ArrayForEach(a, as) {
    if (!cJSON_IsString(a) || strlen(a->valuestring) >= sizeof m->arrays[0] || !a->valuestring[0])
      return bad("an array's name in \"arrays\" is not a short string");
    snprintf(m->arrays[m->narrays++], sizeof m->arrays[0], "%s", a->valuestring);
  }
  if (strcmp(m->arrays[0], "master") != 0) return bad("\"arrays\" does not begin with \"master\"");
  return ZS_OK;
}

static zs_status parse_body(const cJSON *r, zs_ckpt_manifest *m) {
  char fmt[32];
  if (!get_str(r, "format", fmt, sizeof fmt) || strcmp(fmt, "zshard-checkpoint") != 0)
    return bad("not a zshard checkpoint (\"format\" is not \"zshard-checkpoint\")");
  if (!get_int(r, "format_version", 1 << 30, &m->format_version))
    return bad("\"format_version\" is missing");
  if (m->format_version < ZS_CKPT_FORMAT_OLDEST || m->format_version > ZS_CKPT_FORMAT_VERSION)
    return zs_err(ZS_ERR_CORRUPT,
                  "checkpoint manifest: unknown format version %d (this library reads versions "
                  "%d to %d): it was written by another zshard version; load it with that version",
                  m->format_version, ZS_CKPT_FORMAT_OLDEST, ZS_CKPT_FORMAT_VERSION);
  ZS_CHECK(parse_arrays(r, m));
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(r, "sharded");
  const cJSON *ad = cJSON_GetObjectItemCaseSensitive(r, "adamw");
  uint64_t step, done, off;
  if (!get_str(r, "zshard_version", m->zshard_version, sizeof m->zshard_version) ||
      !get_u64(r, "seq", UINT64_MAX, &m->seq) || !get_u64(r, "step", INT64_MAX, &step) ||
      !get_u64(r, "steps_done", INT64_MAX, &done) ||
      !get_int(r, "world_size", 1 << 24, &m->world_size) || m->world_size < 1 ||
      !get_int(r, "shard_group_size", 1 << 24, &m->shard_group_size) || m->shard_group_size < 1 ||
      m->world_size % m->shard_group_size != 0 || !get_int(r, "stage", 3, &m->stage) ||
      !cJSON_IsObject(sh) || !get_int(sh, "params", 1, &m->shard_params) ||
      !get_int(sh, "grads", 1, &m->shard_grads) ||
      !get_int(sh, "optimizer", 1, &m->shard_optimizer) || !get_u64(r, "offload", 3, &off) ||
      !get_dtype(r, "param_dtype", &m->param_dtype) ||
      !get_dtype(r, "reduce_dtype", &m->reduce_dtype) ||
      !get_int(r, "deterministic", 1, &m->deterministic) || !cJSON_IsObject(ad) ||
      !get_float(ad, "lr", &m->lr) || !get_float(ad, "beta1", &m->beta1) ||
      !get_float(ad, "beta2", &m->beta2) || !get_float(ad, "eps", &m->eps) ||
      !get_float(ad, "weight_decay", &m->weight_decay) ||
      !get_float(ad, "max_grad_norm", &m->max_grad_norm) ||
      !get_u64(r, "block_bytes", (uint64_t)1 << 40, &m->block_bytes) || m->block_bytes < 64)
    return bad("a header field is missing or out of range");
  if (!cJSON_GetObjectItemCaseSensitive(r, "optimizer"))
    strcpy(m->optimizer, "adamw");
  else if (!get_str(r, "optimizer", m->optimizer, sizeof m->optimizer))
    return bad("the optimizer's name is not a short string");
  m->tp_size = 1;
  if (cJSON_GetObjectItemCaseSensitive(r, "tp_size") &&
      (m->format_version < 4 || !get_int(r, "tp_size", 1 << 16, &m->tp_size) || m->tp_size < 1))
    return bad("\"tp_size\" is not a positive count (or comes before format version 4)");
  m->step = (int64_t)step;
  m->steps_done = (int64_t)done;
  m->offload = (unsigned)off;
  ZS_CHECK(parse_groups(r, m));
  ZS_CHECK(parse_user_meta(r, m));
  ZS_CHECK(parse_units(r, m));
  return parse_files(r, m);
}

zs_status zs_ckpt_manifest_parse(const char *text, size_t len, zs_ckpt_manifest *m) {
  memset(m, 0, sizeof *m);
  char *copy = malloc(len + 1);
  if (!copy) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory reading the manifest");
  memcpy(copy, text, len);
  copy[len] = 0;
  zs_status rc;
  char *d = checksum_digits(copy, len);
  uint64_t want = 0;
  for (int i = 0; d && i < 16; i++) {
    const char c = d[i];
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0)
      d = NULL;
    else
      want = want << 4 | (uint64_t)v;
  }
  if (!d) {
    free(copy);
    return bad("no \"manifest_xxh64\" checksum (damaged or not a zshard manifest)");
  }
  memset(d, '0', 16);
  const uint64_t got = XXH64(copy, len, 0);
  if (got != want) {
    free(copy);
    return zs_err(ZS_ERR_CORRUPT,
                  "checkpoint manifest: checksum mismatch (stored %016" PRIx64
                  ", computed %016" PRIx64 "): the file is damaged",
                  want, got);
  }
  rc = zs_ckpt_manifest_parse_json(copy, len, m);
  free(copy);
  return rc;
}

zs_status zs_ckpt_manifest_parse_json(const char *text, size_t len, zs_ckpt_manifest *m) {
  memset(m, 0, sizeof *m);
  cJSON *root = cJSON_ParseWithLength(text, len);
  zs_status rc = cJSON_IsObject(root) ? parse_body(root, m) : bad("not a JSON object");
  cJSON_Delete(root);
  if (rc != ZS_OK) zs_ckpt_manifest_free(m);
  return rc;
}
