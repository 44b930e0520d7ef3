/* Text generation from a training example's model: one full forward over a window of T tokens per
 * generated token (no KV cache: the examples' forward path stays single). Every rank runs it in
 * lockstep (at stage 3 the forward's gathers are collective) with the same random stream, so all
 * ranks draw the same tokens; the caller prints on rank 0. */
#ifndef COMMON_SAMPLE_H
#define COMMON_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* The model's forward of one sequence of T tokens (win): leaves the logits of position row
   (stride values in the device dtype, the first V of them the vocabulary) at *logits_row on every
   rank. 0 or -1 (gpt2_error()). */
typedef int (*ex_forward_fn)(void *ctx, const int *win, int row, const void **logits_row);

/* A model to sample from. */
typedef struct {
  ex_forward_fn fwd;
  void *ctx;           /* fwd's */
  const gpt2_dev *dev; /* where the logits live */
  int T;               /* window (the forward's sequence length) */
  int V, stride;       /* vocabulary; elements per logits row (V, or a padded vocabulary) */
  int start;           /* the prompt token (0 when outside [0, V)) */
  int is_bytes;        /* byte vocabulary: text out, and `lines` newlines end it */
  uint64_t stream;     /* the counter RNG's stream (rng.h): each program keeps its own */
} ex_sampler;

/* Generates up to max_tokens tokens at `temperature` (<= 0: greedy, the most likely token each
   time; the seed then does not matter), stopping after `lines` newlines for byte vocabularies,
   as text (bytes) or token ids into out. 0 or -1 (gpt2_error()). */
int ex_sample(const ex_sampler *s, int lines, int max_tokens, float temperature, uint64_t seed,
              char *out, size_t out_size);

#endif
