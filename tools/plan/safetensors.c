/* Units of a Hugging Face model.safetensors, read from its JSON header only (8-byte little-endian
 * length, then {"name": {"dtype", "shape", "data_offsets"}, ...}). Tensors whose name has a
 * numeric part ("h.3.attn...", "model.layers.3....") form one unit per layer; the final norm
 * ("ln_f", "norm.") is a unit of its own; everything else (embeddings, a head) is one unit. The
 * sizes are the file's: a vocabulary the GPT-2 example would pad (50257 -> 50304) is not padded.
 * config.json beside the file gives the GPT-2 shape for activations when it is a GPT-2. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* The layer index in a name, or -1: the first dot-separated part that is all digits. */
static long layer_of(const char *name) {
  const char *p = name;
  while (*p) {
    const char *q = p;
    while (isdigit((unsigned char)*q))
      q++;
    if (q > p && (*q == '.' || !*q) && (p == name || p[-1] == '.')) return strtol(p, NULL, 10);
    while (*p && *p != '.')
      p++;
    if (*p) p++;
  }
  return -1;
}

static char *read_header(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char len8[8];
  char *h = NULL;
  if (fread(len8, 1, 8, f) == 8) {
    unsigned long long n = 0;
    for (int i = 7; i >= 0; i--)
      n = n << 8 | len8[i];
    if (n > 0 && n < (1ull << 30) && (h = malloc(n + 1))) {
      if (fread(h, 1, n, f) != n) {
        free(h);
        h = NULL;
      } else {
        h[n] = '\0';
      }
    }
  }
  fclose(f);
  return h;
}

/* GPT-2's config.json beside the file: n_layer, n_embd, n_head, vocab_size, n_positions. */
static void gpt_config(const char *path, zp_model *m) {
  char cfg[4096];
  const char *slash = strrchr(path, '/');
  snprintf(cfg, sizeof cfg, "%.*sconfig.json", slash ? (int)(slash - path + 1) : 0, path);
  FILE *f = fopen(cfg, "rb");
  if (!f) return;
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cJSON *j = cJSON_Parse(buf);
  const cJSON *L = cJSON_GetObjectItem(j, "n_layer"), *C = cJSON_GetObjectItem(j, "n_embd"),
              *H = cJSON_GetObjectItem(j, "n_head"), *V = cJSON_GetObjectItem(j, "vocab_size"),
              *P = cJSON_GetObjectItem(j, "n_positions");
  if (cJSON_IsNumber(L) && cJSON_IsNumber(C) && cJSON_IsNumber(H) && cJSON_IsNumber(V) &&
      cJSON_IsNumber(P)) {
    m->is_gpt = 1;
    m->gpt = (zp_gpt){L->valueint, C->valueint, H->valueint, V->valueint, P->valueint};
  }
  cJSON_Delete(j);
}

int zp_safetensors_units(const char *path, zp_model *m) {
  char *h = read_header(path);
  cJSON *j = h ? cJSON_Parse(h) : NULL;
  free(h);
  if (!j) {
    fprintf(stderr, "zshard-plan: %s is not a readable safetensors file\n", path);
    return -1;
  }
  long maxl = -1;
  const cJSON *t;
  cJSON_ArrayForEach(t, j) maxl = layer_of(t->string) > maxl ? layer_of(t->string) : maxl;
  if (maxl > 1000000) {
    fprintf(stderr, "zshard-plan: %s: layer index %ld is not believable\n", path, maxl);
    cJSON_Delete(j);
    return -1;
  }
  /* unit 0: embeddings and the rest; 1..maxl+1: layers; maxl+2: final norm */
  m->n = (int)maxl + 3;
  m->numel = calloc((size_t)m->n, sizeof *m->numel);
  int bad = !m->numel;
  cJSON_ArrayForEach(t, j) {
    if (bad || !strcmp(t->string, "__metadata__")) continue;
    const cJSON *shape = cJSON_GetObjectItem(t, "shape");
    if (!cJSON_IsArray(shape)) {
      bad = 1;
      break;
    }
    int64_t n = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) n *= (int64_t)d->valuedouble;
    const long l = layer_of(t->string);
    const int fin = l < 0 && (strstr(t->string, "ln_f") || strstr(t->string, "norm."));
    m->numel[l >= 0 ? l + 1 : fin ? m->n - 1 : 0] += n;
  }
  cJSON_Delete(j);
  if (bad) {
    fprintf(stderr, "zshard-plan: %s: malformed tensor entry in the header\n", path);
    return -1;
  }
  int k = 0; /* drop empty units (no final norm, no embeddings) */
  for (int i = 0; i < m->n; i++)
    if (m->numel[i] > 0) m->numel[k++] = m->numel[i];
  m->n = k;
  gpt_config(path, m);
  return k ? 0 : -1;
}
