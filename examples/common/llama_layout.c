/* The units and tensors of a Llama-family model (see llama_layout.h). */
#include "llama_layout.h"

#include <stdio.h>
#include <string.h>

#include "llama_util.h"

int llama_num_units(const llama_config *c) {
  return c->layers + 2;
}

int llama_unit_name(const llama_config *c, int u, char *buf, size_t n) {
  int k;
  if (u == 0)
    k = snprintf(buf, n, "embedding");
  else if (u == c->layers + 1)
    k = snprintf(buf, n, "head");
  else if (u > 0 && u <= c->layers)
    k = snprintf(buf, n, "layer.%d", u - 1);
  else
    return -1;
  return k > 0 && (size_t)k < n ? 0 : -1;
}

/* One tensor's descriptor. */
static zs_tensor_desc desc(const char *name, int64_t d0, int64_t d1, int nwd) {
  zs_tensor_desc d = {name, d1 ? 2 : 1, {d0, d1, 0, 0}, nwd};
  return d;
}

/* The HF suffix of each layer tensor (after "model.layers.N."), in the order of the descs. */
static const char *const layer_hf[] = {
    "input_layernorm.weight",  "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.q_proj.bias",   "self_attn.k_proj.bias",
    "self_attn.v_proj.bias",   "self_attn.o_proj.weight", "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",    "mlp.up_proj.weight",      "mlp.down_proj.weight"};
static const char *const layer_names[] = {"attn_norm", "q_proj",    "k_proj",  "v_proj",
                                          "q_bias",    "k_bias",    "v_bias",  "o_proj",
                                          "mlp_norm",  "gate_proj", "up_proj", "down_proj"};

/* Layer tensor t of the descs -> its LLAY_* slot (biases absent without qkv_bias). */
static int layer_slot(const llama_config *c, int t) {
  return (!c->qkv_bias && t >= LLAY_Q_B) ? t + 3 : t;
}

int llama_unit_descs(const llama_config *c, int u, zs_tensor_desc *d) {
  const int64_t C = c->hidden, V = c->vocab_part ? c->vocab_part : c->vocab, I = c->intermediate;
  const int64_t Q = (int64_t)c->heads * c->head_dim;
  const int64_t KV = (int64_t)(c->kv_whole ? c->kv_whole : c->kv_heads) * c->head_dim;
  if (u == 0) {
    d[0] = desc("embed", V, C, 0);
    return 1;
  }
  if (u == c->layers + 1) {
    d[0] = desc("norm", C, 0, 1);
    if (c->tied) return 1;
    d[1] = desc("lm_head", V, C, 0);
    return 2;
  }
  if (u < 0 || u > c->layers + 1) return -1;
  const int64_t shapes[LLAY_NT][2] = {{C, 0},  {Q, C}, {KV, C}, {KV, C}, {Q, 0}, {KV, 0},
                                      {KV, 0}, {C, Q}, {C, 0},  {I, C},  {I, C}, {C, I}};
  int n = 0;
  for (int s = 0; s < LLAY_NT; s++) {
    if (!c->qkv_bias && s >= LLAY_Q_B && s <= LLAY_V_B) continue;
    const int nwd = shapes[s][1] == 0; /* norms and biases */
    d[n++] = desc(layer_names[s], shapes[s][0], shapes[s][1], nwd);
  }
  return n;
}

int llama_hf_name(const llama_config *c, int u, int t, char *buf, size_t n) {
  int k = -1;
  if (u == 0 && t == 0)
    k = snprintf(buf, n, "model.embed_tokens.weight");
  else if (u == c->layers + 1 && t == 0)
    k = snprintf(buf, n, "model.norm.weight");
  else if (u == c->layers + 1 && t == 1 && !c->tied)
    k = snprintf(buf, n, "lm_head.weight");
  else if (u > 0 && u <= c->layers && t >= 0 && t < (c->qkv_bias ? LLAY_NT : LLAY_NT - 3))
    k = snprintf(buf, n, "model.layers.%d.%s", u - 1, layer_hf[layer_slot(c, t)]);
  return k > 0 && (size_t)k < n ? 0 : -1;
}

