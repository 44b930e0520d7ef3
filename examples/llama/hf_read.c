/* Reading a Hugging Face model directory (see hf_read.h). */
#include "hf_read.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/llama_layout.h"
#include "../common/llama_util.h"

#define LHF_MAX_HEADER (100u << 20) /* the format's own limit on the JSON header */
#define LHF_CHUNK (1u << 20)        /* elements converted per read */

/* Reads a whole small file (the index json) into a NUL-terminated buffer; NULL on failure. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *s = NULL;
  long n;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (64l << 20) &&
      fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1)) &&
      fread(s, 1, (size_t)n, f) == (size_t)n) {
    s[n] = 0;
  } else {
    free(s);
    s = NULL;
  }
  fclose(f);
  return s;
}

/* Adds file `name` (relative to dir) unless present; its index in *idx. 0 or -1. */
static int add_file(lhf_dir *d, const char *dir, const char *name, int *idx) {
  if (strchr(name, '/') || strcmp(name, "..") == 0)
    return llama_fail("%s: the index names the file \"%s\", which is not in the directory", dir,
                      name);
  char path[4096];
  LL_TRY(llama_join(dir, name, path, sizeof path));
  for (int i = 0; i < d->nfiles; i++)
    if (strcmp(d->path[i], path) == 0) {
      *idx = i;
      return 0;
    }
  FILE **f = realloc(d->f, (size_t)(d->nfiles + 1) * sizeof *f);
  if (f) d->f = f;
  char **p = realloc(d->path, (size_t)(d->nfiles + 1) * sizeof *p);
  if (p) d->path = p;
  uint64_t *o = realloc(d->data_off, (size_t)(d->nfiles + 1) * sizeof *o);
  if (o) d->data_off = o;
  if (!f || !p || !o || !(p[d->nfiles] = strdup(path))) return llama_fail("out of host memory");
  f[d->nfiles] = NULL;
  o[d->nfiles] = 0;
  *idx = d->nfiles++;
  return 0;
}

/* A header number that must be an integer in [0, max]: the value in *out, or -1 (NaN, infinite,
   negative, fractional or too large: an untrusted header must not reach a cast). */
static int header_uint(const cJSON *v, double max, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return -1;
  const double x = v->valuedouble;
  if (!isfinite(x) || x < 0 || x > max || x != floor(x)) return -1;
  *out = (uint64_t)x;
  return 0;
}

/* Parses one header entry into t (name set by the caller); -1 when inconsistent: offsets outside
   the data section, or a byte count (numel x dtype size, checked for overflow) other than the
   range's length. */
static int parse_entry(const cJSON *e, const char *path, uint64_t data_size, lhf_tensor *t) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
      cJSON_GetArraySize(off) != 2 || cJSON_GetArraySize(sh) > 8)
    return llama_fail("%s: entry %s lacks dtype, shape or data_offsets", path, t->name);
  snprintf(t->dtype, sizeof t->dtype, "%s", dt->valuestring);
  t->ndim = cJSON_GetArraySize(sh);
  uint64_t numel = 1;
  int overflow = 0;
  for (int i = 0; i < t->ndim; i++) {
    uint64_t n;
    if (header_uint(cJSON_GetArrayItem(sh, i), 4e15, &n))
      return llama_fail("%s: entry %s has a bad shape", path, t->name);
    t->shape[i] = (int64_t)n;
    if (n && numel > UINT64_MAX / n) overflow = 1;
    numel *= n;
  }
  uint64_t begin, end;
  if (header_uint(cJSON_GetArrayItem(off, 0), (double)data_size, &begin) ||
      header_uint(cJSON_GetArrayItem(off, 1), (double)data_size, &end) || begin > end ||
      end > data_size)
    return llama_fail("%s: entry %s has bad data_offsets (not integers in [0, %llu], the data's "
                      "size, or begin > end: truncated or corrupt)",
                      path, t->name, (unsigned long long)data_size);
  t->begin = begin;
  t->end = end;
  lst_dtype k;
  if (lst_dtype_parse(t->dtype, &k) == 0) {
    const uint64_t sz = lst_dtype_size(k);
    if (overflow || numel > UINT64_MAX / sz)
      return llama_fail("%s: entry %s: its shape's byte count overflows 64 bits (corrupt header)",
                        path, t->name);
    if (numel * sz != end - begin)
      return llama_fail("%s: entry %s: its offsets do not match its shape or the file "
                        "(truncated?)",
                        path, t->name);
  }
  return 0;
}

