/* Fixed training batches, for runs that must see exactly given sequences (the Hugging Face proof,
 * tests/llama): a file of int32 [steps][S][T + 1] tokens, the layout llama_ref.py writes. Step s
 * uses row block s; of its S sequences, global micro-batch g = micro * world + rank (the order of
 * common/data.h) takes sequences [g * B, (g + 1) * B), inputs the first T tokens of each and
 * targets the last T. So S = world * micro_steps * B, and any split of those S sequences into
 * ranks x micro-steps x B trains on the same tokens. */
#ifndef LLAMA_BATCHES_H
#define LLAMA_BATCHES_H

#include <stdint.h>

typedef struct {
  int32_t *tok; /* the whole file */
  int64_t n;    /* tokens */
} llama_batches;

/* Reads the file; 0 or -1 (gpt2_error()). */
int llama_batches_load(llama_batches *b, const char *path);
void llama_batches_free(llama_batches *b);
/* Inputs and targets (B*T each) of micro-step `micro` of `rank` at `step`; -1 (with a sentence)
   when the file holds fewer steps or its ids fall outside [0, vocab). */
int llama_batches_get(const llama_batches *b, int step, int rank, int world, int micro,
                      int micro_steps, int B, int T, int vocab, int *tok, int *tgt);

#endif
