/* zshard_kernels — the GPT-2 training kernels for a C training loop on zshard (library
 * zshard_kernels, CMake target zshard::kernels, pkg-config zshard_kernels).
 *
 * A program's forward and backward call these on the engine's stream between zs_unit_gather and
 * zs_unit_release (include/zshard.h). Every call returns zs_status and reports failures through
 * zs_last_error(); none is collective; a context is used by one thread at a time. Every
 * function is named zs_k_*; the context type is zs_kernels. This library uses libzshard's public
 * API (include it after, or instead of, zshard.h); libzshard never needs it.
 */
#ifndef ZSHARD_KERNELS_H
#define ZSHARD_KERNELS_H

#include "zshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Training kernels (the GPT-2 layers), for the user's forward/backward ----
 * Pointers live on the kernels' device (host pointers on ZS_DEVICE_CPU). Activations, weights and
 * gradients are in the kernels' dtype `dt` (ZS_F32; ZS_BF16 on CUDA only); statistics (mean, rstd,
 * lse, losses) are always fp32, token ids int32. Work is ordered on `stream` (NULL on the CPU).
 * Every backward ADDS (+=) into its gradient outputs; callers zero activation gradients.
 * Shapes: B batch, T time, C channels, NH heads (C % NH == 0), V vocab, Vp padded row stride. */
typedef struct zs_kernels zs_kernels;
/* Creates a kernel context (cuBLASLt handle and workspace on CUDA). stream: cudaStream_t or NULL.
 */
ZS_API zs_status zs_k_create(zs_device dev, zs_dtype dt, void *stream, zs_kernels **out);
ZS_API void zs_k_destroy(zs_kernels *k);
/* The user's own buffers (activations, token ids, staging) on the kernels' device, so a training
   loop needs no CUDA runtime of its own. Every call fails with ZS_ERR_INVALID_ARG when k is NULL.
   Allocates `bytes` (> 0) of zero-filled memory on the kernels' device (host memory on the CPU),
   256-byte aligned, ordered on the kernels' stream; the caller owns it and frees it with
   zs_k_free on the same context. ZS_ERR_OUT_OF_MEMORY names the bytes; *p is NULL on failure.
 */
ZS_API zs_status zs_k_alloc(zs_kernels *k, size_t bytes, void **p);
/* Frees a zs_k_alloc buffer, ordered after the work already queued on the stream (the memory
   is reused only once that work is done). p == NULL (or k == NULL) is a no-op. */
ZS_API void zs_k_free(zs_kernels *k, void *p);
/* Sets `bytes` of device memory at p to 0, ordered on the stream (bytes == 0: nothing to do). */
ZS_API zs_status zs_k_zero(zs_kernels *k, void *p, size_t bytes);
/* Copies `bytes` from src to dst in any direction (host<->device, device<->device, host<->host),
   ordered on the stream; the regions must not overlap (except on the CPU). When either side is host
   memory the call returns after the copy completed (src may be reused, dst read at once); a
   device-to-device copy is only queued. ZS_ERR_DEVICE names the failing CUDA call. */
ZS_API zs_status zs_k_copy(zs_kernels *k, void *dst, const void *src, size_t bytes);
/* Waits for all work queued on the kernels' stream (a no-op on the CPU). ZS_ERR_DEVICE reports a
   failure of that work (e.g. a faulting kernel). */
ZS_API zs_status zs_k_sync(zs_kernels *k);
/* Bounds the host waits of k (zs_k_sync, zs_k_copy to or from host) by e's
   comm_timeout_s: on the engine's stream they may sit behind a collective, and a dead peer would
   otherwise block them forever. When a wait times out, e's collectives are aborted, e is marked
   failed (its calls return ZS_ERR_STATE; destroy it) and the wait returns ZS_ERR_TIMEOUT naming
   it. e must outlive k, or call zs_k_watch(k, NULL) to stop. Not collective. Errors:
   ZS_ERR_INVALID_ARG for a NULL k. */
ZS_API zs_status zs_k_watch(zs_kernels *k, zs_engine *e);
/* out[B,T,C] = wte[tok] + wpe[t] */
ZS_API zs_status zs_k_encoder_fwd(zs_kernels *k, void *out, const int *tok, const void *wte,
                                  const void *wpe, int B, int T, int C);
