/* Fixed training batches (see batches.h). */
#include "batches.h"

#include <stdio.h>
#include <stdlib.h>

#include "../common/util.h"

int llama_batches_load(llama_batches *b, const char *path) {
  b->tok = NULL;
  b->n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return gpt2_fail("cannot open the batches file %s", path);
  long bytes = -1;
  if (fseek(f, 0, SEEK_END) == 0) bytes = ftell(f);
  if (bytes <= 0 || bytes % 4 != 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return gpt2_fail("%s is not a file of int32 tokens", path);
  }
  b->n = bytes / 4;
  b->tok = malloc((size_t)bytes);
  const int ok = b->tok && fread(b->tok, 4, (size_t)b->n, f) == (size_t)b->n;
  fclose(f);
  return ok ? 0 : gpt2_fail("cannot read %s", path);
}

void llama_batches_free(llama_batches *b) {
  free(b->tok);
  b->tok = NULL;
  b->n = 0;
}

int llama_batches_get(const llama_batches *b, int step, int rank, int world, int micro,
                      int micro_steps, int B, int T, int vocab, int *tok, int *tgt) {
  const int64_t S = (int64_t)world * micro_steps * B, row = T + 1;
  const int64_t g = (int64_t)micro * world + rank;
  const int64_t first = ((int64_t)step * S + g * B) * row;
  if (first + (int64_t)B * row > b->n)
    return gpt2_fail("the batches file holds %lld tokens: step %d needs %lld sequences of %d",
                     (long long)b->n, step + 1, (long long)S, T + 1);
  for (int j = 0; j < B; j++) {
    const int32_t *s = b->tok + first + (int64_t)j * row;
    for (int t = 0; t <= T; t++)
      if (s[t] < 0 || s[t] >= vocab)
        return gpt2_fail("the batches file has token %d outside the vocabulary %d", s[t], vocab);
    for (int t = 0; t < T; t++) {
      tok[j * T + t] = s[t];
      tgt[j * T + t] = s[t + 1];
    }
  }
  return 0;
}
