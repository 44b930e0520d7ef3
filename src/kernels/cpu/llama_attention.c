/* Causal attention with grouped-query heads (Llama 2/3, Qwen2, Mistral), flash style: the forward
 * keeps only the log-sum-exp of each softmax row, the backward recomputes the probabilities.
 * Nothing of size T x T is stored; work is O(T^2 D) per query head, forward and backward.
 *
 * Layout: q, out [B,T,NH*D]; key, val [B,T,NKV*D]; lse [B,NH,T]. Query head h reads kv head
 * h / G with G = NH / NKV (consecutive query heads share a kv head, as HF's repeat_kv).
 */
#include <math.h>

#include "llama_cpu.h"
#include "vec4.h"

/* One query row: online softmax over keys 0..t (k and v rows `rs` floats apart). Invariant after
   key j: m = the largest score so far, l = sum exp(s - m), o = sum exp(s - m) v; both rescaled by
   exp(m_old - m_new) when m grows. */
static void gqa_row_fwd(float *o, float *lse, const float *q, const float *kbase,
                        const float *vbase, size_t rs, int t, int D, float scale) {
  float m = -INFINITY, l = 0.0f;
  for (int i = 0; i < D; i++)
    o[i] = 0.0f;
  for (int j = 0; j <= t; j++) {
    float s = dot(q, kbase + (size_t)j * rs, D) * scale;
    if (s > m) {
      float corr = expf(m - s); /* 0 for the first key (m = -inf) */
      l *= corr;
      for (int i = 0; i < D; i++)
        o[i] *= corr;
      m = s;
    }
    float p = expf(s - m);
    l += p;
    axpy(o, p, vbase + (size_t)j * rs, D);
  }
  float inv = 1.0f / l;
  for (int i = 0; i < D; i++)
    o[i] *= inv;
  *lse = m + logf(l);
}

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
        gqa_row_fwd(out + qo, &lrow[t], q + qo, key + kvo, val + kvo, ks, t, D, scale);
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
        const float *qt = q + qo, *dO = dout + qo;
        float Dt = dot(dO, out + qo, D), L = lrow[t];
        for (int j = 0; j <= t; j++) {
          const size_t jo = kvo + (size_t)j * ks;
          float p = expf(dot(qt, key + jo, D) * scale - L);
          axpy(dval + jo, p, dO, D);
          float ds = p * (dot(dO, val + jo, D) - Dt) * scale;
          axpy(dq + qo, ds, key + jo, D);
          axpy(dkey + jo, ds, qt, D);
        }
      }
    }
}
