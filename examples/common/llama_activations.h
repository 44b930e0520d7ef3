/* The activation bytes the Llama example allocates for one micro-batch of B sequences of T tokens
 * in dtype dt (ZS_F32 or ZS_BF16): one formula, used by zshard-plan (tools/plan) to plan and by
 * the example to size its buffers, so that the plan is what runs. With N = B*T, e = element
 * bytes, C = hidden, Q = heads*head_dim, KV = kv_heads*head_dim, I = intermediate, V = vocab:
 *   per layer saved for backward, in dt: attn_norm out (C), q and k after RoPE and v (Q + 2 KV),
 *     the attention output (Q), the residual after attention (C), mlp_norm out (C), gate, up and
 *     their SwiGLU product (3 I): N (3C + 2Q + 2KV + 3I) e; in fp32: the two RMSNorm rstd
 *     (2 per token) and the attention's log-sum-exp (heads per token)
 *   layers' saved sets: L of them, or one shared set with recompute (each layer's set is
 *     recomputed from its input during backward)
 *   the residual stream: every layer's input and the last output, (L + 1) N C e
 *   final norm: output N C e, rstd N fp32; logits (dlogits in place) N V e
 *   per-token losses N fp32, token and target ids 2 N int32
 *   backward scratch in dt: the residual and normed gradients 2 N C, and two work buffers of
 *     N * max(Q + 2 KV, 2 I) each (dq|dk|dv, or dgate|dup)
 *   RoPE cos and sin tables: 2 * T * head_dim / 2 fp32
 * With sequence parallelism over sp tp ranks (sp > 1) a rank keeps Nl = N / sp of the tokens
 * between the tensor-parallel regions: the residual stream, the residual after attention, the
 * RMSNorm rstd, the final norm, the logits and the residual gradient are Nl rows; the norm outputs
 * the projections read stay N rows (gathered), and a staging buffer of N C e holds a region's
 * gathered input or reduce-scattered output.
 * With a vocabulary-parallel head (c->vocab_part = Vp, over P = V / Vp tp ranks) the head reads
 * every token's final norm output, so it is N C e (gathered with sp), the logits are N Vp e, and
 * the loss's parts take 3 N (P + 1) fp32 (this rank's, then every rank's gathered); sampling
 * gathers one whole row of logits, V e.
 * Pure arithmetic. */
#ifndef COMMON_LLAMA_ACTIVATIONS_H
#define COMMON_LLAMA_ACTIVATIONS_H

#include <stddef.h>

#include "llama_config.h"
#include "zshard.h"

size_t llama_activation_bytes(const llama_config *c, int B, int T, zs_dtype dt, int recompute,
                              int sp);

#endif
