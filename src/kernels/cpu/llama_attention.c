/* Causal attention with grouped-query heads (Llama 2/3, Qwen2, Mistral), flash style: the forward
 * keeps only the log-sum-exp of each softmax row, the backward recomputes the probabilities.
 * Nothing of size T x T is stored; work is O(T^2 D) per query head, forward and backward.
 *
 * Layout: q, out [B,T,NH*D]; key, val [B,T,NKV*D]; lse [B,NH,T]. Query head h reads kv head
 * h / G with G = NH / NKV (consecutive query heads share a kv head, as HF's repeat_kv).
 */
#include <math.h>

#include "attention_rows.h"
#include "llama_cpu.h"

/* Query rows of head h are NH*D floats apart, its kv head's rows NKV*D (attention_rows.h). */
void zs_cpu_gqa_attention_fwd(float *out, float *lse, const float *q, const float *key,
                              const float *val, int B, int T, int NH, int NKV, int D) {
  const int G = NH / NKV;
  const size_t qs = (size_t)NH * D, ks = (size_t)NKV * D;
  const float scale = 1.0f / sqrtf((float)D);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const size_t kvo = (size_t)b * T * ks + (size_t)(h / G) * D;
      float *lrow = lse + ((size_t)b * NH + h) * T;
      for (int t = 0; t < T; t++) {
        const size_t qo = ((size_t)b * T + t) * qs + (size_t)h * D;
        attn_row_fwd(out + qo, &lrow[t], q + qo, key + kvo, val + kvo, ks, t, D, scale);
      }
    }
}

/* For query t of head h and key j <= t (kv head h / G):
     p = exp(s_tj - lse_t),  dv_j += p do_t,  ds = p (do_t . v_j - D_t) with D_t = do_t . o_t,
     dq_t += scale ds k_j,   dk_j += scale ds q_t.
   The kv heads' gradients are summed over the group's query heads in increasing h (the loop
   order), so the result is deterministic. */
void zs_cpu_gqa_attention_bwd(float *dq, float *dkey, float *dval, const float *dout,
                              const float *q, const float *key, const float *val, const float *out,
                              const float *lse, int B, int T, int NH, int NKV, int D) {
  const int G = NH / NKV;
  const size_t qs = (size_t)NH * D, ks = (size_t)NKV * D;
  const float scale = 1.0f / sqrtf((float)D);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const size_t kvo = (size_t)b * T * ks + (size_t)(h / G) * D;
      const float *lrow = lse + ((size_t)b * NH + h) * T;
      for (int t = 0; t < T; t++) {
        const size_t qo = ((size_t)b * T + t) * qs + (size_t)h * D;
        attn_row_bwd(dq + qo, dkey + kvo, dval + kvo, q + qo, out + qo, dout + qo, lrow[t],
                     key + kvo, val + kvo, ks, t, D, scale);
      }
    }
}
