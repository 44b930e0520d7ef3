/* LayerNorm over the last dimension, forward (saving mean and rstd) and backward. */
#include "gpt2_cpu.h"

#include <math.h>

/* Two passes per row (mean, then the biased variance around it) for accuracy; the statistics are
   accumulated in double because C is small and this is the reference. */
void zs_cpu_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C) {
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *o = out + (size_t)i * C;
    double s = 0.0;
    for (int c = 0; c < C; c++)
      s += x[c];
    float m = (float)(s / C);
    double v = 0.0;
    for (int c = 0; c < C; c++) {
      float d = x[c] - m;
      v += (double)d * d;
    }
    float r = 1.0f / sqrtf((float)(v / C) + ZS_LAYERNORM_EPS);
    for (int c = 0; c < C; c++)
      o[c] = (x[c] - m) * r * w[c] + b[c];
    mean[i] = m;
    rstd[i] = r;
  }
}

/* With n = (x - mean) * rstd and g = dout * w:
     dinp += rstd * (g - mean(g) - n * mean(g * n)),  dw += dout * n,  db += dout. */
void zs_cpu_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                          const float *w, const float *mean, const float *rstd, int N, int C) {
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    const float *d = dout + (size_t)i * C;
    float *dx = dinp + (size_t)i * C;
    float m = mean[i], r = rstd[i];
    float sg = 0.0f, sgn = 0.0f;
    for (int c = 0; c < C; c++) {
      float n = (x[c] - m) * r;
      float g = d[c] * w[c];
      sg += g;
      sgn += g * n;
      dw[c] += d[c] * n;
      db[c] += d[c];
    }
    float mg = sg / (float)C, mgn = sgn / (float)C;
    for (int c = 0; c < C; c++) {
      float n = (x[c] - m) * r;
      dx[c] += r * (d[c] * w[c] - mg - n * mgn);
    }
  }
}
