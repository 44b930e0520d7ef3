/* Residual connection: out = a + b, and its backward (the gradient flows to both inputs). */
#include "gpt2_cpu.h"

/* Elementwise sum. */
void zs_cpu_residual_fwd(float *out, const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    out[i] = a[i] + b[i];
}

/* Both inputs receive dout. No restrict: da == db is legal and must add twice. */
void zs_cpu_residual_bwd(float *da, float *db, const float *dout, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float d = dout[i];
    da[i] += d;
    db[i] += d;
  }
}
