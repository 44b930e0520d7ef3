/* GPT-2 sizes and the counts derived from them. */
#include "config.h"

#include <string.h>

/* The four published depths; all use 64-channel heads and 1024 positions. */
int gpt2_config_preset(gpt2_config *c, const char *name) {
  static const struct {
    const char *name;
    int layers, heads, channels;
  } presets[] = {
      {"d12", 12, 12, 768}, {"d24", 24, 16, 1024}, {"d36", 36, 20, 1280}, {"d48", 48, 25, 1600}};
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
    if (strcmp(name, presets[i].name) == 0) {
      c->layers = presets[i].layers;
      c->heads = presets[i].heads;
      c->channels = presets[i].channels;
      c->max_seq = 1024;
      return 0;
    }
  }
  return -1;
}

/* Large vocabularies round to 128 (tensor-core friendly GEMM shapes), small ones to 64. */
int gpt2_pad_vocab(int vocab) {
  int m = vocab > 4096 ? 128 : 64;
  return (vocab + m - 1) / m * m;
}

/* Every dimension must be positive, heads must divide channels, and the padding must cover V. */
const char *gpt2_config_check(const gpt2_config *c) {
  if (c->layers <= 0) return "--layers must be > 0";
  if (c->channels <= 0) return "--channels must be > 0";
  if (c->heads <= 0) return "--heads must be > 0";
  if (c->channels % c->heads != 0) return "--channels must be a multiple of --heads";
  if (c->vocab <= 0) return "--vocab must be > 0";
  if (c->padded_vocab < c->vocab) return "the padded vocabulary is smaller than the vocabulary";
  if (c->max_seq <= 0) return "--seq must be > 0";
  return NULL;
}

/* Embedding (wte + wpe), L blocks of 12C^2 + 13C, and the final layernorm. */
int64_t gpt2_num_params(const gpt2_config *c) {
  int64_t C = c->channels, L = c->layers;
  int64_t emb = (int64_t)c->padded_vocab * C + (int64_t)c->max_seq * C;
  int64_t block = 12 * C * C + 13 * C;
  return emb + L * block + 2 * C;
}

/* 6 FLOPs per parameter per token (forward 2, backward 4) plus the attention score/value
   matmuls, 6*L*C*T per token. */
double gpt2_flops_per_token(const gpt2_config *c, int T) {
  return 6.0 * (double)gpt2_num_params(c) + 6.0 * c->layers * (double)c->channels * T;
}
