/* GPT-2's choices for sampling (the sampler itself is common/sample.c): a newline prompt for byte
 * data and <|endoftext|> for GPT-2 BPE, rows of the padded vocabulary, its own random stream, and
 * temperature <= 0 drawing at temperature 1. */
#include "sample.h"

#include "../common/sample.h"

/* ex_forward_fn on a gpt2_model (ctx): row `row` of m->logits (every position's). */
static int forward_logits(void *ctx, const int *win, int row, const void **logits_row) {
  gpt2_model *m = ctx;
  int rc = gpt2_forward_logits(m, win);
  *logits_row = gpt2_at(&m->dev, m->logits, (size_t)row * (size_t)m->cfg.padded_vocab);
  return rc;
}

int gpt2_sample(gpt2_model *m, int is_bytes, int lines, int max_tokens, float temperature,
                uint64_t seed, char *out, size_t out_size) {
  const ex_sampler s = {.fwd = forward_logits,
                        .ctx = m,
                        .dev = &m->dev,
                        .T = m->T,
                        .V = m->cfg.vocab,
                        .stride = m->cfg.padded_vocab,
                        .start = is_bytes ? '\n' : 50256, /* GPT-2's <|endoftext|> for BPE data */
                        .is_bytes = is_bytes,
                        .stream = 0x5a3b1e};
  return ex_sample(&s, lines, max_tokens, temperature > 0 ? temperature : 1.0f, seed, out,
                   out_size);
}
