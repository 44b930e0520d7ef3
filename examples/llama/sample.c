/* Sampling for the Llama example (see sample.h): common/sample.c with the Llama's stream. */
#include "sample.h"

int llama_sample(ex_forward_fn fwd, void *ctx, const gpt2_dev *dev, int T, int V, int start,
                 int is_bytes, int lines, int max_tokens, float temperature, uint64_t seed,
                 char *out, size_t out_size) {
  const ex_sampler s = {.fwd = fwd,
                        .ctx = ctx,
                        .dev = dev,
                        .T = T,
                        .V = V,
                        .stride = V,
                        .start = start,
                        .is_bytes = is_bytes,
                        .stream = 0x11a3a};
  return ex_sample(&s, lines, max_tokens, temperature, seed, out, out_size);
}
