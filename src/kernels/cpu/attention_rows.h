/* One query row of causal flash-style attention, forward and backward: what the GPT-2 kernel
 * (gpt2_attention.c: q, k, v interleaved in qkv) and the grouped-query kernel (llama_attention.c:
 * separate q, k, v; query heads sharing a kv head) both run, each with its own strides. Internal
 * to src/kernels/cpu; static inline like vec4.h, so each kernel keeps its own copy.
 */
#ifndef ZS_KERNELS_CPU_ATTENTION_ROWS_H
#define ZS_KERNELS_CPU_ATTENTION_ROWS_H

#include <math.h>
#include <stddef.h>

#include "vec4.h"

/* Query row t of one head (D floats at q): online softmax over keys 0..t, k and v rows `rs` floats
   apart from kbase and vbase; writes the D outputs to o and the row's log-sum-exp to *lse.
   Invariant after key j: m is the largest score so far, l = sum_j' exp(s_j' - m),
   o = sum_j' exp(s_j' - m) v_j'. When m grows, l and o are rescaled by exp(m_old - m_new) (rare:
   about log t times for random scores). */
static inline void attn_row_fwd(float *o, float *lse, const float *q, const float *kbase,
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

/* Backward of query row t (q, its output o, output gradient dO, log-sum-exp L; D floats each)
   over keys 0..t, whose k, v, dk and dv rows are `rs` floats apart. For key j <= t:
     p  = exp(s_tj - L)               (the forward's probability, recomputed)
     dv_j += p dO
     ds = p (dO . v_j - D_t)          with D_t = dO . o = sum_j p_tj (dO . v_j)
     dq += scale ds k_j,  dk_j += scale ds q
   Everything is accumulated (+=), keys in order, so the sums are deterministic. */
static inline void attn_row_bwd(float *dq, float *dk, float *dv, const float *q, const float *o,
                                const float *dO, float L, const float *k, const float *v, size_t rs,
                                int t, int D, float scale) {
  float Dt = dot(dO, o, D);
  for (int j = 0; j <= t; j++) {
    const size_t jo = (size_t)j * rs;
    float p = expf(dot(q, k + jo, D) * scale - L);
    axpy(dv + jo, p, dO, D);
    float ds = p * (dot(dO, v + jo, D) - Dt) * scale;
    axpy(dq, ds, k + jo, D);
    axpy(dk + jo, ds, q, D);
  }
}

#endif
