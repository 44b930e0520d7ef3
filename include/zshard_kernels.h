/* zshard_kernels — the GPT-2 and Llama-family training kernels for a C training loop on zshard
 * (library zshard_kernels, CMake target zshard::kernels, pkg-config zshard_kernels).
 *
 * A program's forward and backward call these on the engine's stream between zs_unit_gather and
 * zs_unit_release (include/zshard.h). Every call returns zs_status and reports failures through
 * zs_last_error(); none is collective but the tensor-parallel layers (zs_k_tp_*); a context is
 * used by one thread at a time. Every
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
   lse[B,NH,T] (log-sum-exp of each softmax row, for backward; no T x T matrix is kept). The
   backward adds into dqkv in a fixed order (the same bits on every run). CUDA supports head
   sizes <= 128 (ZS_ERR_UNSUPPORTED beyond). It runs on the tensor cores (bf16 products, fp32
   sums and softmax statistics, the weights P and score gradients rounded to bf16 for their
   products) only when all of these hold: bf16; head size a multiple of 16; qkv (so also its +C
   and +2C parts) and, in the backward, dout 16-byte aligned (cudaMalloc's are); a device of
   compute capability >= 8.0 and a library built for compute_80 or later; the kernels' dynamic
   shared memory (96768 bytes at head size 128) granted. Otherwise it runs in fp32 arithmetic
   (SIMT). Environment ZS_CUDA_ATTN, read at zs_k_create: auto (default) as above; simt always
   SIMT; tc fails a bf16 call with a head size multiple of 16 that the tensor cores cannot run
   with ZS_ERR_UNSUPPORTED naming the condition instead of falling back (the tests use it); any
   other value fails zs_k_create with ZS_ERR_INVALID_ARG. */
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

/* ---- Llama-family kernels (Llama 2/3, Qwen2, Mistral) ----
 * The same conventions as above (device pointers, dtype `dt`, fp32 statistics, backward ADDS).
 * Shapes: N rows, C channels, B batch, T time, NH query heads, NKV key/value heads (NH % NKV == 0;
 * query head h reads kv head h / (NH / NKV)), D head dim, I intermediate (MLP) size. Activations
 * with heads are [B,T,H*D]: head h of token (b,t) is the D values at (b*T + t)*H*D + h*D — the
 * layout of a q/k/v projection's output (zs_k_matmul_fwd), no transpose needed. Errors: a NULL
 * pointer, a dimension <= 0, or two buffers that must differ passed as the same pointer are
 * ZS_ERR_INVALID_ARG, nothing written (overlap at an offset cannot be seen: avoid it). */

/* Token embedding without positions (Llama): out[N,C] = wte[tok[i]] for N = B*T tokens, V rows
   in wte. On the CPU a token outside [0, V) is ZS_ERR_INVALID_ARG (nothing written); device ids
   are trusted. */
ZS_API zs_status zs_k_embedding_fwd(zs_kernels *k, void *out, const int *tok, const void *wte,
                                    int N, int C, int V);
/* dwte[tok[i]] += dout[i] (rows summed in token order, deterministic on both devices). */
ZS_API zs_status zs_k_embedding_bwd(zs_kernels *k, void *dwte, const void *dout, const int *tok,
                                    int N, int C, int V);

/* RMSNorm over N rows of C (HF LlamaRMSNorm): rrms[i] = 1 / sqrt(mean_c(x^2) + eps) in fp32,
   out = w * (x * rrms) — in bf16 the normalised x is rounded to bf16 before the weight multiply,
   as HF's `weight * hidden.to(input_dtype)`. rrms [N] fp32 is saved for backward. eps >= 0,
   finite (Llama 1e-5 / 1e-6). out may alias inp. */
ZS_API zs_status zs_k_rmsnorm_fwd(zs_kernels *k, void *out, float *rrms, const void *inp,
                                  const void *w, float eps, int N, int C);
/* dinp += rrms (g - n mean_c(g n)) with n = x rrms, g = dout w; dw += sum over rows of dout n.
   dinp must not alias dout. */
