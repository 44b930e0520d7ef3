/* GELU in its tanh form (as GPT-2 uses it), forward and backward. */
#include "gpt2_cpu.h"

#include <math.h>

#define ZS_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define ZS_GELU_A 0.044715f

/* out = 0.5 x (1 + tanh(k (x + a x^3))). */
void zs_cpu_gelu_fwd(float *out, const float *inp, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    float u = ZS_GELU_K * (x + ZS_GELU_A * x * x * x);
    out[i] = 0.5f * x * (1.0f + tanhf(u));
  }
}

/* d/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 a x^2); dinp += dout * that. */
void zs_cpu_gelu_bwd(float *dinp, const float *inp, const float *dout, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    float u = ZS_GELU_K * (x + ZS_GELU_A * x * x * x);
    float th = tanhf(u);
    float du = ZS_GELU_K * (1.0f + 3.0f * ZS_GELU_A * x * x);
    float g = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
    dinp[i] += dout[i] * g;
  }
}
