/* How a Llama-family model is cut into zshard units, and the tensors of each unit:
 *   unit 0        "embedding"  embed [V, C]                      (model.embed_tokens.weight)
 *   unit 1 + l    "layer.l"    the tensors of decoder layer l (enum below; Qwen2 adds q/k/v
 *                              biases)                          (model.layers.l.*)
 *   unit 1 + L    "head"       norm [C] and, untied, lm_head [V, C]  (model.norm.weight,
 *                              lm_head.weight); a tied head is the embedding
 * Linear weights are [out, in] as in PyTorch (zs_k_matmul's w[OC, C]); q_proj is [NH*hd, C],
 * k_proj and v_proj [NKV*hd, C], o_proj [C, NH*hd]. RMSNorm weights and biases are exempt from
 * weight decay. The vocabulary is not padded: the shapes are Hugging Face's. Pure tables, no
 * engine calls; train_llama and zshard-plan compile it. */
#ifndef COMMON_LLAMA_LAYOUT_H
#define COMMON_LLAMA_LAYOUT_H

#include <stddef.h>

#include "llama_config.h"
#include "zshard.h"

enum { LEMB_EMBED, LEMB_NT };
enum {
  LLAY_ATTN_NORM,
  LLAY_Q_W,
  LLAY_K_W,
  LLAY_V_W,
  LLAY_Q_B, /* the three biases only with qkv_bias (Qwen2); the indexes after them shift down */
  LLAY_K_B,
  LLAY_V_B,
  LLAY_O_W,
  LLAY_MLP_NORM,
  LLAY_GATE_W,
  LLAY_UP_W,
  LLAY_DOWN_W,
  LLAY_NT
};
enum { LHEAD_NORM, LHEAD_LM_HEAD, LHEAD_NT };

#define LLAMA_MAX_UNIT_TENSORS LLAY_NT

/* Number of units: L + 2. */
int llama_num_units(const llama_config *c);
/* Unit u's engine name ("embedding", "layer.3", "head") into buf; 0, or -1 out of range. */
int llama_unit_name(const llama_config *c, int u, char *buf, size_t n);
/* Fills descs (room for LLAMA_MAX_UNIT_TENSORS) for unit u (0 .. L+1): names ("embed",
   "attn_norm", "q_proj", "q_bias", ...; static strings), shapes, no_weight_decay. Returns the
   count, -1 for u out of range. */
int llama_unit_descs(const llama_config *c, int u, zs_tensor_desc *descs);
/* Hugging Face's name of unit u's tensor t (the order of llama_unit_descs) into buf; 0 or -1. */
int llama_hf_name(const llama_config *c, int u, int t, char *buf, size_t n);
/* Which unit and tensor Hugging Face's `name` is; 0 found, -1 not a tensor of this model. */
int llama_from_hf_name(const llama_config *c, const char *name, int *u, int *t);
/* Tensor parallelism over tp ranks (Megatron): q/k/v projections and their biases, gate and up
   split along dim 0 (column-parallel: each rank has NH/tp query and NKV/tp key-value heads and
   I/tp of the MLP), o_proj and down along dim 1 (row-parallel: their outputs are summed over the
   tp group); the embedding and the LM head split along the vocabulary (dim 0: vocab_part rows a
   rank) or, when replicated, whole on every rank; norms replicated. With fewer key-value heads
   than tp ranks, k/v and their biases are whole on every rank (ZS_TP_PARTIAL_GRAD): each rank
   computes with the kv head of its query heads (ranks q * NKV / tp share one) and its gradient
   holds that head's rows, which the engine sums over tp. With sequence parallelism (sp) each
   rank's norms, and a replicated embedding and head, see its own tokens only: their gradients
   are parts too (ZS_TP_PARTIAL_GRAD). The zs_tp_layout of unit u's tensor t (the order of
   llama_unit_descs) for one tp rank's config `local` (llama_tp_local). */
zs_tp_layout llama_tp_layout(const llama_config *local, int sp, int u, int t);
/* *local = c as one tp rank sees it (heads and intermediate divided by tp, kv_heads too, or 1
   with kv_whole set when there are fewer than tp; with vocab_parallel and a vocabulary tp
   divides, vocab_part = vocab / tp): its llama_unit_descs are the shapes it registers. 0, or -1
   (llama_error) when tp divides neither way. */
int llama_tp_local(const llama_config *c, int tp, int vocab_parallel, llama_config *local);
/* Elements of unit u (its tensors' sum) and of the whole model (every unit; the tied head once). */
int64_t llama_unit_numel(const llama_config *c, int u);
int64_t llama_num_params(const llama_config *c);

#endif