ZS_API zs_status zs_k_rmsnorm_bwd(zs_kernels *k, void *dinp, void *dw, const void *dout,
                                  const void *inp, const void *w, const float *rrms, int N, int C);

/* Llama-3 frequency scaling (HF rope_type "llama3"). factor > 0, 0 < low_freq_factor <
   high_freq_factor, original_max_position_embeddings > 0. */
typedef struct {
  double factor;                        /* 8 for Llama 3.1 */
  double low_freq_factor;               /* 1 */
  double high_freq_factor;              /* 4 */
  int original_max_position_embeddings; /* 8192 */
} zs_k_rope_llama3;
/* Host-only (no context, no device): the rotary tables for positions 0..T-1 and head dim D (even),
   cos[T, D/2] and sin[T, D/2] fp32 in HOST memory (copy them to the device with zs_k_copy).
   inv_freq[i] = theta^(-2i/D) (rounded to fp32), rescaled by HF's _compute_llama3_parameters when
   llama3 != NULL (NULL: rope_type "default"); angle = (float)t * inv_freq[i] in fp32 (as HF's
   fp32 matmul), cos/sin of it rounded to fp32. theta > 0 (10000 Llama 2, 500000 Llama 3, 1e6
   Qwen2). Errors: ZS_ERR_INVALID_ARG (odd D, bad theta or scaling, NULL pointers). */
ZS_API zs_status zs_k_rope_table(float *cos, float *sin, int T, int D, double theta,
                                 const zs_k_rope_llama3 *llama3);
/* Rotary embedding, HF rotate_half convention, at positions t = 0..T-1: for each head, with
   x = [x1 | x2] (halves of D/2) and c, s = cos[t, :], sin[t, :] (device, fp32, >= T rows of D/2):
   out = [x1 c - x2 s | x2 c + x1 s]. inp/out [B,T,H*D]; call once for q (H = NH) and once for k
   (H = NKV). out may alias inp (in place). D must be even (ZS_ERR_INVALID_ARG). */
ZS_API zs_status zs_k_rope_fwd(zs_kernels *k, void *out, const void *inp, const float *cos,
                               const float *sin, int B, int T, int H, int D);
/* The transposed rotation: dinp += [d1 c + d2 s | d2 c - d1 s] for dout = [d1 | d2]. dinp must
   not alias dout. */
ZS_API zs_status zs_k_rope_bwd(zs_kernels *k, void *dinp, const void *dout, const float *cos,
                               const float *sin, int B, int T, int H, int D);

/* SwiGLU (HF LlamaMLP's act_fn(gate_proj(x)) * up_proj(x)) over n elements of two separate
   buffers gate and up (e.g. [B*T, I] each): out = silu(gate) * up, silu(g) = g / (1 + exp(-g));
   in bf16 silu(g) is rounded to bf16 before the product, as HF does. out may alias gate or up. */
ZS_API zs_status zs_k_swiglu_fwd(zs_kernels *k, void *out, const void *gate, const void *up,
                                 size_t n);
/* dgate += dout up silu'(gate), dup += dout silu(gate); silu'(g) = s (1 + g (1 - s)), s =
   sigmoid(g). dgate, dup must not alias each other or dout. */
ZS_API zs_status zs_k_swiglu_bwd(zs_kernels *k, void *dgate, void *dup, const void *dout,
                                 const void *gate, const void *up, size_t n);

/* Causal attention with grouped-query heads, flash style (no T x T matrix is kept), scale
   1/sqrt(D). q and out [B,T,NH*D], key and val [B,T,NKV*D] (after RoPE on q and key),
   lse[B,NH,T] fp32 (log-sum-exp of each softmax row, for backward). out must not alias q, key or
   val. NH % NKV == 0, else ZS_ERR_INVALID_ARG; CUDA supports D <= 128 (ZS_ERR_UNSUPPORTED
   beyond) and picks its path as zs_k_attention_fwd does, by ZS_CUDA_ATTN: the tensor cores need
   bf16, D % 16 == 0, q, key, val (and dout in the backward) 16-byte aligned, compute capability
   >= 8.0 and the shared memory granted; anything else runs in fp32 arithmetic (SIMT). */
