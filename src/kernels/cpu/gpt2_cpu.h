/* GPT-2 layer kernels on the CPU, fp32: the reference every CUDA kernel is checked against.
 *
 * Each zs_cpu_X takes the arguments of the public zs_k_X (include/zshard_kernels.h) after the
 * zs_kernels* argument, typed as float, and returns nothing: arguments are validated by
 * src/kernels/kernels_api.c before these are called, so here every pointer is valid and every
 * dimension positive.
 *
 * Conventions (the same as the public API):
 *  - Row-major tensors; B batch, T time, C channels, NH heads, hs = C / NH, N rows, OC out
 * channels.
 *  - Every backward ADDS (+=) into its gradient outputs; it never zeroes them.
 *  - Single-threaded loops (the build has no OpenMP); GEMMs go to OpenBLAS (cblas_sgemm).
 */
#ifndef ZS_KERNELS_CPU_GPT2_CPU_H
#define ZS_KERNELS_CPU_GPT2_CPU_H

#include <stddef.h>

#include "zshard_kernels.h"

/* Layernorm epsilon, shared with the CUDA twin and the tests. */
#define ZS_LAYERNORM_EPS 1e-5f

/* out[b,t,:] = wte[tok[b,t],:] + wpe[t,:]. Token ids are trusted to be in range. */
void zs_cpu_encoder_fwd(float *out, const int *tok, const float *wte, const float *wpe, int B,
                        int T, int C);
/* dwte[tok[b,t],:] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:]. */
void zs_cpu_encoder_bwd(float *dwte, float *dwpe, const float *dout, const int *tok, int B, int T,
                        int C);

/* N rows of C: out = (inp - mean) * rstd * w + b with rstd = 1 / sqrt(var + 1e-5) (biased var). */
void zs_cpu_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C);
/* dinp, dw, db += gradients of the layernorm, from the saved mean/rstd. */
void zs_cpu_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                          const float *w, const float *mean, const float *rstd, int N, int C);

/* out[N,OC] = inp[N,C] @ w[OC,C]^T + bias[OC]; bias may be NULL. */
void zs_cpu_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N,
                       int C, int OC);
/* dinp[N,C] += dout @ w; dw[OC,C] += dout^T @ inp; dbias[OC] += column sums of dout (dbias may be
   NULL when the layer has no bias, dinp when the input gradient is not needed). */
void zs_cpu_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                       const float *w, int N, int C, int OC);

/* Causal self-attention, flash style. qkv[B,T,3C] holds q | k | v; head h uses channels
   h*hs .. h*hs+hs-1 of each. out[B,T,C]; lse[B,NH,T] = log sum_j exp(s_tj) of each softmax row,
   s_tj = q_t . k_j / sqrt(hs) for j <= t. No T x T matrix is formed. */
void zs_cpu_attention_fwd(float *out, float *lse, const float *qkv, int B, int T, int C, int NH);
/* dqkv[B,T,3C] += gradient w.r.t. q, k, v. Probabilities are recomputed from q, k and lse; out is
   the forward's output (used for the row term D_t = dout_t . out_t). */
void zs_cpu_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                          const float *lse, int B, int T, int C, int NH);

/* GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void zs_cpu_gelu_fwd(float *out, const float *inp, size_t n);
/* dinp += dout * gelu'(inp). */
void zs_cpu_gelu_bwd(float *dinp, const float *inp, const float *dout, size_t n);

/* out = a + b. */
void zs_cpu_residual_fwd(float *out, const float *a, const float *b, size_t n);
/* da += dout; db += dout (da == db is allowed and then adds twice). */
void zs_cpu_residual_bwd(float *da, float *db, const float *dout, size_t n);

/* Fused softmax + cross-entropy over logits[N,Vp], columns >= V ignored. losses[i] =
   logsumexp(logits[i,:V]) - logits[i,targets[i]]. When dlogits != NULL it is WRITTEN (not added):
   (softmax - onehot(target)) * dloss, padded columns 0. dlogits may alias logits. Targets are
   trusted to be in [0, V). */
void zs_cpu_softmax_xent(float *losses, float *dlogits, const float *logits, const int *targets,
                         float dloss, int N, int V, int Vp);

#endif
