/* config.json in and out for the Llama family (see llama_config.h). */
#include "llama_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_put.h"
#include "llama_util.h"

const char *llama_arch_name(llama_arch a) {
  return a == LLAMA_ARCH_QWEN2 ? "qwen2" : a == LLAMA_ARCH_MISTRAL ? "mistral" : "llama";
}

void llama_config_defaults(llama_config *c, llama_arch arch) {
  memset(c, 0, sizeof *c);
  c->arch = arch;
  c->vocab = 32000;
  c->hidden = 4096;
  c->intermediate = 11008;
  c->layers = 32;
  c->heads = 32;
  c->kv_heads = 32;
  c->max_pos = 2048;
  c->rope_theta = 10000.0;
  c->rms_eps = 1e-6;
  c->bos_id = 1;
  c->eos_id = 2;
  if (arch == LLAMA_ARCH_QWEN2) {
    c->vocab = 151936;
    c->intermediate = 22016;
    c->max_pos = 32768;
    c->qkv_bias = 1;
    c->bos_id = c->eos_id = -1;
  } else if (arch == LLAMA_ARCH_MISTRAL) {
    c->intermediate = 14336;
    c->kv_heads = 8;
    c->max_pos = 4096 * 32;
    c->sliding_window = 4096;
  }
  c->head_dim = c->hidden / c->heads;
}

/* Reads an optional positive integer field; 0 ok (absent keeps *out), -1 bad. */
static int get_int(const cJSON *o, const char *key, int *out, const char *what) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 2147483647.0 ||
      v->valuedouble != floor(v->valuedouble))
    return llama_fail("%s: \"%s\" must be a positive integer", what, key);
  *out = (int)v->valuedouble;
  return 0;
}

/* Reads an optional token id field (bos_token_id / eos_token_id), which real configs give as an
   int >= 0, null, or a list of ints (Llama 3.1: "eos_token_id": [128001, 128008, 128009]).
   Absent keeps *out; null or an empty list store -1; a list stores its first id (training does
   not use them; an export writes the source's field back as it was). 0 ok, -1 bad. */
static int get_token_id(const cJSON *o, const char *key, int *out, const char *what) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) return 0;
  if (cJSON_IsNull(v)) {
    *out = -1;
    return 0;
  }
  const int list = cJSON_IsArray(v);
  int first = -1;
  const cJSON *e = list ? v->child : v;
  for (; e; e = list ? e->next : NULL) {
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0) || e->valuedouble > 2147483647.0 ||
        e->valuedouble != floor(e->valuedouble))
      return llama_fail("%s: \"%s\" must be null, an integer >= 0 or a list of them", what, key);
    if (first < 0) first = (int)e->valuedouble;
  }
  *out = first;
  return 0;
}

/* Reads an optional positive number field; 0 ok, -1 bad. */
static int get_num(const cJSON *o, const char *key, double *out, const char *what) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
    return llama_fail("%s: \"%s\" must be a positive number", what, key);
  *out = v->valuedouble;
  return 0;
}

