/* Fused softmax + cross-entropy over padded logit rows (GPT-2 head), loss and dlogits in one go. */
#include "gpt2_cpu.h"

#include <math.h>

/* Largest of the V real logits of a row. */
static float row_max(const float *l, int V) {
  float mx = l[0];
  for (int j = 1; j < V; j++)
    mx = l[j] > mx ? l[j] : mx;
  return mx;
}

/* Per row: the max, the target's logit (read first, because dlogits may alias logits), then the
   exps, which are parked in the dlogits row when there is one so each is computed once. The loss
   is (max - logit[target]) + log(sum), which avoids cancelling two large numbers. Padded columns
   (>= V) are never read, and are zeroed in dlogits. */
void zs_cpu_softmax_xent(float *losses, float *dlogits, const float *logits, const int *targets,
                         float dloss, int N, int V, int Vp) {
  for (int i = 0; i < N; i++) {
    const float *l = logits + (size_t)i * Vp;
    float mx = row_max(l, V);
    float lt = l[targets[i]];
    double sum = 0.0;
    if (!dlogits) {
      for (int j = 0; j < V; j++)
        sum += expf(l[j] - mx);
      losses[i] = (mx - lt) + (float)log(sum);
      continue;
    }
    float *d = dlogits + (size_t)i * Vp;
    for (int j = 0; j < V; j++) {
      float e = expf(l[j] - mx); /* l[j] is dead once read: d[j] may be the same float */
      d[j] = e;
      sum += e;
    }
    losses[i] = (mx - lt) + (float)log(sum);
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < V; j++)
      d[j] = d[j] * inv * dloss;
    d[targets[i]] -= dloss;
    for (int j = V; j < Vp; j++)
      d[j] = 0.0f;
  }
}
