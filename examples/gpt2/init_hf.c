/* Weights from a Hugging Face GPT-2 safetensors file. HF stores the linear layers as Conv1D,
 * weight [in, out]; zshard's matmul wants [out, in], so those four are transposed on load. */
#include <stdlib.h>
#include <string.h>

#include "init.h"
#include "safetensors.h"
#include "util.h"

/* HF name of tensor t of unit u, and whether it is a Conv1D weight (stored transposed). */
static void hf_name(const gpt2_config *c, int u, int t, char *out, size_t n, int *conv1d) {
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

/* Finds a tensor that must exist. */
static int need(st_file *s, const char *name, st_info *t) {
  int r = st_find(s, name, t);
  if (r == 0) return gpt2_fail("the safetensors file has no tensor %s", name);
  return r < 0 ? -1 : 0;
}

int gpt2_config_from_safetensors(const char *path, int heads, gpt2_config *c) {
  st_file s;
  TRY(st_open(&s, path));
  st_info wte, wpe, t;
  int rc = -1;
  if (need(&s, "wte.weight", &wte) || need(&s, "wpe.weight", &wpe)) goto out;
  if (wte.ndim != 2 || wpe.ndim != 2 || wte.shape[1] != wpe.shape[1]) {
    gpt2_fail("%s: wte/wpe are not [rows, C] matrices of one width", path);
    goto out;
  }
  memset(c, 0, sizeof *c);
  c->vocab = (int)wte.shape[0];
  c->padded_vocab = gpt2_pad_vocab(c->vocab);
  c->channels = (int)wte.shape[1];
  c->max_seq = (int)wpe.shape[0];
  c->heads = heads > 0 ? heads : (c->channels % 64 == 0 ? c->channels / 64 : 1);
  char name[64];
  for (;;) {
    snprintf(name, sizeof name, "h.%d.ln_1.weight", c->layers);
    int r = st_find(&s, name, &t);
    if (r < 0) goto out;
    if (r == 0) break;
    c->layers++;
  }
  rc = c->layers > 0 ? 0 : gpt2_fail("%s has no transformer blocks (h.0.*)", path);
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
      hf_name(c, u, t, name, sizeof name, &conv1d);
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