/* 1 when the field is the boolean true, 0 when absent, null or false. */
static int is_true(const cJSON *o, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* rope_scaling: null, {"rope_type": "default"} or Llama 3.1's {"rope_type": "llama3", ...}. */
static int parse_rope_scaling(llama_config *c, const cJSON *root, const char *what) {
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
  if (!rs || cJSON_IsNull(rs)) return 0;
  if (!cJSON_IsObject(rs))
    return llama_fail("%s: \"rope_scaling\" must be an object or null", what);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
  if (!t) t = cJSON_GetObjectItemCaseSensitive(rs, "type"); /* the older spelling */
  const char *type = cJSON_IsString(t) ? t->valuestring : "";
  if (strcmp(type, "default") == 0) return 0;
  if (strcmp(type, "llama3") != 0)
    return llama_fail("%s: rope_scaling type \"%s\" is not supported (only \"llama3\" frequency "
                      "scaling, or none)",
                      what, type);
  c->rope_llama3 = 1;
  c->rope_factor = c->rope_low_freq = c->rope_high_freq = 0;
  c->rope_orig_max_pos = 0;
  LL_TRY(get_num(rs, "factor", &c->rope_factor, what));
  LL_TRY(get_num(rs, "low_freq_factor", &c->rope_low_freq, what));
  LL_TRY(get_num(rs, "high_freq_factor", &c->rope_high_freq, what));
  LL_TRY(get_int(rs, "original_max_position_embeddings", &c->rope_orig_max_pos, what));
  if (!c->rope_factor || !c->rope_low_freq || !c->rope_high_freq || !c->rope_orig_max_pos ||
      c->rope_high_freq <= c->rope_low_freq)
    return llama_fail("%s: \"llama3\" rope_scaling needs factor, low_freq_factor < "
                      "high_freq_factor and original_max_position_embeddings",
                      what);
  return 0;
}

/* What this example cannot train, each with its sentence. */
static int refuse_unsupported(const llama_config *c, const cJSON *root, const char *what) {
  static const char *moe[] = {"num_local_experts", "num_experts", "num_experts_per_tok",
                              "moe_intermediate_size"};
  for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, moe[i]);
    if (cJSON_IsNumber(v) && v->valuedouble > 0)
      return llama_fail("%s: \"%s\" says this is a mixture of experts, which the Llama example "
                        "does not train (dense Llama, Qwen2 and Mistral only)",
                        what, moe[i]);
  }
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
  if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
    return llama_fail("%s: hidden_act \"%s\" is not supported: the MLP is SwiGLU (\"silu\")", what,
                      cJSON_IsString(act) ? act->valuestring : "?");
  if (c->arch != LLAMA_ARCH_QWEN2 && is_true(root, "attention_bias"))
    return llama_fail("%s: \"attention_bias\": true (biases on q, k, v and o) is not supported; "
                      "only Qwen2's q/k/v biases are",
                      what);
  if (is_true(root, "mlp_bias"))
    return llama_fail("%s: \"mlp_bias\": true is not supported (the MLP has no biases)", what);
  return 0;
}

int llama_config_parse(llama_config *c, const char *json, const char *what) {
  cJSON *root = cJSON_Parse(json);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return llama_fail("%s is not a JSON object", what);
  }
  int rc = -1;
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
  const char *type = cJSON_IsString(mt) ? mt->valuestring : NULL;
  llama_arch arch;
  if (!type) {
    llama_fail("%s has no \"model_type\" (llama, qwen2 or mistral)", what);
    goto out;
  } else if (strcmp(type, "llama") == 0) {
    arch = LLAMA_ARCH_LLAMA;
  } else if (strcmp(type, "qwen2") == 0) {
    arch = LLAMA_ARCH_QWEN2;
  } else if (strcmp(type, "mistral") == 0) {
    arch = LLAMA_ARCH_MISTRAL;
  } else {
    llama_fail("%s: model_type \"%s\" is not supported: the Llama example trains llama, qwen2 and "
               "mistral models",
               what, type);
    goto out;
  }
  llama_config_defaults(c, arch);
  if (refuse_unsupported(c, root, what) || get_int(root, "vocab_size", &c->vocab, what) ||
      get_int(root, "hidden_size", &c->hidden, what) ||
      get_int(root, "intermediate_size", &c->intermediate, what) ||
      get_int(root, "num_hidden_layers", &c->layers, what) ||
      get_int(root, "num_attention_heads", &c->heads, what))
    goto out;
  c->kv_heads = c->heads; /* HF: num_key_value_heads None means multi-head attention */
  c->head_dim = c->hidden / c->heads;
  c->head_dim = c->hidden % c->heads ? 0 : c->head_dim;
  if (get_int(root, "num_key_value_heads", &c->kv_heads, what) ||
      get_int(root, "head_dim", &c->head_dim, what) ||
      get_int(root, "max_position_embeddings", &c->max_pos, what) ||
      get_num(root, "rope_theta", &c->rope_theta, what) ||
      get_num(root, "rms_norm_eps", &c->rms_eps, what) ||
      /* transformers' Mistral has no RoPE scaling and ignores the field: so does this reader */
      (arch != LLAMA_ARCH_MISTRAL && parse_rope_scaling(c, root, what)) ||
      get_token_id(root, "bos_token_id", &c->bos_id, what) ||
      get_token_id(root, "eos_token_id", &c->eos_id, what))
    goto out;
  const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
  if (tie) c->tied = cJSON_IsTrue(tie);
  /* Qwen2 reads sliding_window only with use_sliding_window; Mistral always (null = none). */
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
  if (arch == LLAMA_ARCH_QWEN2) c->sliding_window = 0;
  if (arch == LLAMA_ARCH_MISTRAL ||
      (arch == LLAMA_ARCH_QWEN2 && is_true(root, "use_sliding_window"))) {
    if (sw && cJSON_IsNull(sw))
      c->sliding_window = 0;
    else if (sw && get_int(root, "sliding_window", &c->sliding_window, what))
      goto out;
  }
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
  if (cJSON_IsString(dt)) snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", dt->valuestring);
  rc = 0;
