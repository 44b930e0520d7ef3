/* SwiGLU (SiLU-gated MLP product), forward and backward, elementwise over two buffers. */
#include <math.h>

#include "llama_cpu.h"

/* out = silu(g) u with silu(g) = g sigmoid(g). Reads both inputs before the write (aliasing). */
void zs_cpu_swiglu_fwd(float *out, const float *gate, const float *up, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g = gate[i], u = up[i];
    float s = 1.0f / (1.0f + expf(-g));
    out[i] = g * s * u;
  }
}

/* silu'(g) = s + g s (1 - s) = s (1 + g (1 - s)). */
void zs_cpu_swiglu_bwd(float *dgate, float *dup, const float *dout, const float *gate,
                       const float *up, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g = gate[i], d = dout[i];
    float s = 1.0f / (1.0f + expf(-g));
    dgate[i] += d * up[i] * s * (1.0f + g * (1.0f - s));
    dup[i] += d * g * s;
  }
}