/* One tensor's byte range in its file's data section; i: its index in the directory. */
typedef struct {
  uint64_t begin, end;
  int i;
} lhf_range;

/* qsort order of lhf_range by begin. */
static int by_begin(const void *x, const void *y) {
  const lhf_range *a = x, *b = y;
  return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/* Refuses overlapping byte ranges among d's tensors [first, ntensors) (one file's): two tensors
   would alias the same bytes. Empty ranges overlap nothing. Sorted by begin, O(n log n) for a
   header of any size. 0 or -1 naming both tensors. */
static int check_overlap(const lhf_dir *d, int first, const char *path) {
  const int n = d->ntensors - first;
  if (n < 2) return 0;
  lhf_range *r = malloc((size_t)n * sizeof *r);
  if (!r) return llama_fail("out of host memory reading %s", path);
  int m = 0;
  for (int i = first; i < d->ntensors; i++)
    if (d->t[i].begin < d->t[i].end) r[m++] = (lhf_range){d->t[i].begin, d->t[i].end, i};
  qsort(r, (size_t)m, sizeof *r, by_begin);
  int rc = 0, far = 0; /* far: the range reaching furthest so far */
  for (int k = 1; k < m && rc == 0; k++) {
    if (r[k].begin < r[far].end)
      rc = llama_fail("%s: tensors %s and %s overlap in the file (corrupt header)", path,
                      d->t[r[far].i].name, d->t[r[k].i].name);
    if (r[k].end > r[far].end) far = k;
  }
  free(r);
  return rc;
}

/* Opens file i and reads its header; with `only` (the index's weight map) keeps the entries that
   the map assigns to this file. 0 or -1. */
static int read_header(lhf_dir *d, int fi, const cJSON *only, const char *fname) {
  const char *path = d->path[fi];
  FILE *f = d->f[fi] = fopen(path, "rb");
  if (!f) return llama_fail("cannot open %s", path);
  unsigned char len8[8];
  long fsize;
  if (fseek(f, 0, SEEK_END) != 0 || (fsize = ftell(f)) < 8 || fseek(f, 0, SEEK_SET) != 0 ||
      fread(len8, 1, 8, f) != 8)
    return llama_fail("%s: read error or not a safetensors file (shorter than 8 bytes)", path);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | len8[i];
  if (hlen < 2 || hlen > LHF_MAX_HEADER || hlen > (uint64_t)fsize - 8)
    return llama_fail("%s: header length %llu does not fit the file: not a safetensors file, or "
                      "truncated",
                      path, (unsigned long long)hlen);
  char *json = malloc(hlen + 1);
  if (!json) return llama_fail("out of host memory reading %s", path);
  if (fread(json, 1, hlen, f) != hlen) {
    free(json);
    return llama_fail("%s: read error in the header", path);
  }
  json[hlen] = 0;
  cJSON *h = cJSON_Parse(json);
  free(json);
  if (!h || !cJSON_IsObject(h)) {
    cJSON_Delete(h);
    return llama_fail("%s: the safetensors header is not a JSON object", path);
  }
  d->data_off[fi] = 8 + hlen;
  const uint64_t data_size = (uint64_t)fsize - d->data_off[fi];
  int rc = 0;
  const int first = d->ntensors;
  for (const cJSON *e = h->child; e && rc == 0; e = e->next) {
    if (strcmp(e->string, "__metadata__") == 0) continue;
    if (only) {
      const cJSON *m = cJSON_GetObjectItemCaseSensitive(only, e->string);
      if (!cJSON_IsString(m) || strcmp(m->valuestring, fname) != 0) {
        rc = llama_fail("%s holds %s, which model.safetensors.index.json %s", path, e->string,
                        m ? "places in another file" : "does not list");
        break;
      }
    }
    if (lhf_find(d, e->string) >= 0) {
      rc = llama_fail("tensor %s is stored twice (again in %s)", e->string, path);
      break;
    }
    lhf_tensor *nt = realloc(d->t, (size_t)(d->ntensors + 1) * sizeof *nt);
    if (!nt) {
      rc = llama_fail("out of host memory");
      break;
    }
    d->t = nt;
    lhf_tensor *t = &d->t[d->ntensors];
    memset(t, 0, sizeof *t);
    t->file = fi;
    if (!(t->name = strdup(e->string))) {
      rc = llama_fail("out of host memory");
      break;
    }
    d->ntensors++;
    rc = parse_entry(e, path, data_size, t);
  }
  if (rc == 0) rc = check_overlap(d, first, path);
  cJSON_Delete(h);
  return rc;
}

/* The sharded layout: the index's weight map names each tensor's file. */
static int open_index(lhf_dir *d, const char *dir, const char *index_path) {
  char *text = slurp(index_path);
  if (!text) return llama_fail("cannot read %s", index_path);
  cJSON *idx = cJSON_Parse(text);
  free(text);
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
  int rc = 0;
  if (!cJSON_IsObject(map)) rc = llama_fail("%s has no \"weight_map\" object", index_path);
  for (const cJSON *e = map ? map->child : NULL; e && rc == 0; e = e->next) {
    int fi;
    if (!cJSON_IsString(e)) {
      rc = llama_fail("%s: weight_map[%s] is not a file name", index_path, e->string);
    } else if ((rc = add_file(d, dir, e->valuestring, &fi)) == 0 && !d->f[fi]) {
      rc = read_header(d, fi, map, e->valuestring);
    }
  }
  for (const cJSON *e = map ? map->child : NULL; e && rc == 0; e = e->next)
    if (lhf_find(d, e->string) < 0)
      rc = llama_fail("%s lists %s in %s, but that file does not hold it", index_path, e->string,
                      e->valuestring);
  cJSON_Delete(idx);
  return rc;
}

int lhf_open(lhf_dir *d, const char *dir) {
  memset(d, 0, sizeof *d);
  char path[4096];
  LL_TRY(llama_join(dir, "model.safetensors.index.json", path, sizeof path));
  FILE *probe = fopen(path, "rb");
  if (probe) {
    fclose(probe);
    return open_index(d, dir, path);
  }
  LL_TRY(llama_join(dir, "model.safetensors", path, sizeof path));
  probe = fopen(path, "rb");
  if (!probe)
    return llama_fail("%s holds neither model.safetensors nor model.safetensors.index.json (a "
                      "Hugging Face model directory saved with safetensors)",
                      dir);
  fclose(probe);
  int fi;
  LL_TRY(add_file(d, dir, "model.safetensors", &fi));
  return read_header(d, fi, NULL, NULL);
}

void lhf_close(lhf_dir *d) {
  for (int i = 0; i < d->nfiles; i++) {
    if (d->f && d->f[i]) fclose(d->f[i]);
    if (d->path) free(d->path[i]);
  }
  for (int i = 0; i < d->ntensors; i++)
    free(d->t[i].name);
  free(d->f);
  free(d->path);
  free(d->data_off);
  free(d->t);
  memset(d, 0, sizeof *d);
}

int lhf_find(const lhf_dir *d, const char *name) {
  for (int i = 0; i < d->ntensors; i++)
    if (strcmp(d->t[i].name, name) == 0) return i;
  return -1;
}

int64_t lhf_numel(const lhf_dir *d, int i) {
  int64_t n = 1;
  for (int k = 0; k < d->t[i].ndim; k++)
    n *= d->t[i].shape[k];
  return n;
}

int lhf_read(const lhf_dir *d, int i, void *dst, lst_dtype to) {
  const lhf_tensor *t = &d->t[i];
  lst_dtype from;
  if (lst_dtype_parse(t->dtype, &from) != 0)
    return llama_fail("tensor %s has dtype %s: only F32, F16 and BF16 are read", t->name, t->dtype);
  FILE *f = d->f[t->file];
  const size_t n = (size_t)lhf_numel(d, i), es = lst_dtype_size(from), eo = lst_dtype_size(to);
  if (fseek(f, (long)(d->data_off[t->file] + t->begin), SEEK_SET) != 0)
    return llama_fail("%s: seek error reading %s", d->path[t->file], t->name);
  if (from == to) /* straight into dst */
    return fread(dst, es, n, f) == n
               ? 0
               : llama_fail("%s: read error in %s", d->path[t->file], t->name);
  unsigned char *buf = malloc(LHF_CHUNK * es);
  if (!buf) return llama_fail("out of host memory reading %s", t->name);
  int rc = 0;
  for (size_t done = 0; done < n && rc == 0;) {
    const size_t k = n - done < LHF_CHUNK ? n - done : LHF_CHUNK;
    if (fread(buf, es, k, f) != k)
      rc = llama_fail("%s: read error in %s", d->path[t->file], t->name);
    else
      lst_convert(buf, from, (unsigned char *)dst + done * eo, to, k);
    done += k;
  }
  free(buf);
  return rc;
}

/* "[a, b]" of a shape into buf. */
static const char *shape_str(int ndim, const int64_t *s, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)s[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

int lhf_check(const lhf_dir *d, const llama_config *c) {
  char name[160], a[96], b[96];
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, ds);
    for (int t = 0; t < nt; t++) {
      llama_hf_name(c, u, t, name, sizeof name);
      const int i = lhf_find(d, name);
      if (i < 0)
        return llama_fail("the weights lack %s (expected by the %s config.json, shape %s)", name,
                          llama_arch_name(c->arch),
                          shape_str(ds[t].ndim, ds[t].shape, a, sizeof a));
      const lhf_tensor *x = &d->t[i];
      int same = x->ndim == ds[t].ndim;
      for (int k = 0; same && k < x->ndim; k++)
        same = x->shape[k] == ds[t].shape[k];
      if (!same)
        return llama_fail("tensor %s has shape %s, but the config.json gives %s", name,
                          shape_str(x->ndim, x->shape, a, sizeof a),
                          shape_str(ds[t].ndim, ds[t].shape, b, sizeof b));
    }
  }
  for (int i = 0; i < d->ntensors; i++) {
    const lhf_tensor *x = &d->t[i];
    lst_dtype k;
    if (lst_dtype_parse(x->dtype, &k) != 0)
      return llama_fail("tensor %s has dtype %s: only F32, F16 and BF16 are read", x->name,
                        x->dtype);
    int u, t;
    if (llama_from_hf_name(c, x->name, &u, &t) == 0) continue;
    const size_t nl = strlen(x->name), sfx = strlen(".rotary_emb.inv_freq");
    if (nl > sfx && strcmp(x->name + nl - sfx, ".rotary_emb.inv_freq") == 0) continue;
    if (c->tied && strcmp(x->name, "lm_head.weight") == 0 && x->ndim == 2 &&
        x->shape[0] == c->vocab && x->shape[1] == c->hidden)
      continue;
    return llama_fail("the weights hold %s, which a %s model with this config.json does not have "
                      "(a different architecture, or a config that does not match the weights)",
                      x->name, llama_arch_name(c->arch));
  }
  return 0;
}