out:
  cJSON_Delete(root);
  return rc;
}

/* The text of the file at path (malloc'd, NUL-terminated), or NULL (llama_error()). */
static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return llama_fail("cannot open %s", path), NULL;
  char *text = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (64l << 20) &&
      fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) &&
      fread(text, 1, (size_t)n, f) == (size_t)n) {
    text[n] = 0;
  } else {
    free(text);
    text = NULL;
  }
  fclose(f);
  if (!text) llama_fail("cannot read %s (or it is over 64 MiB)", path);
  return text;
}

int llama_config_load(llama_config *c, const char *path) {
  char *text = read_text(path);
  if (!text) return -1;
  int rc = llama_config_parse(c, text, path);
  free(text);
  if (rc == 0 && strlen(path) >= sizeof c->source)
    return llama_fail("%s: the path is too long", path);
  if (rc == 0) snprintf(c->source, sizeof c->source, "%s", path);
  return rc;
}

int llama_config_check(const llama_config *c, int seq) {
  if (c->vocab < 1 || c->hidden < 1 || c->intermediate < 1 || c->layers < 1 || c->heads < 1 ||
      c->kv_heads < 1 || c->head_dim < 1 || c->max_pos < 1)
    return llama_fail("the model needs positive vocab, hidden, intermediate, layers, heads, "
                      "kv_heads, head_dim and max_position_embeddings");
  if (c->heads % c->kv_heads)
    return llama_fail("%d key/value heads do not divide %d query heads (grouped-query attention "
                      "needs num_key_value_heads dividing num_attention_heads)",
                      c->kv_heads, c->heads);
  if (c->head_dim % 2)
    return llama_fail("head_dim %d is odd: rotary embeddings need pairs", c->head_dim);
  if (c->arch == LLAMA_ARCH_QWEN2 && (int64_t)c->head_dim * c->heads != c->hidden)
    return llama_fail("Qwen2 uses head_dim = hidden_size / num_attention_heads (%d / %d), not %d",
                      c->hidden, c->heads, c->head_dim);
  if (seq > c->max_pos)
    return llama_fail("the sequence length %d is over max_position_embeddings %d", seq, c->max_pos);
  if (c->sliding_window && seq > c->sliding_window)
    return llama_fail("the model's sliding window (%d tokens) is shorter than the sequence length "
                      "%d: the example's attention is fully causal, so it trains only sequences "
                      "that fit in the window (use --seq %d or less)",
                      c->sliding_window, seq, c->sliding_window);
  return 0;
}

/* A token id field: the source's value when it has the key (a list stays a list: the example
   never changes token ids), else v, or null when v < 0. */
static void put_token_id(cJSON *o, const char *key, int v) {
  if (!cJSON_HasObjectItem(o, key))
    ex_json_put(o, key, v < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(v));
}

/* The object an export starts from: c->source's fields, or an empty object. NULL (llama_error())
   when the source cannot be read back. */
