/* Training data: an llm.c token file (256 x int32 header: magic 20240520, version 1, token count;
 * then uint16 tokens) or, with no file, raw bytes of a text (vocabulary 256).
 *
 * Sharding rule, the same for every split of a step into ranks x micro-steps: step s has
 * G = world * micro_steps micro-batches, numbered g = s * G + k, k = rank * micro_steps + micro.
 * Sequence j of micro-batch g starts at a position drawn from the counter RNG at index g * B + j.
 * So 1 rank x 4 micro-steps and 4 ranks x 1 micro-step train on the same 4 micro-batches in the
 * same order (rank r's batch = the single rank's micro-step r). */
#ifndef COMMON_DATA_H
#define COMMON_DATA_H

#include <stdint.h>

typedef struct {
  int *tokens;     /* all tokens as int32 */
  int64_t n;       /* token count */
  int64_t n_train; /* tokens [0, n_train) train; [n_train, n) validation */
  int vocab;       /* largest token + 1 for token files, 256 for text */
  int is_text;     /* bytes of a text file */
  uint64_t seed;
} gpt2_data;

/* Loads an llm.c token file (is_text 0) or a text file as bytes (is_text 1). The last val_frac
   of the tokens is held out (0 = none). 0 or -1. */
int gpt2_data_load(gpt2_data *d, const char *path, int is_text, double val_frac, uint64_t seed);
void gpt2_data_free(gpt2_data *d);
/* Inputs and targets (B*T each) of micro-step `micro` of `rank` at `step`: global micro-batch
   micro * world + rank of the step (micro-step-major, the engine's deterministic order). */
int gpt2_data_train_batch(const gpt2_data *d, int64_t step, int rank, int world, int micro,
                          int micro_steps, int B, int T, int *tok, int *tgt);
/* Validation batch i (consecutive windows of the held-out tail, wrapping); -1 if too short. */
int gpt2_data_val_batch(const gpt2_data *d, int i, int B, int T, int *tok, int *tgt);
/* Unigram entropy of the training tokens in nats (what a model that ignores context reaches). */
double gpt2_data_unigram_entropy(const gpt2_data *d);

#endif
