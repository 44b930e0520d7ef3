/* Weights from a Hugging Face GPT-2 safetensors file. HF stores the linear layers as Conv1D,
 * weight [in, out]; zshard's matmul wants [out, in], so those four are transposed on load. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "init.h"
#include "safetensors.h"

void gpt2_hf_name(const gpt2_config *c, int u, int t, char *out, size_t n, int *conv1d) {
  static const char *const blk[BLK_NT] = {
      "ln_1.weight",        "ln_1.bias",        "attn.c_attn.weight", "attn.c_attn.bias",
      "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",        "ln_2.bias",
      "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
  *conv1d = 0;
  if (u == 0) {
    snprintf(out, n, "%s", t == EMB_WTE ? "wte.weight" : "wpe.weight");
  } else if (u == c->layers + 1) {
    snprintf(out, n, "%s", t == LNF_W ? "ln_f.weight" : "ln_f.bias");
  } else {
    snprintf(out, n, "h.%d.%s", u - 1, blk[t]);
    *conv1d = t == BLK_QKV_W || t == BLK_PROJ_W || t == BLK_FC_W || t == BLK_FCPROJ_W;
  }
}

/* The shape fields of a Hugging Face config.json (0 = absent). */
typedef struct {
  int heads, layers, channels, vocab, positions;
} hf_shape;

/* Finds a tensor that must exist. */
static int need(st_file *s, const char *name, st_info *t) {
  int r = st_find(s, name, t);
  if (r == 0) return gpt2_fail("the safetensors file has no tensor %s", name);
  return r < 0 ? -1 : 0;
}

/* The shape parameters of config.json beside the weights, when there is one: *found = 0 if
   not; a field that is absent stays 0. */
static int read_hf_config(const char *weights, hf_shape *h, int *found) {
  memset(h, 0, sizeof *h);
  *found = 0;
  char path[4096];
  gpt2_path_beside(weights, "config.json", path, sizeof path);
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char *text = malloc(1 << 20);
  size_t len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (!text) return gpt2_fail("out of host memory reading %s", path);
  text[len] = 0;
  cJSON *j = cJSON_Parse(text);
  free(text);
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return gpt2_fail("%s is not a JSON object", path);
  }
  static const char *const keys[5] = {"n_head", "n_layer", "n_embd", "vocab_size", "n_positions"};
  int *dst[5] = {&h->heads, &h->layers, &h->channels, &h->vocab, &h->positions};
  for (int i = 0; i < 5; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
    if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e9)
      *dst[i] = (int)v->valuedouble;
  }
  cJSON_Delete(j);
  *found = 1;
  return 0;
}

/* A config.json value must agree with what the tensors say. */
static int agree(const char *key, int cfg, int tensors, const char *path) {
  if (cfg && cfg != tensors)
    return gpt2_fail("config.json beside %s says %s = %d, the tensors say %d", path, key, cfg,
                     tensors);
  return 0;
}

/* An lm_head.weight must be wte itself (GPT-2 ties them; zshard's head reads wte). */
static int check_tied_head(st_file *s, const st_info *wte, const char *path) {
  st_info h;
  int r = st_find(s, "lm_head.weight", &h);
  if (r <= 0) return r;
  int same = h.ndim == 2 && h.shape[0] == wte->shape[0] && h.shape[1] == wte->shape[1];
  float *a = NULL, *b = NULL;
  const size_t n = (size_t)st_numel(wte);
  if (same) {
    a = malloc(n * sizeof *a);
    b = malloc(n * sizeof *b);
    if (!a || !b) same = -1;
  }
  if (same == 1 && (st_read_f32(s, wte, a) != 0 || st_read_f32(s, &h, b) != 0)) same = -1;
  if (same == 1) same = memcmp(a, b, n * sizeof *a) == 0;
  free(a);
  free(b);
  if (same < 0) return -1;
  if (!same)
    return gpt2_fail("%s has an lm_head.weight that is not wte: this example ties the LM head to "
                     "the token embedding (as GPT-2 does) and cannot load an untied head",
                     path);
  return 0;
}

