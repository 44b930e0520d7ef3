/* The Llama example's choices for sampling (the sampler itself is common/sample.h): rows of the
 * vocabulary, its own random stream, temperature <= 0 greedy. Every rank runs it in lockstep (at
 * stage 3 the forward's gathers are collective) with the same random stream, so all ranks draw
 * the same tokens; the caller prints on rank 0. */
#ifndef LLAMA_SAMPLE_H
#define LLAMA_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/sample.h"

/* Generates up to max_tokens tokens from the prompt token `start` at `temperature` (<= 0:
   greedy, the most likely token each time; the seed then does not matter) (stopping
   after `lines` newlines for byte vocabularies), as text (bytes) or token ids into out. fwd
   leaves [T, V] logits. 0 or -1 (gpt2_error()). */
int llama_sample(ex_forward_fn fwd, void *ctx, const gpt2_dev *dev, int T, int V, int start,
                 int is_bytes, int lines, int max_tokens, float temperature, uint64_t seed,
                 char *out, size_t out_size);

#endif
