/* Llama-family layer kernels on a CUDA device: the twins of src/kernels/cpu/llama_cpu.h.
 *
 * Plain C-callable, same conventions as gpt2_cuda.h: each zs_cuda_X takes exactly the arguments
 * of the public zs_k_X after its context, device pointers, the context's dtype (fp32, or bf16
 * storage with fp32 math), fp32 statistics and tables, every backward ADDS, work queued on the
 * context's stream, nothing allocated per call. Failures return ZS_ERR_DEVICE (or
 * ZS_ERR_UNSUPPORTED for a shape the kernel cannot take) naming the call.
 */
#ifndef ZS_KERNELS_CUDA_LLAMA_CUDA_H
#define ZS_KERNELS_CUDA_LLAMA_CUDA_H

#include <stddef.h>

#include "gpt2_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

zs_status zs_cuda_embedding_fwd(zs_cuda_kctx *k, void *out, const int *tok, const void *wte, int N,
                                int C, int V);
zs_status zs_cuda_embedding_bwd(zs_cuda_kctx *k, void *dwte, const void *dout, const int *tok,
                                int N, int C, int V);
zs_status zs_cuda_vocab_embedding_fwd(zs_cuda_kctx *k, void *out, const int *tok, const void *wte,
                                      int N, int C, int v0, int Vl, int V);
zs_status zs_cuda_vocab_embedding_bwd(zs_cuda_kctx *k, void *dwte, const void *dout, const int *tok,
                                      int N, int C, int v0, int Vl, int V);
zs_status zs_cuda_vocab_xent_part(zs_cuda_kctx *k, float *part, const void *logits,
                                  const int *targets, int N, int v0, int Vl, int V);
zs_status zs_cuda_vocab_xent_finish(zs_cuda_kctx *k, float *losses, void *dlogits,
                                    const void *logits, const float *parts, int P,
                                    const int *targets, float dloss, int N, int v0, int Vl, int V);
zs_status zs_cuda_rmsnorm_fwd(zs_cuda_kctx *k, void *out, float *rrms, const void *inp,
                              const void *w, float eps, int N, int C);
zs_status zs_cuda_rmsnorm_bwd(zs_cuda_kctx *k, void *dinp, void *dw, const void *dout,
                              const void *inp, const void *w, const float *rrms, int N, int C);
zs_status zs_cuda_rope_fwd(zs_cuda_kctx *k, void *out, const void *inp, const float *cos_t,
                           const float *sin_t, int B, int T, int H, int D);
zs_status zs_cuda_rope_bwd(zs_cuda_kctx *k, void *dinp, const void *dout, const float *cos_t,
                           const float *sin_t, int B, int T, int H, int D);
zs_status zs_cuda_swiglu_fwd(zs_cuda_kctx *k, void *out, const void *gate, const void *up,
                             size_t n);
zs_status zs_cuda_swiglu_bwd(zs_cuda_kctx *k, void *dgate, void *dup, const void *dout,
                             const void *gate, const void *up, size_t n);
zs_status zs_cuda_gqa_attention_fwd(zs_cuda_kctx *k, void *out, float *lse, const void *q,
                                    const void *key, const void *val, int B, int T, int NH, int NKV,
                                    int D);
zs_status zs_cuda_gqa_attention_bwd(zs_cuda_kctx *k, void *dq, void *dkey, void *dval,
                                    const void *dout, const void *q, const void *key,
                                    const void *val, const void *out, const float *lse, int B,
                                    int T, int NH, int NKV, int D);

#ifdef __cplusplus
}
#endif
#endif
