/* Token + position embedding (GPT-2 encoder), forward and backward. */
#include "gpt2_cpu.h"

/* One output row per (b, t): the token's wte row plus the position's wpe row. */
void zs_cpu_encoder_fwd(float *out, const int *tok, const float *wte, const float *wpe, int B,
                        int T, int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      size_t bt = (size_t)b * T + t;
      float *o = out + bt * C;
      const float *we = wte + (size_t)tok[bt] * C;
      const float *pe = wpe + (size_t)t * C;
      for (int c = 0; c < C; c++)
        o[c] = we[c] + pe[c];
    }
  }
}

/* Scatter-add each dout row into its token's dwte row and its position's dwpe row. Rows are
   visited in (b, t) order, so repeated tokens accumulate in a fixed order (deterministic). */
void zs_cpu_encoder_bwd(float *dwte, float *dwpe, const float *dout, const int *tok, int B, int T,
                        int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      size_t bt = (size_t)b * T + t;
      const float *d = dout + bt * C;
      float *dwe = dwte + (size_t)tok[bt] * C;
      float *dpe = dwpe + (size_t)t * C;
      for (int c = 0; c < C; c++) {
        dwe[c] += d[c];
        dpe[c] += d[c];
      }
    }
  }
}
