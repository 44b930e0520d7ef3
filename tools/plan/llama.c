/* Llama-family models for zshard-plan: presets (the public config.json fields of each model) and
 * any Llama / Qwen2 / Mistral config.json, parsed by the Llama example's own reader
 * (examples/common/llama_config.c) and cut into its units (examples/common/llama_layout.c);
 * activations are the example's (examples/common/llama_activations.c), so the plan is what the
 * example allocates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/llama_activations.h"
#include "common/llama_config.h"
#include "common/llama_layout.h"
#include "common/llama_util.h"
#include "tool.h"

/* The fields of each model's published config.json that shape it (Hugging Face hub:
   meta-llama/Meta-Llama-3-8B and -70B, Qwen/Qwen2.5-7B, -14B, -32B, mistralai/Mistral-7B-v0.1). */
static const struct {
  const char *name, *json;
} presets[] = {
    {"llama3-8b",
     "{\"model_type\": \"llama\", \"vocab_size\": 128256, \"hidden_size\": 4096, "
     "\"intermediate_size\": 14336, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
     "\"num_key_value_heads\": 8, \"max_position_embeddings\": 8192, \"rope_theta\": 500000.0, "
     "\"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\"}"},
    {"llama3-70b",
     "{\"model_type\": \"llama\", \"vocab_size\": 128256, \"hidden_size\": 8192, "
     "\"intermediate_size\": 28672, \"num_hidden_layers\": 80, \"num_attention_heads\": 64, "
     "\"num_key_value_heads\": 8, \"max_position_embeddings\": 8192, \"rope_theta\": 500000.0, "
     "\"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\"}"},
    {"qwen2.5-7b",
     "{\"model_type\": \"qwen2\", \"vocab_size\": 152064, \"hidden_size\": 3584, "
     "\"intermediate_size\": 18944, \"num_hidden_layers\": 28, \"num_attention_heads\": 28, "
     "\"num_key_value_heads\": 4, \"max_position_embeddings\": 131072, \"rope_theta\": "
     "1000000.0, \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": false, "
     "\"use_sliding_window\": false, \"sliding_window\": 131072, \"torch_dtype\": \"bfloat16\"}"},
    {"qwen2.5-14b",
     "{\"model_type\": \"qwen2\", \"vocab_size\": 152064, \"hidden_size\": 5120, "
     "\"intermediate_size\": 13824, \"num_hidden_layers\": 48, \"num_attention_heads\": 40, "
     "\"num_key_value_heads\": 8, \"max_position_embeddings\": 131072, \"rope_theta\": "
     "1000000.0, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, "
     "\"use_sliding_window\": false, \"sliding_window\": 131072, \"torch_dtype\": \"bfloat16\"}"},
    {"qwen2.5-32b",
     "{\"model_type\": \"qwen2\", \"vocab_size\": 152064, \"hidden_size\": 5120, "
     "\"intermediate_size\": 27648, \"num_hidden_layers\": 64, \"num_attention_heads\": 40, "
     "\"num_key_value_heads\": 8, \"max_position_embeddings\": 131072, \"rope_theta\": "
     "1000000.0, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, "
     "\"use_sliding_window\": false, \"sliding_window\": 131072, \"torch_dtype\": \"bfloat16\"}"},
    {"mistral-7b",
     "{\"model_type\": \"mistral\", \"vocab_size\": 32000, \"hidden_size\": 4096, "
     "\"intermediate_size\": 14336, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
     "\"num_key_value_heads\": 8, \"max_position_embeddings\": 32768, \"rope_theta\": 10000.0, "
     "\"rms_norm_eps\": 1e-05, \"sliding_window\": 4096, \"tie_word_embeddings\": false, "
     "\"torch_dtype\": \"bfloat16\"}"},
};

const char *zp_llama_preset_names(void) {
  return "llama3-8b, llama3-70b, qwen2.5-7b, qwen2.5-14b, qwen2.5-32b, mistral-7b";
}

int zp_llama_is_spec(const char *spec) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (!strcmp(spec, presets[i].name)) return 1;
  const size_t n = strlen(spec);
  return n > 5 && !strcmp(spec + n - 5, ".json");
}

int zp_llama_units(const char *spec, int seq, int tp, int vocab_parallel, zp_model *m) {
  llama_config c, whole;
  int rc = 1;
  for (size_t i = 0; i < sizeof presets / sizeof presets[0] && rc == 1; i++)
    if (!strcmp(spec, presets[i].name)) rc = llama_config_parse(&c, presets[i].json, spec);
  if (rc == 1) rc = llama_config_load(&c, spec);
  if (rc == 0) rc = llama_config_check(&c, seq > 0 ? seq : 1);
  if (rc == 0) {
    whole = c;
    rc = llama_tp_local(&whole, tp, vocab_parallel, &c);
  }
  if (rc) {
    fprintf(stderr, "zshard-plan: %s\n", llama_error());
    return -1;
  }
  m->n = llama_num_units(&c);
  m->numel = calloc((size_t)m->n, sizeof *m->numel);
  if (!m->numel) return -1;
  for (int u = 0; u < m->n; u++)
    m->numel[u] = llama_unit_numel(&c, u);
  m->is_llama = 1;
  m->llama = c;
  return 0;
}

int zp_llama_activations(const zp_model *m, int B, int T, zs_dtype dt, int recompute, int sp,
                         size_t *out) {
  if (sp > 1 && T % sp) {
    fprintf(stderr,
            "zshard-plan: --sp splits each sequence over --tp %d ranks: --seq %d is not a "
            "multiple of it\n",
            sp, T);
    return -1;
  }
  if (llama_config_check(&m->llama, T)) {
    fprintf(stderr, "zshard-plan: --seq %d: %s\n", T, llama_error());
    return -1;
  }
  *out = llama_activation_bytes(&m->llama, B, T, dt, recompute, sp);
  return 0;
}
