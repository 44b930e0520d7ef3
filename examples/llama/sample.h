/* Text generation from the Llama example's model: one full forward over a window of T tokens per
 * generated token (no KV cache: the example's forward path stays single). Every rank runs it in
 * lockstep (at stage 3 the forward's gathers are collective) with the same random stream, so all
 * ranks draw the same tokens; the caller prints on rank 0. */
#ifndef LLAMA_SAMPLE_H
#define LLAMA_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "../gpt2/device.h"

/* The model's forward of one sequence of T tokens (win): leaves the logits of every position,
   [T, V] in the device dtype, at *logits. 0 or -1. */
typedef int (*llama_forward_fn)(void *ctx, const int *win, const void **logits);

/* Generates up to max_tokens tokens from the prompt token `start` at `temperature` (<= 0:
   greedy, the most likely token each time; the seed then does not matter) (stopping
   after `lines` newlines for byte vocabularies), as text (bytes) or token ids into out. 0 or -1
   (gpt2_error()). */
int llama_sample(llama_forward_fn fwd, void *ctx, const gpt2_dev *dev, int T, int V, int start,
                 int is_bytes, int lines, int max_tokens, float temperature, uint64_t seed,
                 char *out, size_t out_size);

#endif
