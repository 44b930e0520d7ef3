/* RMSNorm over the last dimension (HF LlamaRMSNorm), forward (saving 1/rms) and backward. */
#include <math.h>

#include "llama_cpu.h"

/* The sum of squares is accumulated in double (this is the reference); 1/rms is fp32 like HF's
   torch.rsqrt on the fp32 variance. out = w * (x * r), HF's operation order. */
void zs_cpu_rmsnorm_fwd(float *out, float *rrms, const float *inp, const float *w, float eps, int N,
                        int C) {
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *o = out + (size_t)i * C;
    double ss = 0.0;
    for (int c = 0; c < C; c++)
      ss += (double)x[c] * x[c];
    float r = 1.0f / sqrtf((float)(ss / C) + eps);
    for (int c = 0; c < C; c++)
      o[c] = w[c] * (x[c] * r);
    rrms[i] = r;
  }
}

/* y_c = w_c x_c r with r = (mean(x^2) + eps)^(-1/2), so dr/dx_k = -r^3 x_k / C and
   dL/dx_k = r (g_k - n_k mean_c(g_c n_c)) with g = dout w, n = x r. */
void zs_cpu_rmsnorm_bwd(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                        const float *rrms, int N, int C) {
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    const float *d = dout + (size_t)i * C;
    float *dx = dinp + (size_t)i * C;
    float r = rrms[i], sgn = 0.0f;
    for (int c = 0; c < C; c++) {
      float n = x[c] * r;
      sgn += d[c] * w[c] * n;
      dw[c] += d[c] * n;
    }
    float mgn = sgn / (float)C;
    for (int c = 0; c < C; c++)
      dx[c] += r * (d[c] * w[c] - x[c] * r * mgn);
  }
}
