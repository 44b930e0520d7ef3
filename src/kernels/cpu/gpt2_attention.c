/* Causal multi-head self-attention, flash style: the forward keeps only the log-sum-exp of each
 * softmax row, the backward recomputes the probabilities from q, k and that lse. Nothing of size
 * T x T is ever stored; work is O(T^2 hs) per head, forward and backward.
 *
 * Layout: qkv[B,T,3C] with q at channel 0, k at C, v at 2C; head h owns channels h*hs .. h*hs+hs-1
 * of each (hs = C / NH). out[B,T,C] uses the same per-head channel slices. lse is [B,NH,T].
 */
#include "gpt2_cpu.h"

#include <math.h>

#include "attention_rows.h"

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

/* Backward of one head of one sequence (attention_rows.h): query by query, keys in order, every
   gradient accumulated straight into dqkv (+=). */
static void attn_head_bwd(float *dbase, const float *dout, const float *out, const float *base,
                          const float *lrow, int T, int C, int hs, int h, float scale) {
  const size_t rs = (size_t)3 * C, ho = (size_t)h * hs;
  for (int t = 0; t < T; t++) {
    const size_t qo = (size_t)t * rs + ho, oo = (size_t)t * C + ho;
    attn_row_bwd(dbase + qo, dbase + C + ho, dbase + 2 * (size_t)C + ho, base + qo, out + oo,
                 dout + oo, lrow[t], base + C + ho, base + 2 * (size_t)C + ho, rs, t, hs, scale);
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