static cJSON *base_object(const llama_config *c) {
  if (!c->source[0]) return cJSON_CreateObject();
  char *text = read_text(c->source);
  cJSON *o = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (o && cJSON_IsObject(o)) return o;
  cJSON_Delete(o);
  llama_fail("cannot read back %s, whose fields the export carries", c->source);
  return NULL;
}

/* The "llama3" rope_scaling object of c, or null. */
static cJSON *rope_scaling(const llama_config *c) {
  if (!c->rope_llama3) return cJSON_CreateNull();
  cJSON *rs = cJSON_CreateObject();
  cJSON_AddStringToObject(rs, "rope_type", "llama3");
  cJSON_AddNumberToObject(rs, "factor", c->rope_factor);
  cJSON_AddNumberToObject(rs, "low_freq_factor", c->rope_low_freq);
  cJSON_AddNumberToObject(rs, "high_freq_factor", c->rope_high_freq);
  cJSON_AddNumberToObject(rs, "original_max_position_embeddings", c->rope_orig_max_pos);
  return rs;
}

int llama_config_write(const llama_config *c, const char *path, const char *dtype) {
  static const char *arch_class[] = {"LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM"};
  cJSON *o = base_object(c);
  if (!o) return -1;
  cJSON *a = cJSON_CreateArray();
  cJSON_AddItemToArray(a, cJSON_CreateString(arch_class[c->arch]));
  ex_json_put(o, "architectures", a);
  ex_json_put(o, "model_type", cJSON_CreateString(llama_arch_name(c->arch)));
  ex_json_put(o, "vocab_size", cJSON_CreateNumber(c->vocab));
  ex_json_put(o, "hidden_size", cJSON_CreateNumber(c->hidden));
  ex_json_put(o, "intermediate_size", cJSON_CreateNumber(c->intermediate));
  ex_json_put(o, "num_hidden_layers", cJSON_CreateNumber(c->layers));
  ex_json_put(o, "num_attention_heads", cJSON_CreateNumber(c->heads));
  ex_json_put(o, "num_key_value_heads", cJSON_CreateNumber(c->kv_heads));
  if (c->arch != LLAMA_ARCH_QWEN2) ex_json_put(o, "head_dim", cJSON_CreateNumber(c->head_dim));
  ex_json_put(o, "max_position_embeddings", cJSON_CreateNumber(c->max_pos));
  ex_json_put(o, "rope_theta", cJSON_CreateNumber(c->rope_theta));
  ex_json_put(o, "rms_norm_eps", cJSON_CreateNumber(c->rms_eps));
  ex_json_put(o, "rope_scaling", rope_scaling(c));
  ex_json_put(o, "hidden_act", cJSON_CreateString("silu"));
  ex_json_put(o, "tie_word_embeddings", cJSON_CreateBool(c->tied));
  ex_json_put(o, "attention_dropout", cJSON_CreateNumber(0.0));
  if (c->arch == LLAMA_ARCH_LLAMA) {
    ex_json_put(o, "attention_bias", cJSON_CreateBool(0));
    ex_json_put(o, "mlp_bias", cJSON_CreateBool(0));
  } else if (c->arch == LLAMA_ARCH_QWEN2) {
    ex_json_put(o, "use_sliding_window", cJSON_CreateBool(c->sliding_window > 0));
  }
  if (c->arch != LLAMA_ARCH_LLAMA)
    ex_json_put(o, "sliding_window",
                c->sliding_window ? cJSON_CreateNumber(c->sliding_window) : cJSON_CreateNull());
  put_token_id(o, "bos_token_id", c->bos_id);
  put_token_id(o, "eos_token_id", c->eos_id);
  ex_json_put(o, "torch_dtype", cJSON_CreateString(dtype));
  if (cJSON_HasObjectItem(o, "dtype"))
    ex_json_put(o, "dtype", cJSON_CreateString(dtype)); /* newer name */
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  if (!text) return llama_fail("out of host memory writing %s", path);
  FILE *f = fopen(path, "w");
  int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  ok = (f && fclose(f) == 0) && ok;
  free(text);
  return ok ? 0 : llama_fail("cannot write %s", path);
}
