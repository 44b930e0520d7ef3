/* Export to Hugging Face GPT-2 (see hf_export.h). */
#include "hf_export.h"

#include <stdio.h>
#include <string.h>

#include "init.h"
#include "util.h"

/* The engine's unit/tensor -> HF name, transposition (Conv1D) and rows (wte without padding). */
static int hf_map(void *ctx, const char *unit, const char *tensor, int ndim, const int64_t *shape,
                  zs_export_tensor *out) {
  const gpt2_config *c = ctx;
  (void)ndim;
  (void)shape;
  int u;
  if (strcmp(unit, "embedding") == 0)
    u = 0;
  else if (strcmp(unit, "ln_f") == 0)
    u = c->layers + 1;
  else if (sscanf(unit, "block.%d", &u) == 1 && u >= 0 && u < c->layers)
    u += 1;
  else
    return -1;
  zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
  const int nt = gpt2_unit_descs(c, u, d);
  for (int t = 0; t < nt; t++) {
    if (strcmp(gpt2_tensor_name(c, u, t), tensor) != 0) continue;
    int conv1d;
    gpt2_hf_name(c, u, t, out->name, sizeof out->name, &conv1d);
    out->transpose = conv1d;
    if (u == 0 && t == EMB_WTE) out->rows = c->vocab;
    return 0;
  }
  return -1;
}

/* config.json for transformers' GPT2Config (GELU tanh form, layernorm eps 1e-5, tied head). */
static int write_config(const gpt2_config *c, const char *weights, zs_dtype dt) {
  char path[4096];
  gpt2_path_beside(weights, "config.json", path, sizeof path);
  FILE *f = fopen(path, "w");
  if (!f) return gpt2_fail("cannot write %s", path);
  fprintf(
      f,
      "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
      "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n"
      "  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"activation_function\": \"gelu_new\",\n"
      "  \"layer_norm_epsilon\": 1e-05,\n  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n"
      "  \"attn_pdrop\": 0.0,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"%s\"\n}\n",
      c->vocab, c->max_seq, c->max_seq, c->channels, c->layers, c->heads,
      dt == ZS_BF16 ? "bfloat16" : "float32");
  return fclose(f) == 0 ? 0 : gpt2_fail("cannot write %s", path);
}

int gpt2_export_hf(const gpt2_units *m, const char *path, zs_dtype dt, int rank) {
  zs_export_options o;
  zs_export_options_default(&o);
  o.dtype = dt;
  o.tensor_fn = hf_map;
  o.ctx = (void *)&m->cfg;
  ZS_TRY(zs_engine_export_safetensors_ex(m->eng, path, &o));
  return rank == 0 ? write_config(&m->cfg, path, dt) : 0;
}