ZS_API zs_status zs_k_encoder_bwd(zs_kernels *k, void *dwte, void *dwpe, const void *dout,
                                  const int *tok, int B, int T, int C);
/* N rows of C: out = (inp - mean) * rstd * w + b, eps 1e-5; mean/rstd [N] saved for backward. */
ZS_API zs_status zs_k_layernorm_fwd(zs_kernels *k, void *out, float *mean, float *rstd,
                                    const void *inp, const void *w, const void *b, int N, int C);
ZS_API zs_status zs_k_layernorm_bwd(zs_kernels *k, void *dinp, void *dw, void *db, const void *dout,
                                    const void *inp, const void *w, const float *mean,
                                    const float *rstd, int N, int C);
/* out[N,OC] = inp[N,C] @ w[OC,C]^T + bias[OC] (bias may be NULL). */
ZS_API zs_status zs_k_matmul_fwd(zs_kernels *k, void *out, const void *inp, const void *w,
                                 const void *bias, int N, int C, int OC);
/* dinp[N,C] += dout @ w, dw += dout^T @ inp, dbias += column sums of dout. dbias may be NULL (no
   bias) and dinp may be NULL (skips the input gradient: the first layer never needs it). */
ZS_API zs_status zs_k_matmul_bwd(zs_kernels *k, void *dinp, void *dw, void *dbias, const void *dout,
                                 const void *inp, const void *w, int N, int C, int OC);
/* Causal self-attention. qkv[B,T,3C] (q | k | v, head h = channels h*C/NH ..), out[B,T,C],
   lse[B,NH,T] (log-sum-exp of each softmax row, for backward; no T x T matrix is kept). */
ZS_API zs_status zs_k_attention_fwd(zs_kernels *k, void *out, float *lse, const void *qkv, int B,
                                    int T, int C, int NH);
ZS_API zs_status zs_k_attention_bwd(zs_kernels *k, void *dqkv, const void *dout, const void *qkv,
                                    const void *out, const float *lse, int B, int T, int C, int NH);
/* GELU, tanh form. */
ZS_API zs_status zs_k_gelu_fwd(zs_kernels *k, void *out, const void *inp, size_t n);
ZS_API zs_status zs_k_gelu_bwd(zs_kernels *k, void *dinp, const void *inp, const void *dout,
                               size_t n);
ZS_API zs_status zs_k_residual_fwd(zs_kernels *k, void *out, const void *a, const void *b,
                                   size_t n);
ZS_API zs_status zs_k_residual_bwd(zs_kernels *k, void *da, void *db, const void *dout, size_t n);
/* Fused softmax + cross-entropy over logits[N,Vp] (columns >= V ignored): losses[N] (fp32) and,
   when dlogits != NULL, dlogits = (softmax - onehot(target)) * dloss (written, not added; padded
   columns set to 0). dlogits may alias logits. */
ZS_API zs_status zs_k_softmax_xent(zs_kernels *k, float *losses, void *dlogits, const void *logits,
                                   const int *targets, float dloss, int N, int V, int Vp);

#ifdef __cplusplus
}
#endif

/* ---- Deprecated names ----
 * The context calls were named zs_kernels_* in zshard 0.1.0 and are zs_k_* since, like every
 * other call of this library. These macros keep source written against the old names compiling
 * (include this header and link zshard_kernels; no old symbol is exported, so a program built
 * against 0.1.0 must be recompiled, not only relinked); they stay for the 0.x releases and are
 * removed in 1.0. Define ZSHARD_NO_DEPRECATED before including this header to check that a
 * program no longer uses them. */
#ifndef ZSHARD_NO_DEPRECATED
#define zs_kernels_create zs_k_create
#define zs_kernels_destroy zs_k_destroy
#define zs_kernels_alloc zs_k_alloc
#define zs_kernels_free zs_k_free
#define zs_kernels_zero zs_k_zero
#define zs_kernels_copy zs_k_copy
#define zs_kernels_sync zs_k_sync
#define zs_kernels_watch zs_k_watch
#endif

#endif /* ZSHARD_KERNELS_H */
