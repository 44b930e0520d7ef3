/* Token embedding without positions (Llama, Qwen2, Mistral), forward and backward. */
#include <string.h>

#include "llama_cpu.h"

/* One row copy per token. */
void zs_cpu_embedding_fwd(float *out, const int *tok, const float *wte, int N, int C) {
  for (int i = 0; i < N; i++)
    memcpy(out + (size_t)i * C, wte + (size_t)tok[i] * C, (size_t)C * sizeof(float));
}

/* Scatter-add in row order, so a repeated token accumulates in a fixed order. */
void zs_cpu_embedding_bwd(float *dwte, const float *dout, const int *tok, int N, int C) {
  for (int i = 0; i < N; i++) {
    float *dw = dwte + (size_t)tok[i] * C;
    const float *d = dout + (size_t)i * C;
    for (int c = 0; c < C; c++)
      dw[c] += d[c];
  }
}
