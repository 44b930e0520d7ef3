/* Text generation from the trained model. Every rank runs it in lockstep (the forward gathers
 * units, which at stage 3 is collective) with the same random stream, so all ranks agree on
 * every token; only rank 0 prints. */
#ifndef GPT2_SAMPLE_H
#define GPT2_SAMPLE_H

#include <stdint.h>

#include "model.h"

/* Generates up to max_tokens tokens (stopping after `lines` newlines for byte vocabularies)
   from a newline prompt (bytes) or <|endoftext|> at `temperature` (<= 0: 1); writes the text
   (bytes) or token ids to out. 0 or -1 (gpt2_error()). */
int gpt2_sample(gpt2_model *m, int is_bytes, int lines, int max_tokens, float temperature,
                uint64_t seed, char *out, size_t out_size);

#endif
