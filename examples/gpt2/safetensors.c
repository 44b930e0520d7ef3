/* safetensors header parsing (cJSON) and tensor reads with dtype conversion to fp32. */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/half.h"
#include "../common/util.h"

#define ST_MAX_HEADER (100u << 20) /* the format's own limit on the JSON header */

int st_open(st_file *s, const char *path) {
  memset(s, 0, sizeof *s);
  s->f = fopen(path, "rb");
  if (!s->f) return gpt2_fail("cannot open safetensors file %s", path);
  unsigned char len8[8];
  if (fseek(s->f, 0, SEEK_END) != 0) goto io;
  long fsize = ftell(s->f);
  if (fsize < 8 || fseek(s->f, 0, SEEK_SET) != 0 || fread(len8, 1, 8, s->f) != 8) goto io;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | len8[i];
  if (hlen == 0 || hlen > ST_MAX_HEADER || hlen > (uint64_t)fsize - 8) {
    st_close(s);
    return gpt2_fail("%s: header length %llu does not fit the file: not a safetensors file?", path,
                     (unsigned long long)hlen);
  }
  char *json = malloc(hlen + 1);
  if (!json) goto io;
  if (fread(json, 1, hlen, s->f) != hlen) {
    free(json);
    goto io;
  }
  json[hlen] = '\0';
  s->header = cJSON_Parse(json);
  free(json);
  if (!s->header || !cJSON_IsObject((cJSON *)s->header)) {
    st_close(s);
    return gpt2_fail("%s: the safetensors header is not a JSON object", path);
  }
  s->data_off = 8 + hlen;
  s->data_size = (uint64_t)fsize - s->data_off;
  return 0;
io:
  st_close(s);
  return gpt2_fail("%s: read error or truncated safetensors file", path);
}

void st_close(st_file *s) {
  if (s->f) fclose(s->f);
  if (s->header) cJSON_Delete((cJSON *)s->header);
  memset(s, 0, sizeof *s);
}

/* Bytes per element of a supported dtype, 0 for others. */
static int dtype_size(const char *dt) {
  if (strcmp(dt, "F32") == 0) return 4;
  if (strcmp(dt, "F16") == 0 || strcmp(dt, "BF16") == 0) return 2;
  return 0;
}

int64_t st_numel(const st_info *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    n *= t->shape[i];
  return n;
}

/* Parses one header entry; -1 when a field is missing or inconsistent. */
static int parse_entry(st_file *s, const cJSON *e, const char *name, st_info *out) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
      cJSON_GetArraySize(off) != 2 || cJSON_GetArraySize(sh) > 8)
    return gpt2_fail("safetensors entry %s lacks dtype, shape or data_offsets", name);
  memset(out, 0, sizeof *out);
  snprintf(out->dtype, sizeof out->dtype, "%s", dt->valuestring);
  out->ndim = cJSON_GetArraySize(sh);
  for (int i = 0; i < out->ndim; i++) {
    const cJSON *d = cJSON_GetArrayItem(sh, i);
    if (!cJSON_IsNumber(d) || d->valuedouble < 0)
      return gpt2_fail("safetensors entry %s has a bad shape", name);
    out->shape[i] = (int64_t)d->valuedouble;
  }
  const cJSON *b = cJSON_GetArrayItem(off, 0), *en = cJSON_GetArrayItem(off, 1);
  if (!cJSON_IsNumber(b) || !cJSON_IsNumber(en) || b->valuedouble > en->valuedouble)
    return gpt2_fail("safetensors entry %s has bad data_offsets", name);
  out->begin = (uint64_t)b->valuedouble;
  out->end = (uint64_t)en->valuedouble;
  int es = dtype_size(out->dtype);
  if (out->end > s->data_size || (es && (uint64_t)st_numel(out) * es != out->end - out->begin))
    return gpt2_fail("safetensors entry %s: offsets do not match its shape or the file", name);
  return 0;
}

int st_find(st_file *s, const char *name, st_info *out) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive((cJSON *)s->header, name);
  char pref[256];
  if (!e) {
    snprintf(pref, sizeof pref, "transformer.%s", name);
    e = cJSON_GetObjectItemCaseSensitive((cJSON *)s->header, pref);
  }
  if (!e) return 0;
  return parse_entry(s, e, name, out) == 0 ? 1 : -1;
}

int st_read_f32(st_file *s, const st_info *t, float *dst) {
  int es = dtype_size(t->dtype);
  if (!es)
    return gpt2_fail("safetensors dtype %s is not supported: use F32, F16 or BF16", t->dtype);
  size_t n = (size_t)st_numel(t);
  unsigned char *raw = es == 4 ? (unsigned char *)dst : malloc(n * 2 + 1);
  if (!raw) return gpt2_fail("out of host memory reading a tensor");
  int ok = fseek(s->f, (long)(s->data_off + t->begin), SEEK_SET) == 0 &&
           fread(raw, 1, n * es, s->f) == n * es;
  for (size_t i = 0; ok && es == 2 && i < n; i++) {
    uint16_t h = (uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8); /* little-endian on disk */
    if (strcmp(t->dtype, "BF16") == 0) {
      uint32_t u = (uint32_t)h << 16;
      memcpy(&dst[i], &u, 4);
    } else {
      dst[i] = ex_f16_to_f32(h);
    }
  }
  if (es == 2) free(raw);
  return ok ? 0 : gpt2_fail("read error in the safetensors data section");
}
