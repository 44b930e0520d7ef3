/* Causal multi-head self-attention, flash style: the forward keeps only the log-sum-exp of each
 * softmax row, the backward recomputes the probabilities from q, k and that lse. Nothing of size
 * T x T is ever stored; work is O(T^2 hs) per head, forward and backward.
 *
 * Layout: qkv[B,T,3C] with q at channel 0, k at C, v at 2C; head h owns channels h*hs .. h*hs+hs-1
 * of each (hs = C / NH). out[B,T,C] uses the same per-head channel slices. lse is [B,NH,T].
 */
#include "gpt2_cpu.h"

#include <math.h>

#include "vec4.h"

/* One query row t of one head: online softmax over keys 0..t. Invariant after key j: m is the
   largest score so far, l = sum_j' exp(s_j' - m), o = sum_j' exp(s_j' - m) v_j'. When m grows,
   l and o are rescaled by exp(m_old - m_new) (rare: about log t times for random scores). */
static void attn_row_fwd(float *o, float *lse, const float *q, const float *kbase,
                         const float *vbase, size_t rs, int t, int hs, float scale) {
  float m = -INFINITY, l = 0.0f;
  for (int i = 0; i < hs; i++)
    o[i] = 0.0f;
  for (int j = 0; j <= t; j++) {
    float s = dot(q, kbase + (size_t)j * rs, hs) * scale;
    if (s > m) {
      float corr = expf(m - s); /* 0 for the first key (m = -inf) */
      l *= corr;
      for (int i = 0; i < hs; i++)
        o[i] *= corr;
      m = s;
    }
    float p = expf(s - m);
    l += p;
    axpy(o, p, vbase + (size_t)j * rs, hs);
  }
  float inv = 1.0f / l;
  for (int i = 0; i < hs; i++)
    o[i] *= inv;
  *lse = m + logf(l);
}

/* Rows of qkv are 3C floats apart; the k and v of head h start C and 2C after its q. */
void zs_cpu_attention_fwd(float *out, float *lse, const float *qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const size_t rs = (size_t)3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  for (int b = 0; b < B; b++) {
    const float *base = qkv + (size_t)b * T * rs;
    for (int h = 0; h < NH; h++) {
      const float *kbase = base + C + (size_t)h * hs;
      const float *vbase = base + 2 * (size_t)C + (size_t)h * hs;
      float *lrow = lse + ((size_t)b * NH + h) * T;
      for (int t = 0; t < T; t++) {
        const float *q = base + (size_t)t * rs + (size_t)h * hs;
        float *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
        attn_row_fwd(o, &lrow[t], q, kbase, vbase, rs, t, hs, scale);
      }
    }
  }
}

/* Backward of one head of one sequence. For query t and key j <= t:
     p  = exp(s_tj - lse_t)           (the forward's probability, recomputed)
     dv_j += p do_t
     ds = p (do_t . v_j - D_t)        with D_t = do_t . o_t = sum_j p_tj (do_t . v_j)
     dq_t += scale ds k_j,  dk_j += scale ds q_t
   Everything is accumulated straight into dqkv (+=), query by query, keys in order. */
static void attn_head_bwd(float *dbase, const float *dout, const float *out, const float *base,
                          const float *lrow, int T, int C, int hs, int h, float scale) {
  const size_t rs = (size_t)3 * C, ho = (size_t)h * hs;
  for (int t = 0; t < T; t++) {
    const float *q = base + (size_t)t * rs + ho;
    const float *dO = dout + (size_t)t * C + ho;
    float *dq = dbase + (size_t)t * rs + ho;
    float D = dot(dO, out + (size_t)t * C + ho, hs);
    float L = lrow[t];
    for (int j = 0; j <= t; j++) {
      const float *k = base + (size_t)j * rs + C + ho;
      const float *v = base + (size_t)j * rs + 2 * (size_t)C + ho;
      float p = expf(dot(q, k, hs) * scale - L);
      axpy(dbase + (size_t)j * rs + 2 * (size_t)C + ho, p, dO, hs);
      float ds = p * (dot(dO, v, hs) - D) * scale;
      axpy(dq, ds, k, hs);
      axpy(dbase + (size_t)j * rs + C + ho, ds, q, hs);
    }
  }
}

/* Heads are independent; each (b, h) pair is one call over its strided slices. */
void zs_cpu_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                          const float *lse, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const size_t rs = (size_t)3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  for (int b = 0; b < B; b++) {
    const size_t so = (size_t)b * T;
    for (int h = 0; h < NH; h++)
      attn_head_bwd(dqkv + so * rs, dout + so * C, out + so * C, qkv + so * rs,
                    lse + ((size_t)b * NH + h) * T, T, C, hs, h, scale);
  }
}
