/* Writing Hugging Face weights, sharded and streamed (see hf_write.h). */
#include "hf_write.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "../common/llama_util.h"

#define LHW_CHUNK (1u << 20) /* elements converted per write */

void lhw_shard_name(int k, int n, char *buf, size_t size) {
  if (n == 1)
    snprintf(buf, size, "model.safetensors");
  else
    snprintf(buf, size, "model-%05d-of-%05d.safetensors", k + 1, n);
}

static uint64_t entry_bytes(const lhw_entry *e, lst_dtype dt) {
  uint64_t b = lst_dtype_size(dt);
  for (int i = 0; i < e->ndim; i++)
    b *= (uint64_t)e->shape[i];
  return b;
}

int lhw_open(lhw_writer *w, const char *dir, const lhw_entry *entries, int n, lst_dtype dtype,
             uint64_t max_shard_bytes) {
  memset(w, 0, sizeof *w);
  if (snprintf(w->dir, sizeof w->dir, "%s", dir) >= (int)sizeof w->dir)
    return llama_fail("path too long: %s", dir);
  w->e = malloc((size_t)(n > 0 ? n : 1) * sizeof *w->e);
  w->shard = malloc((size_t)(n > 0 ? n : 1) * sizeof *w->shard);
  w->offset = malloc((size_t)(n > 0 ? n : 1) * sizeof *w->offset);
  w->buf = malloc(LHW_CHUNK * 4);
  if (!w->e || !w->shard || !w->offset || !w->buf) {
    lhw_abort(w);
    return llama_fail("out of host memory");
  }
  memcpy(w->e, entries, (size_t)n * sizeof *w->e);
  w->n = n;
  w->dtype = dtype;
  uint64_t used = 0;
  for (int i = 0; i < n; i++) {
    const lhw_entry *e = &entries[i];
    int bad = !e->name[0] || e->ndim < 1 || e->ndim > 4;
    for (int k = 0; !bad && k < e->ndim; k++)
      bad = e->shape[k] < 1;
    for (int j = 0; !bad && j < i; j++)
      bad = strcmp(entries[j].name, e->name) == 0;
    if (bad) {
      lhw_abort(w);
      return llama_fail("cannot write tensor \"%s\": an empty or repeated name, or a bad shape",
                        e->name);
    }
    const uint64_t b = entry_bytes(e, dtype);
    if (i > 0 && max_shard_bytes && used + b > max_shard_bytes) { /* a new file */
      w->nshards++;
      used = 0;
    }
    w->shard[i] = w->nshards;
    w->offset[i] = used;
    used += b;
  }
  w->nshards++;
  w->open_shard = -1;
  return 0;
}

/* Writes shard k's header: the JSON of its tensors padded with spaces to a multiple of 8. */
static int start_shard(lhw_writer *w, int k) {
  char name[64], path[4200];
  lhw_shard_name(k, w->nshards, name, sizeof name);
  LL_TRY(llama_join(w->dir, name, path, sizeof path));
  cJSON *h = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
  cJSON_AddStringToObject(meta, "format", "pt");
  for (int i = 0; i < w->n; i++) {
    if (w->shard[i] != k) continue;
    cJSON *e = cJSON_AddObjectToObject(h, w->e[i].name);
    cJSON_AddStringToObject(e, "dtype", lst_dtype_name(w->dtype));
    cJSON *s = cJSON_AddArrayToObject(e, "shape");
    for (int d = 0; d < w->e[i].ndim; d++)
      cJSON_AddItemToArray(s, cJSON_CreateNumber((double)w->e[i].shape[d]));
    cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)w->offset[i]));
    cJSON_AddItemToArray(
        o, cJSON_CreateNumber((double)(w->offset[i] + entry_bytes(&w->e[i], w->dtype))));
  }
  char *json = cJSON_PrintUnformatted(h);
  cJSON_Delete(h);
  if (!json) return llama_fail("out of host memory writing %s", path);
  const size_t len = strlen(json), padded = (len + 7) / 8 * 8;
  unsigned char len8[8];
  for (int i = 0; i < 8; i++)
    len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  w->f = fopen(path, "wb");
  int ok = w->f && fwrite(len8, 1, 8, w->f) == 8 && fwrite(json, 1, len, w->f) == len;
  for (size_t i = len; ok && i < padded; i++)
    ok = fputc(' ', w->f) != EOF;
  free(json);
  w->open_shard = k;
  return ok ? 0 : llama_fail("cannot write %s", path);
}

/* Closes the open shard; 0 or -1. */
static int end_shard(lhw_writer *w) {
  if (!w->f) return 0;
  const int ok = fclose(w->f) == 0;
  w->f = NULL;
  return ok ? 0 : llama_fail("cannot finish writing a safetensors file in %s (disk full?)", w->dir);
}

int lhw_put(lhw_writer *w, const char *name, const void *src, lst_dtype from) {
  if (w->next >= w->n || strcmp(w->e[w->next].name, name) != 0)
    return llama_fail("tensor %s is written out of order: the next planned one is %s", name,
                      w->next < w->n ? w->e[w->next].name : "none (all were written)");
  const int k = w->shard[w->next];
  if (k != w->open_shard) {
    LL_TRY(end_shard(w));
    LL_TRY(start_shard(w, k));
  }
  const size_t n = (size_t)(entry_bytes(&w->e[w->next], w->dtype) / lst_dtype_size(w->dtype));
  const size_t es = lst_dtype_size(from), eo = lst_dtype_size(w->dtype);
  int ok = 1;
  for (size_t done = 0; ok && done < n;) {
    const size_t c = n - done < LHW_CHUNK ? n - done : LHW_CHUNK;
    lst_convert((const unsigned char *)src + done * es, from, w->buf, w->dtype, c);
    ok = fwrite(w->buf, eo, c, w->f) == c;
    done += c;
  }
  if (!ok) return llama_fail("cannot write tensor %s in %s (disk full?)", name, w->dir);
  w->next++;
  return 0;
}

/* model.safetensors.index.json of a sharded write. */
static int write_index(const lhw_writer *w) {
  char path[4200], name[64];
  LL_TRY(llama_join(w->dir, "model.safetensors.index.json", path, sizeof path));
  uint64_t total = 0;
  cJSON *o = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
  cJSON *map = cJSON_CreateObject();
  for (int i = 0; i < w->n; i++) {
    total += entry_bytes(&w->e[i], w->dtype);
    lhw_shard_name(w->shard[i], w->nshards, name, sizeof name);
    cJSON_AddStringToObject(map, w->e[i].name, name);
  }
  cJSON_AddNumberToObject(meta, "total_size", (double)total);
  cJSON_AddItemToObject(o, "weight_map", map);
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  FILE *f = text ? fopen(path, "w") : NULL;
  int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  ok = (f && fclose(f) == 0) && ok;
  free(text);
  return ok ? 0 : llama_fail("cannot write %s", path);
}

int lhw_close(lhw_writer *w) {
  int rc = 0;
  if (w->next < w->n)
    rc = llama_fail("the export ended before tensor %s was written", w->e[w->next].name);
  if (end_shard(w)) rc = -1;
  if (rc == 0 && w->nshards > 1) rc = write_index(w);
  lhw_abort(w);
  return rc;
}

void lhw_abort(lhw_writer *w) {
  if (w->f) fclose(w->f);
  free(w->e);
  free(w->shard);
  free(w->offset);
  free(w->buf);
  memset(w, 0, sizeof *w);
}
