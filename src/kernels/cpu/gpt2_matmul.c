/* Linear layer out = inp @ w^T + bias through OpenBLAS, forward and backward. */
#include "gpt2_cpu.h"

#include <cblas.h>

/* Bias rows are written first so one GEMM with beta = 1 adds the product onto them. */
void zs_cpu_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N,
                       int C, int OC) {
  float beta = 0.0f;
  if (bias) {
    for (int i = 0; i < N; i++) {
      float *o = out + (size_t)i * OC;
      for (int j = 0; j < OC; j++)
        o[j] = bias[j];
    }
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, w, C, beta, out, OC);
}

/* Three accumulations (beta = 1 everywhere: gradients are added, never overwritten); dinp NULL
   skips the first. dbias sums dout's rows in row order, a vectorisable axpy per row. */
void zs_cpu_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                       const float *w, int N, int C, int OC) {
  if (dinp)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, w, C, 1.0f,
                dinp, C);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw,
              C);
  if (dbias) {
    for (int i = 0; i < N; i++) {
      const float *d = dout + (size_t)i * OC;
      for (int j = 0; j < OC; j++)
        dbias[j] += d[j];
    }
  }
}