int gpt2_config_from_safetensors(const char *path, int heads, gpt2_config *c) {
  hf_shape hc;
  int have_cfg;
  TRY(read_hf_config(path, &hc, &have_cfg));
  st_file s;
  TRY(st_open(&s, path));
  st_info wte, wpe, t;
  int rc = -1;
  if (need(&s, "wte.weight", &wte) || need(&s, "wpe.weight", &wpe)) goto out;
  if (wte.ndim != 2 || wpe.ndim != 2 || wte.shape[1] != wpe.shape[1]) {
    gpt2_fail("%s: wte/wpe are not [rows, C] matrices of one width", path);
    goto out;
  }
  if (check_tied_head(&s, &wte, path) != 0) goto out;
  memset(c, 0, sizeof *c);
  c->vocab = (int)wte.shape[0];
  c->padded_vocab = gpt2_pad_vocab(c->vocab);
  c->channels = (int)wte.shape[1];
  c->max_seq = (int)wpe.shape[0];
  char name[64];
  for (;;) {
    snprintf(name, sizeof name, "h.%d.ln_1.weight", c->layers);
    int r = st_find(&s, name, &t);
    if (r < 0) goto out;
    if (r == 0) break;
    if (++c->layers > 100000) {
      gpt2_fail("%s: too many layers", path);
      goto out;
    }
  }
  if (c->layers == 0) {
    gpt2_fail("%s has no transformer blocks (h.0.*)", path);
    goto out;
  }
  if (agree("n_layer", hc.layers, c->layers, path) ||
      agree("n_embd", hc.channels, c->channels, path) ||
      agree("vocab_size", hc.vocab, c->vocab, path) ||
      agree("n_positions", hc.positions, c->max_seq, path))
    goto out;
  /* The head count is not in the tensors: config.json, else --heads. */
  if (hc.heads && heads > 0 && hc.heads != heads) {
    gpt2_fail("--heads %d disagrees with n_head = %d in the config.json beside %s", heads, hc.heads,
              path);
    goto out;
  }
  c->heads = hc.heads ? hc.heads : heads;
  if (c->heads <= 0) {
    gpt2_fail("%s: the number of attention heads is not known: put its config.json (n_head) "
              "beside it or pass --heads%s",
              path, have_cfg ? " (its config.json has no n_head)" : "");
    goto out;
  }
  rc = 0;
out:
  st_close(&s);
  return rc;
}

/* Reads one tensor, checks its shape against ours (transposed for Conv1D; wte may have fewer
   rows than Vp) and writes it in our layout into dst (padded rows zero). */
static int load_one(st_file *s, const char *name, int conv1d, const zs_tensor_desc *d, float *dst,
                    float *tmp) {
  st_info t;
  TRY(need(s, name, &t));
  int64_t rows = d->shape[0], cols = d->ndim == 2 ? d->shape[1] : 1;
  int64_t trows = t.shape[0], tcols = t.ndim == 2 ? t.shape[1] : 1;
  int ok = t.ndim == d->ndim &&
           (conv1d ? (trows == cols && tcols == rows) : (trows <= rows && tcols == cols));
  if (!ok || (!conv1d && trows != rows && strcmp(d->name, "wte") != 0))
    return gpt2_fail("tensor %s has shape [%lld, %lld], expected [%lld, %lld]%s", name,
                     (long long)trows, (long long)tcols, (long long)(conv1d ? cols : rows),
                     (long long)(conv1d ? rows : cols), conv1d ? " (Conv1D [in, out])" : "");
  TRY(st_read_f32(s, &t, conv1d ? tmp : dst));
  if (conv1d) {
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++)
        dst[i * cols + j] = tmp[j * rows + i];
  } else {
    memset(dst + trows * cols, 0, (size_t)((rows - trows) * cols) * sizeof(float));
  }
  return 0;
}

int gpt2_init_safetensors(const gpt2_units *m, const char *path) {
  const gpt2_config *c = &m->cfg;
  size_t maxn = (size_t)c->padded_vocab * c->channels;
  if (4 * (size_t)c->channels * c->channels > maxn) maxn = 4 * (size_t)c->channels * c->channels;
  if ((size_t)c->max_seq * c->channels > maxn) maxn = (size_t)c->max_seq * c->channels;
  st_file s;
  TRY(st_open(&s, path));
  float *h = malloc(maxn * sizeof(float)), *tmp = malloc(maxn * sizeof(float));
  int rc = h && tmp ? 0 : gpt2_fail("out of host memory loading %s", path);
  for (int u = 0; rc == 0 && u < gpt2_num_units(c); u++) {
    zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
    int nt = gpt2_unit_descs(c, u, d);
    for (int t = 0; rc == 0 && t < nt; t++) {
      char name[64];
      int conv1d;
      gpt2_hf_name(c, u, t, name, sizeof name, &conv1d);
      rc = load_one(&s, name, conv1d, &d[t], h, tmp);
      if (rc == 0) {
        zs_status st = zs_unit_set_param(gpt2_unit(m, u), t, h);
        if (st != ZS_OK) rc = gpt2_fail_zs("zs_unit_set_param", st);
      }
    }
  }
  free(h);
  free(tmp);
  st_close(&s);
  return rc;
}