int llama_from_hf_name(const llama_config *c, const char *name, int *u, int *t) {
  char want[160];
  if (strcmp(name, "model.embed_tokens.weight") == 0) {
    *u = 0;
    *t = 0;
    return 0;
  }
  if (strcmp(name, "model.norm.weight") == 0 || (!c->tied && strcmp(name, "lm_head.weight") == 0)) {
    *u = c->layers + 1;
    *t = name[0] == 'l';
    return 0;
  }
  int l, off = 0;
  if (sscanf(name, "model.layers.%d.%n", &l, &off) != 1 || off == 0 || l < 0 || l >= c->layers)
    return -1;
  const int nt = c->qkv_bias ? LLAY_NT : LLAY_NT - 3;
  for (int k = 0; k < nt; k++) {
    snprintf(want, sizeof want, "model.layers.%d.%s", l, layer_hf[layer_slot(c, k)]);
    if (strcmp(name, want) == 0) {
      *u = l + 1;
      *t = k;
      return 0;
    }
  }
  return -1;
}

int64_t llama_unit_numel(const llama_config *c, int u) {
  zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
  const int n = llama_unit_descs(c, u, d);
  int64_t s = 0;
  for (int t = 0; t < n; t++)
    s += d[t].ndim == 2 ? d[t].shape[0] * d[t].shape[1] : d[t].shape[0];
  return s;
}

int64_t llama_num_params(const llama_config *c) {
  int64_t s = 0;
  for (int u = 0; u < llama_num_units(c); u++)
    s += llama_unit_numel(c, u);
  return s;
}

zs_tp_layout llama_tp_layout(const llama_config *c, int sp, int u, int t) {
  const zs_tp_layout rep = sp ? ZS_TP_PARTIAL_GRAD : ZS_TP_REPLICATED; /* each rank's rows' part */
  if (u == 0 || (u == c->layers + 1 && t == 1)) /* the embedding, the untied head */
    return c->vocab_part ? ZS_TP_SPLIT_DIM0 : rep;
  if (u < 1 || u > c->layers) return rep; /* the final norm */
  switch (layer_slot(c, t)) {
  case LLAY_ATTN_NORM:
  case LLAY_MLP_NORM:
    return rep;
  case LLAY_K_W:
  case LLAY_V_W:
  case LLAY_K_B:
  case LLAY_V_B: /* fewer kv heads than ranks: whole, each rank's gradient its own head's rows */
    return c->kv_whole ? ZS_TP_PARTIAL_GRAD : ZS_TP_SPLIT_DIM0;
  case LLAY_Q_W:
  case LLAY_Q_B:
  case LLAY_GATE_W:
  case LLAY_UP_W:
    return ZS_TP_SPLIT_DIM0;
  case LLAY_O_W:
  case LLAY_DOWN_W:
    return ZS_TP_SPLIT_DIM1;
  default:
    return ZS_TP_REPLICATED;
  }
}

int llama_tp_local(const llama_config *c, int tp, int vocab_parallel, llama_config *local) {
  *local = *c;
  if (tp <= 1) return 0;
  const int kv_rep = c->kv_heads < tp; /* each kv head on tp / kv_heads ranks */
  if (c->heads % tp || c->intermediate % tp || (kv_rep ? tp % c->kv_heads : c->kv_heads % tp))
    return llama_fail("--tp %d: tensor parallelism splits the attention heads (%d) and the MLP's "
                      "intermediate size (%d) evenly, and the key-value heads (%d) evenly or "
                      "each over an equal number of ranks: use a tp size that divides the first "
                      "two and divides or is a multiple of the third",
                      tp, c->heads, c->intermediate, c->kv_heads);
  local->heads /= tp;
  local->kv_heads = kv_rep ? 1 : c->kv_heads / tp;
  local->kv_whole = kv_rep ? c->kv_heads : 0;
  local->intermediate /= tp;
  local->vocab_part = vocab_parallel && c->vocab % tp == 0 ? c->vocab / tp : 0;
  return 0;
}
