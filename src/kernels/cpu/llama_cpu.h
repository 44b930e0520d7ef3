/* Llama-family layer kernels on the CPU, fp32: the reference the CUDA twins are checked against.
 *
 * Each zs_cpu_X takes the arguments of the public zs_k_X (include/zshard_kernels.h) after the
 * zs_kernels* argument, typed as float, and returns nothing: src/kernels/llama_api.c validates
 * every argument first (pointers set, dimensions positive, NH % NKV == 0, D even for RoPE, token
 * ids in range). Same conventions as gpt2_cpu.h: row-major, backward ADDS (+=), single-threaded.
 * Heads: activations [B,T,H*D], head h of row (b,t) at offset ((b*T + t)*H + h)*D.
 */
#ifndef ZS_KERNELS_CPU_LLAMA_CPU_H
#define ZS_KERNELS_CPU_LLAMA_CPU_H

#include <stddef.h>

#include "zshard_kernels.h"

/* out[i,:] = wte[tok[i],:] for N rows of C. */
void zs_cpu_embedding_fwd(float *out, const int *tok, const float *wte, int N, int C);
/* dwte[tok[i],:] += dout[i,:], rows in order i = 0..N-1 (deterministic). */
void zs_cpu_embedding_bwd(float *dwte, const float *dout, const int *tok, int N, int C);

/* The vocabulary-parallel twins of the above and of zs_cpu_softmax_xent (llama_vocab.c): this
   rank holds vocabulary rows [v0, v0 + Vl); see zs_k_vocab_*. */
void zs_cpu_vocab_embedding_fwd(float *out, const int *tok, const float *wte, int N, int C, int v0,
                                int Vl);
void zs_cpu_vocab_embedding_bwd(float *dwte, const float *dout, const int *tok, int N, int C,
                                int v0, int Vl);
void zs_cpu_vocab_xent_part(float *part, const float *logits, const int *targets, int N, int v0,
                            int Vl);
void zs_cpu_vocab_xent_finish(float *losses, float *dlogits, const float *logits,
                              const float *parts, int P, const int *targets, float dloss, int N,
                              int v0, int Vl);

/* rrms[i] = 1 / sqrt(mean(x^2) + eps); out = w * (x * rrms). out may alias inp. */
void zs_cpu_rmsnorm_fwd(float *out, float *rrms, const float *inp, const float *w, float eps, int N,
                        int C);
/* dinp += rrms (g - n mean(g n)), dw += dout n, with n = x rrms, g = dout w. */
void zs_cpu_rmsnorm_bwd(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                        const float *rrms, int N, int C);

/* The rotary tables cos/sin[T, D/2] (see zs_k_rope_table); arguments already validated. */
void zs_cpu_rope_table(float *cos_t, float *sin_t, int T, int D, double theta,
                       const zs_k_rope_llama3 *llama3);
/* out = [x1 c - x2 s | x2 c + x1 s] per head; out may alias inp. */
void zs_cpu_rope_fwd(float *out, const float *inp, const float *cos_t, const float *sin_t, int B,
                     int T, int H, int D);
/* dinp += [d1 c + d2 s | d2 c - d1 s] per head. */
void zs_cpu_rope_bwd(float *dinp, const float *dout, const float *cos_t, const float *sin_t, int B,
                     int T, int H, int D);

/* out = silu(gate) * up over n elements; out may alias gate or up. */
void zs_cpu_swiglu_fwd(float *out, const float *gate, const float *up, size_t n);
/* dgate += dout up silu'(gate); dup += dout silu(gate). */
void zs_cpu_swiglu_bwd(float *dgate, float *dup, const float *dout, const float *gate,
                       const float *up, size_t n);

/* Causal grouped-query attention, flash style (online softmax, lse[B,NH,T] kept). q, out
   [B,T,NH*D]; key, val [B,T,NKV*D]; query head h reads kv head h / (NH / NKV). */
void zs_cpu_gqa_attention_fwd(float *out, float *lse, const float *q, const float *key,
                              const float *val, int B, int T, int NH, int NKV, int D);
/* dq += dL/dq; dkey, dval += dL/dk, dL/dv summed over the query heads of each kv head, in
   increasing head order. Probabilities are recomputed from q, key and lse. */
void zs_cpu_gqa_attention_bwd(float *dq, float *dkey, float *dval, const float *dout,
                              const float *q, const float *key, const float *val, const float *out,
                              const float *lse, int B, int T, int NH, int NKV, int D);

#endif