ZS_API zs_status zs_k_gqa_attention_fwd(zs_kernels *k, void *out, float *lse, const void *q,
                                        const void *key, const void *val, int B, int T, int NH,
                                        int NKV, int D);
/* dq [B,T,NH*D] += dL/dq; dkey, dval [B,T,NKV*D] += dL/dk, dL/dv summed over the NH/NKV query
   heads sharing each kv head (deterministic order). out, lse: the forward's. The three gradient
   buffers must be distinct and not alias the inputs. */
ZS_API zs_status zs_k_gqa_attention_bwd(zs_kernels *k, void *dq, void *dkey, void *dval,
                                        const void *dout, const void *q, const void *key,
                                        const void *val, const void *out, const float *lse, int B,
                                        int T, int NH, int NKV, int D);
/* The untied LM head is zs_k_matmul_fwd/_bwd with its own w[Vp, C] and bias NULL; the loss is
   zs_k_softmax_xent. Qwen2's q/k/v biases are the matmul bias. */

/* ---- Vocabulary-parallel embedding and cross-entropy (tensor parallelism) ----
 * P ranks split an embedding or LM head of V rows: rank r holds rows [v0, v0 + Vl) with
 * v0 = r * Vl (V = P * Vl). No rank ever holds a whole row of logits: each computes its Vl
 * columns (zs_k_matmul_fwd on its rows of the head) and a part of every row's loss, and the
 * caller's collective over the P ranks completes them. Token ids and targets are whole-vocabulary
 * ids in [0, V) (range-checked on the CPU, trusted on a device). */

/* out[i] = wte[tok[i] - v0] when this rank holds tok[i], else 0: the sum of the P ranks' out
   (all-reduce, or reduce-scatter with sequence parallelism) is zs_k_embedding_fwd's output. */
ZS_API zs_status zs_k_vocab_embedding_fwd(zs_kernels *k, void *out, const int *tok, const void *wte,
                                          int N, int C, int v0, int Vl, int V);
/* dwte[tok[i] - v0] += dout[i] for the tokens this rank holds (rows in token order, deterministic);
   dout is every rank's whole gradient of the embedding's output. */
ZS_API zs_status zs_k_vocab_embedding_bwd(zs_kernels *k, void *dwte, const void *dout,
                                          const int *tok, int N, int C, int v0, int Vl, int V);
/* Cross-entropy, step 1 of 2, over this rank's logits[N, Vl]: part[3i .. 3i+2] (fp32) = the row's
   max m, the sum s of exp(l - m), and the target's logit when this rank holds the target, else
   0. Gather the P ranks' parts in rank order (zs_engine_all_gather over ZS_MESH_TP: 3N floats a
   rank) for step 2. */
ZS_API zs_status zs_k_vocab_xent_part(zs_kernels *k, float *part, const void *logits,
                                      const int *targets, int N, int v0, int Vl, int V);
/* Step 2: parts[P][N][3], every rank's part in rank order, merged in that order (the same bits
   on every rank): losses[i] = M - t + log(sum_r s_r exp(m_r - M)), M the largest m_r and t the
   target's logit, zs_k_softmax_xent's loss; when dlogits != NULL, this rank's columns of
   (softmax - onehot(target)) * dloss (written, not added; may alias logits). */
ZS_API zs_status zs_k_vocab_xent_finish(zs_kernels *k, float *losses, void *dlogits,
                                        const void *logits, const float *parts, int P,
                                        const int *targets, float dloss, int N, int v0, int Vl,
                                        int V);

