/* The small Llama-family model the C tests of the Llama example build (test_llama_io.c,
 * test_llama_engine.c): every feature of its arch (GQA, Qwen2's biases and tied head) at sizes
 * that run in milliseconds. */
#ifndef ZS_TESTS_LLAMA_TINY_CONFIG_H
#define ZS_TESTS_LLAMA_TINY_CONFIG_H

#include "common/llama_config.h"

/* arch's defaults with hidden 16, intermediate 24, 2 layers, 4 query heads and 2 key-value heads
   of 4, the given vocabulary and positions, and a tied head for Qwen2 (untied otherwise). */
static inline llama_config llama_tiny_config(llama_arch arch, int vocab, int max_pos) {
  llama_config c;
  llama_config_defaults(&c, arch);
  c.vocab = vocab;
  c.hidden = 16;
  c.intermediate = 24;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 4;
  c.max_pos = max_pos;
  c.tied = arch == LLAMA_ARCH_QWEN2;
  return c;
}

#endif
