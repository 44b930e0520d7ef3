/* Export to Hugging Face GPT-2 (see hf_export.h). */
#include "hf_export.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_put.h"
#include "../common/util.h"
#include "init.h"

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

/* The object the export's config.json starts from: the fields of `source` (the config.json beside
   the --init-safetensors file) when there is one, else an empty object. NULL (gpt2_error()) when
   the source exists but is not a JSON object. */
static cJSON *base_object(const char *source) {
  FILE *f = source ? fopen(source, "rb") : NULL;
  if (!f) return cJSON_CreateObject();
  char *text = malloc(1 << 20);
  size_t len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (!text) return gpt2_fail("out of host memory reading %s", source), NULL;
  text[len] = 0;
  cJSON *o = cJSON_Parse(text);
  free(text);
  if (cJSON_IsObject(o)) return o;
  cJSON_Delete(o);
  gpt2_fail("%s is not a JSON object", source);
  return NULL;
}

/* config.json for transformers' GPT2Config (GELU tanh form, layernorm eps 1e-5, tied head): the
   fields the example describes are its own; every other field of `source` (bos/eos_token_id,
   task_specific_params, ...) is carried through as it was. */
static int write_config(const gpt2_config *c, const char *weights, zs_dtype dt,
                        const char *source) {
  char path[4096];
  gpt2_path_beside(weights, "config.json", path, sizeof path);
  cJSON *o = base_object(source);
  if (!o) return -1;
  cJSON *a = cJSON_CreateArray();
  cJSON_AddItemToArray(a, cJSON_CreateString("GPT2LMHeadModel"));
  ex_json_put(o, "architectures", a);
  ex_json_put(o, "model_type", cJSON_CreateString("gpt2"));
  ex_json_put(o, "vocab_size", cJSON_CreateNumber(c->vocab));
  ex_json_put(o, "n_positions", cJSON_CreateNumber(c->max_seq));
  ex_json_put(o, "n_ctx", cJSON_CreateNumber(c->max_seq));
  ex_json_put(o, "n_embd", cJSON_CreateNumber(c->channels));
  ex_json_put(o, "n_layer", cJSON_CreateNumber(c->layers));
  ex_json_put(o, "n_head", cJSON_CreateNumber(c->heads));
  ex_json_put(o, "activation_function", cJSON_CreateString("gelu_new"));
  ex_json_put(o, "layer_norm_epsilon", cJSON_CreateNumber(1e-5));
  ex_json_put(o, "resid_pdrop", cJSON_CreateNumber(0.0));
  ex_json_put(o, "embd_pdrop", cJSON_CreateNumber(0.0));
  ex_json_put(o, "attn_pdrop", cJSON_CreateNumber(0.0));
  ex_json_put(o, "tie_word_embeddings", cJSON_CreateBool(1));
  const char *dts = dt == ZS_BF16 ? "bfloat16" : "float32";
  ex_json_put(o, "torch_dtype", cJSON_CreateString(dts));
  if (cJSON_HasObjectItem(o, "dtype"))
    ex_json_put(o, "dtype", cJSON_CreateString(dts)); /* newer name */
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  if (!text) return gpt2_fail("out of host memory writing %s", path);
  FILE *f = fopen(path, "w");
  int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  ok = (f && fclose(f) == 0) && ok;
  free(text);
  return ok ? 0 : gpt2_fail("cannot write %s", path);
}

int gpt2_export_hf(const gpt2_units *m, const char *path, zs_dtype dt, const char *init_weights,
                   int rank) {
  zs_export_options o;
  zs_export_options_default(&o);
  o.dtype = dt;
  o.tensor_fn = hf_map;
  o.ctx = (void *)&m->cfg;
  ZS_TRY(zs_engine_export_safetensors_ex(m->eng, path, &o));
  if (rank != 0) return 0;
  char source[4096];
  if (init_weights) gpt2_path_beside(init_weights, "config.json", source, sizeof source);
  return write_config(&m->cfg, path, dt, init_weights ? source : NULL);
}