/* ---- Tensor-parallel layers (Megatron 1-D) over an engine's tp group ----
 * e is committed with tp_size T (these are its ZS_MESH_TP collectives, ordered on its compute
 * stream: create the kernels context on that stream); with T 1 each call is its plain kernel. sp
 * says where the activations between tensor-parallel regions live: 0, every tp rank holds all N
 * rows; 1 (sequence parallelism), tp rank q holds rows [q Nl, (q + 1) Nl), Nl = N / T (N a multiple
 * of T). A region is column-parallel layers reading its input (each rank's weight [OCl, C] =
 * rows of the whole [OC, C], ZS_TP_SPLIT_DIM0, bias [OCl] split too), then a row-parallel layer
 * whose output leaves it (weight [OC, Cl] = columns of the whole [OC, C], ZS_TP_SPLIT_DIM1, bias
 * [OC] whole and ZS_TP_REPLICATED). Its norms run on the rank's rows with the kernels above (with
 * sp their weight gradients are parts: ZS_TP_PARTIAL_GRAD). The same calls on every rank of the
 * group, in the same order; arguments are checked on each rank alone (a refusal sends nothing, and
 * its peers wait until comm_timeout_s); a failed collective fails the engine. Sums over the group
 * are WRITTEN; weight and input gradients ADD as everywhere. */

/* The region's entry (Megatron's g with sp, the identity without): all[N, C] = every rank's rows
   [Nl, C] in rank order; sp 0: all = rows (copied unless the same buffer). Its backward is
   zs_k_tp_sum. */
ZS_API zs_status zs_k_tp_gather(zs_kernels *k, zs_engine *e, int sp, void *all, const void *rows,
                                int N, int C);
/* The region's exit (the all-reduce, or g's conjugate, a reduce-scatter, with sp): each rank's
   partial sums part[N, C] summed over the group: sp 0, every row into rows[N, C] (in place when
   rows == part; part holds the sum either way); sp 1, this rank's rows of the sum into
   rows[Nl, C]. Its backward is
   zs_k_tp_gather. */
ZS_API zs_status zs_k_tp_sum(zs_kernels *k, zs_engine *e, int sp, void *rows, void *part, int N,
                             int C);
/* A column-parallel layer: out[N, OCl] = x w^T + bias over every row x of the input: sp 0, inp is
   [N, C] (all unused, may be NULL); sp 1, inp is this rank's rows [Nl, C] and all[N, C] receives
   x (zs_k_tp_gather; keep it for the backward), or inp == all when all holds x already (the
   second layer reading the same input). The backward is zs_k_matmul_bwd(k, dx, dw, dbias,
   dout, x, w, N, C, OCl) into a partial input gradient dx[N, C] that every column-parallel layer
   reading the same input adds to (q, k and v; gate and up), then one zs_k_tp_sum of dx. */
ZS_API zs_status zs_k_tp_col_fwd(zs_kernels *k, zs_engine *e, int sp, void *out, void *all,
                                 const void *inp, const void *w, const void *bias, int N, int C,
                                 int OCl);
/* A row-parallel layer: out = the sum over the group of inp w^T, plus bias once; inp[N, Cl] is
   this rank's columns of the input (a column-parallel layer's output). sp 0: out[N, OC] (part
   unused, may be NULL); sp 1: out[Nl, OC], part[N, OC] scratch. */
ZS_API zs_status zs_k_tp_row_fwd(zs_kernels *k, zs_engine *e, int sp, void *out, void *part,
                                 const void *inp, const void *w, const void *bias, int N, int Cl,
                                 int OC);
/* Its backward from the output's gradient dout ([N, OC], or this rank's rows [Nl, OC] with sp,
   gathered into the scratch dall[N, OC]; dall unused without sp): dinp[N, Cl] += dy w, dw += dy^T
   inp, dbias += the column sums of dy, dy every row of the gradient (dinp, dbias may be NULL, as
   in zs_k_matmul_bwd). The bias gradient is then
   the same on every tp rank (ZS_TP_REPLICATED, with sp too). */
ZS_API zs_status zs_k_tp_row_bwd(zs_kernels *k, zs_engine *e, int sp, void *dinp, void *dw,
                                 void *dbias, void *dall, const void *dout, const void *inp,
                                 const void *w, int N, int Cl, int OC);

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
