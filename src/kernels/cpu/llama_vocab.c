/* Vocabulary-parallel token embedding and cross-entropy (tensor parallelism): each rank holds the
 * vocabulary rows [v0, v0 + Vl); its outputs are parts that a sum (the embedding) or a merge of
 * (max, sum) pairs (the loss) over the ranks completes. */
#include <math.h>
#include <string.h>

#include "llama_cpu.h"

/* Rows of tokens this rank holds copied, the others zero. */
void zs_cpu_vocab_embedding_fwd(float *out, const int *tok, const float *wte, int N, int C, int v0,
                                int Vl) {
  for (int i = 0; i < N; i++) {
    float *o = out + (size_t)i * C;
    const int r = tok[i] - v0;
    if (r >= 0 && r < Vl)
      memcpy(o, wte + (size_t)r * C, (size_t)C * sizeof(float));
    else
      memset(o, 0, (size_t)C * sizeof(float));
  }
}

/* Scatter-add in row order for the tokens this rank holds. */
void zs_cpu_vocab_embedding_bwd(float *dwte, const float *dout, const int *tok, int N, int C,
                                int v0, int Vl) {
  for (int i = 0; i < N; i++) {
    const int r = tok[i] - v0;
    if (r < 0 || r >= Vl) continue;
    float *dw = dwte + (size_t)r * C;
    const float *d = dout + (size_t)i * C;
    for (int c = 0; c < C; c++)
      dw[c] += d[c];
  }
}

/* Per row: the max, the sum of exp(l - max) (in double, rounded once) and the target's logit when
   this rank holds it. */
void zs_cpu_vocab_xent_part(float *part, const float *logits, const int *targets, int N, int v0,
                            int Vl) {
  for (int i = 0; i < N; i++) {
    const float *l = logits + (size_t)i * Vl;
    float mx = l[0];
    for (int j = 1; j < Vl; j++)
      mx = l[j] > mx ? l[j] : mx;
    double s = 0.0;
    for (int j = 0; j < Vl; j++)
      s += expf(l[j] - mx);
    const int t = targets[i] - v0;
    part[3 * (size_t)i] = mx;
    part[3 * (size_t)i + 1] = (float)s;
    part[3 * (size_t)i + 2] = t >= 0 && t < Vl ? l[t] : 0.0f;
  }
}

/* The ranks' parts merged in rank order: M = max m_r, S = sum s_r exp(m_r - M), t = sum t_r (one
   rank's is the logit, the others' 0); loss = (M - t) + log S, dlogits = exp(l - M) / S * dloss
   minus dloss at the target. */
void zs_cpu_vocab_xent_finish(float *losses, float *dlogits, const float *logits,
                              const float *parts, int P, const int *targets, float dloss, int N,
                              int v0, int Vl) {
  for (int i = 0; i < N; i++) {
    float M = parts[3 * (size_t)i];
    for (int r = 1; r < P; r++) {
      const float m = parts[((size_t)r * N + i) * 3];
      M = m > M ? m : M;
    }
    double S = 0.0;
    float lt = 0.0f;
    for (int r = 0; r < P; r++) {
      const float *p = parts + ((size_t)r * N + i) * 3;
      S += (double)p[1] * exp((double)p[0] - (double)M);
      lt += p[2];
    }
    losses[i] = (M - lt) + (float)log(S);
    if (!dlogits) continue;
    const float *l = logits + (size_t)i * Vl;
    float *d = dlogits + (size_t)i * Vl;
    const float inv = (float)(1.0 / S);
    for (int j = 0; j < Vl; j++)
      d[j] = expf(l[j] - M) * inv * dloss; /* l[j] read before d[j] (they may be one float) */
    const int t = targets[i] - v0;
    if (t >= 0 && t < Vl) d[t] -= dloss;
  }
}
