/* GPT-2 layer kernels on a CUDA device: the twins of src/kernels/cpu/gpt2_cpu.h.
 *
 * Plain C-callable. Each zs_cuda_X takes exactly the arguments of the public zs_k_X
 * (include/zshard_kernels.h) after its zs_kernels* argument, with the same semantics:
 * device pointers, activations/weights/grads in the context's dtype (ZS_F32 or ZS_BF16 stored as
 * __nv_bfloat16, math and accumulation in fp32), statistics (mean, rstd, lse, losses) in fp32,
 * token ids int32, and every backward ADDS into its gradient outputs. Work is queued on the
 * context's stream; nothing is allocated per call (the cuBLASLt workspace and the scratch buffers
 * live in the context). Failures return ZS_ERR_DEVICE (or ZS_ERR_INVALID_ARG) with
 * zs_last_error() naming the call; nothing prints or aborts.
 */
#ifndef ZS_KERNELS_CUDA_GPT2_CUDA_H
#define ZS_KERNELS_CUDA_GPT2_CUDA_H

#include <stddef.h>

#include "zshard_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zs_cuda_kctx zs_cuda_kctx;

/* Creates a context on the current device: cuBLASLt handle, its workspace and scratch memory.
   stream is a cudaStream_t (NULL = the legacy default stream). */
zs_status zs_cuda_kctx_create(zs_dtype dt, void *stream, zs_cuda_kctx **out);
/* Releases everything the context holds (after the stream's work has finished). NULL is a no-op. */
void zs_cuda_kctx_destroy(zs_cuda_kctx *k);
/* The context's stream (a cudaStream_t; NULL = the legacy default stream). */
void *zs_cuda_kctx_stream(zs_cuda_kctx *k);

zs_status zs_cuda_encoder_fwd(zs_cuda_kctx *k, void *out, const int *tok, const void *wte,
                              const void *wpe, int B, int T, int C);
zs_status zs_cuda_encoder_bwd(zs_cuda_kctx *k, void *dwte, void *dwpe, const void *dout,
                              const int *tok, int B, int T, int C);
zs_status zs_cuda_layernorm_fwd(zs_cuda_kctx *k, void *out, float *mean, float *rstd,
                                const void *inp, const void *w, const void *b, int N, int C);
zs_status zs_cuda_layernorm_bwd(zs_cuda_kctx *k, void *dinp, void *dw, void *db, const void *dout,
                                const void *inp, const void *w, const float *mean,
                                const float *rstd, int N, int C);
zs_status zs_cuda_matmul_fwd(zs_cuda_kctx *k, void *out, const void *inp, const void *w,
                             const void *bias, int N, int C, int OC);
zs_status zs_cuda_matmul_bwd(zs_cuda_kctx *k, void *dinp, void *dw, void *dbias, const void *dout,
                             const void *inp, const void *w, int N, int C, int OC);
zs_status zs_cuda_attention_fwd(zs_cuda_kctx *k, void *out, float *lse, const void *qkv, int B,
                                int T, int C, int NH);
zs_status zs_cuda_attention_bwd(zs_cuda_kctx *k, void *dqkv, const void *dout, const void *qkv,
                                const void *out, const float *lse, int B, int T, int C, int NH);
zs_status zs_cuda_gelu_fwd(zs_cuda_kctx *k, void *out, const void *inp, size_t n);
zs_status zs_cuda_gelu_bwd(zs_cuda_kctx *k, void *dinp, const void *inp, const void *dout,
                           size_t n);
zs_status zs_cuda_residual_fwd(zs_cuda_kctx *k, void *out, const void *a, const void *b, size_t n);
zs_status zs_cuda_residual_bwd(zs_cuda_kctx *k, void *da, void *db, const void *dout, size_t n);
zs_status zs_cuda_softmax_xent(zs_cuda_kctx *k, float *losses, void *dlogits, const void *logits,
                               const int *targets, float dloss, int N, int V, int Vp);

#ifdef __cplusplus
}
#endif
#endif
