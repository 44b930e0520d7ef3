/* train_llama: Llama-family models (Llama 2/3, Qwen2, Mistral) trained with zshard, from a C loop
 * that uses only the public API, the twin of train_gpt2.c. Read it top to bottom: a decoder
 * layer's forward and backward on its gathered params, the network (gather -> kernels -> release
 * per unit; backward zs_unit_grad -> kernels -> zs_unit_grads_ready per unit), one micro-step,
 * then the run: setup, the step loop, evaluation, export and reporting.
 *
 *   mpirun -np 4 build/train_llama --init-safetensors hf_dir --stage 3 --data tokens.bin \
 *       --seq 256 --export out_dir
 *
 * Units (common/llama_layout.h): the embedding, one per decoder layer, and the head (final RMSNorm
 * and the untied lm_head; a tied head is the embedding, gathered again for the logits). Features
 * live in llama/: args, config (config.json), hf_read / hf_write / hf_io (Hugging Face
 * directories), layout (units), weights (registration, init, export), model (activation buffers),
 * batches (fixed batches for the proof against Hugging Face); what it shares with train_gpt2 is in
 * common/ (the shared options, engine and kernels setup, the step loop with checkpoints and
 * validation, the memory and end reports, unit pointers, token I/O, the sampler) with the
 * model-independent parts: data (llm.c token files), metrics + plot (reporting), device
 * (activation memory), widen, precision, freeze, rng. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/data.h"
#include "common/freeze.h"
#include "common/llama_activations.h"
#include "common/llama_util.h"
#include "common/metrics.h"
#include "common/out_paths.h"
#include "common/precision.h"
#include "common/token_io.h"
#include "common/train_run.h"
#include "common/unit_pointers.h"
#include "common/util.h"
#include "llama/args.h"
#include "llama/batches.h"
#include "llama/hf_io.h"
#include "llama/model.h"
#include "llama/sample.h"
#include "llama/weights.h"
#include "zshard_kernels.h"

/* A failure of the llama/ parts (llama_error()) as this program's error (gpt2_error()). */
#define LTRY(call)                                                                                 \
  do {                                                                                             \
    if ((call) != 0) return gpt2_fail("%s", llama_error());                                        \
  } while (0)

/* Layer param/grad t of slot s (the biases are NULL without qkv_bias). */
#define P(s) (m->slot[s] < 0 ? NULL : p[m->slot[s]])
#define G(s) (m->slot[s] < 0 ? NULL : g[m->slot[s]])

/* ======== The model: forward ========
 * A pre-norm decoder layer on its unit's gathered params p[]:
 *   res2 = x + o_proj(attn(rope(q(n1)), rope(k(n1)), v(n1)))     n1 = rmsnorm(x)
 *   y = res2 + down(silu(gate(n2)) * up(n2))                      n2 = rmsnorm(res2) */
/* Tensor parallelism goes through the kernels library's layers (zs_k_tp_*, over the engine's tp
   group; a one-rank group makes each the plain kernel). SPF: their sequence-parallel flag. */
#define SPF(m) ((m)->sp > 1)

/* A region's entry norm: RMSNorm of this rank's x (Nl rows), its rstd into rrms, into *rows:
   m->spbuf with sequence parallelism (the first column-parallel layer gathers every rank's rows
   into the saved set's `all`), else `all` itself. */
static int norm_in(llama_model *m, void *all, float *rrms, const void *x, const void *w, int N,
                   const void **rows) {
  void *out = SPF(m) ? m->spbuf : all;
  ZS_TRY(zs_k_rmsnorm_fwd(m->k, out, rrms, x, w, (float)m->cfg.rms_eps, N / m->sp, m->cfg.hidden));
  *rows = out;
  return 0;
}

/* A region's exit: y = res + the row-parallel projection of inp (N rows of width Cl) by w, summed
   over the tp group (this rank's rows with sequence parallelism, through m->spbuf; m->dln holds
   the parts). */
static int region_out(llama_model *m, void *y, const void *res, const void *inp, const void *w,
                      int N, int Cl) {
  const int C = m->cfg.hidden;
  void *out = SPF(m) ? m->spbuf : m->dln;
  ZS_TRY(zs_k_tp_row_fwd(m->k, m->e, SPF(m), out, m->dln, inp, w, NULL, N, Cl, C));
  ZS_TRY(zs_k_residual_fwd(m->k, y, res, out, (size_t)(N / m->sp) * (size_t)C));
  return 0;
}

/* This tp rank's rows of a k/v projection, its bias or their gradients (width: C for a weight,
   1 for a bias): the tensor itself, or in a whole k/v (cfg.kv_whole) its kv head's rows. */
static void *kv_rows(const llama_model *m, void *w, size_t width) {
  return w ? gpt2_at(&m->dev, w, m->kv_off * width) : NULL;
}

static int layer_forward(llama_model *m, void *const *p, llama_layer_acts *a, const void *x,
                         void *y, int B) {
  zs_kernels *k = m->k;
  const llama_config *c = &m->cfg;
  const int T = m->T, N = B * T, C = c->hidden, I = c->intermediate, D = c->head_dim;
  const int NH = c->heads, NKV = c->kv_heads, Q = NH * D, KV = NKV * D;
  const int sp = SPF(m);
  const void *n1 = NULL, *n2 = NULL; /* this rank's normed rows */
  TRY(norm_in(m, a->xn, a->rrms1, x, P(LLAY_ATTN_NORM), N, &n1));
  ZS_TRY(zs_k_tp_col_fwd(k, m->e, sp, a->q, a->xn, n1, P(LLAY_Q_W), P(LLAY_Q_B), N, C, Q));
  ZS_TRY(zs_k_tp_col_fwd(k, m->e, sp, a->k, a->xn, a->xn, kv_rows(m, P(LLAY_K_W), C),
                         kv_rows(m, P(LLAY_K_B), 1), N, C, KV));
  ZS_TRY(zs_k_tp_col_fwd(k, m->e, sp, a->v, a->xn, a->xn, kv_rows(m, P(LLAY_V_W), C),
                         kv_rows(m, P(LLAY_V_B), 1), N, C, KV));
  ZS_TRY(zs_k_rope_fwd(k, a->q, a->q, m->cos, m->sin, B, T, NH, D));
  ZS_TRY(zs_k_rope_fwd(k, a->k, a->k, m->cos, m->sin, B, T, NKV, D));
  ZS_TRY(zs_k_gqa_attention_fwd(k, a->att, a->lse, a->q, a->k, a->v, B, T, NH, NKV, D));
  TRY(region_out(m, a->res2, x, a->att, P(LLAY_O_W), N, Q));
  TRY(norm_in(m, a->hn, a->rrms2, a->res2, P(LLAY_MLP_NORM), N, &n2));
  ZS_TRY(zs_k_tp_col_fwd(k, m->e, sp, a->gate, a->hn, n2, P(LLAY_GATE_W), NULL, N, C, I));
  ZS_TRY(zs_k_tp_col_fwd(k, m->e, sp, a->up, a->hn, a->hn, P(LLAY_UP_W), NULL, N, C, I));
  ZS_TRY(zs_k_swiglu_fwd(k, a->act, a->gate, a->up, (size_t)N * I));
  return region_out(m, y, a->res2, a->act, P(LLAY_DOWN_W), N, I);
}

/* ======== The model: backward ========
 * On entry m->dres holds dL/dy (the layer's output); on exit it holds dL/dx. The residual adds
 * need no kernel: each RMSNorm backward adds its input gradient onto m->dres in place. Every
 * kernel's backward ADDS, so each gradient buffer is zeroed first. Scratch: dln (C per token),
 * wA and wB (max(Q + 2KV, 2I) per token). */
/* Zeroes n elements of the model's dtype. */
static int zero(llama_model *m, void *p, size_t n) {
  return gpt2_dev_zero(&m->dev, p, n * m->dev.esz);
}

/* A region's input gradient: the column-parallel layers' partial sums dpart (N rows) summed
   over the tp group (this rank's rows of the sum with sequence parallelism, through m->spbuf),
   then the entry RMSNorm's backward, adding onto m->dres (x: the norm's input rows, rrms its
   rstd). */
static int norm_bwd(llama_model *m, void *gw, void *dpart, const void *x, const void *w,
                    const float *rrms, int N) {
  const int C = m->cfg.hidden;
  void *d = SPF(m) ? m->spbuf : dpart;
  ZS_TRY(zs_k_tp_sum(m->k, m->e, SPF(m), d, dpart, N, C));
  ZS_TRY(zs_k_rmsnorm_bwd(m->k, m->dres, gw, d, x, w, rrms, N / m->sp, C));
  return 0;
}

/* MLP half: y = res2 + down(silu(gate(n2)) * up(n2)). */
static int mlp_bwd(llama_model *m, void *const *p, void *const *g, const llama_layer_acts *a) {
  zs_kernels *k = m->k;
  const int N = m->B * m->T, C = m->cfg.hidden, I = m->cfg.intermediate;
  const size_t NI = (size_t)N * I;
  void *dact = m->wA, *dgate = m->wB, *dup = gpt2_at(&m->dev, m->wB, NI), *dhn = m->dln;
  TRY(zero(m, dact, NI)); /* down's output gradient: m->dres (gathered into m->spbuf with sp) */
  ZS_TRY(zs_k_tp_row_bwd(k, m->e, SPF(m), dact, G(LLAY_DOWN_W), NULL, m->spbuf, m->dres, a->act,
                         P(LLAY_DOWN_W), N, I, C));
  TRY(zero(m, m->wB, 2 * NI));
  ZS_TRY(zs_k_swiglu_bwd(k, dgate, dup, dact, a->gate, a->up, NI));
  TRY(zero(m, dhn, (size_t)N * C));
  ZS_TRY(zs_k_matmul_bwd(k, dhn, G(LLAY_GATE_W), NULL, dgate, a->hn, P(LLAY_GATE_W), N, C, I));
  ZS_TRY(zs_k_matmul_bwd(k, dhn, G(LLAY_UP_W), NULL, dup, a->hn, P(LLAY_UP_W), N, C, I));
  return norm_bwd(m, G(LLAY_MLP_NORM), dhn, a->res2, P(LLAY_MLP_NORM), a->rrms2, N);
}

/* Attention half: res2 = x + o_proj(attn(rope(q(n1)), rope(k(n1)), v(n1))). wB holds the
   attention's dq | dk | dv (after RoPE); wA first the attention output's gradient, then, once the
   attention backward has read it, dq | dk before RoPE. */
static int attn_bwd(llama_model *m, void *const *p, void *const *g, const llama_layer_acts *a,
                    const void *x) {
  zs_kernels *k = m->k;
  const llama_config *c = &m->cfg;
  const int B = m->B, T = m->T, N = B * T, C = c->hidden, D = c->head_dim;
  const int NH = c->heads, NKV = c->kv_heads, Q = NH * D, KV = NKV * D;
  const size_t NQ = (size_t)N * Q, NKVe = (size_t)N * KV;
  void *datt = m->wA, *dxn = m->dln;
  void *dq = m->wB, *dk = gpt2_at(&m->dev, m->wB, NQ), *dv = gpt2_at(&m->dev, m->wB, NQ + NKVe);
  void *dq0 = m->wA, *dk0 = gpt2_at(&m->dev, m->wA, NQ);
  TRY(zero(m, datt, NQ));
  ZS_TRY(zs_k_tp_row_bwd(k, m->e, SPF(m), datt, G(LLAY_O_W), NULL, m->spbuf, m->dres, a->att,
                         P(LLAY_O_W), N, Q, C));
  TRY(zero(m, m->wB, NQ + 2 * NKVe));
  ZS_TRY(zs_k_gqa_attention_bwd(k, dq, dk, dv, datt, a->q, a->k, a->v, a->att, a->lse, B, T, NH,
                                NKV, D));
  TRY(zero(m, m->wA, NQ + NKVe));
  ZS_TRY(zs_k_rope_bwd(k, dq0, dq, m->cos, m->sin, B, T, NH, D));
  ZS_TRY(zs_k_rope_bwd(k, dk0, dk, m->cos, m->sin, B, T, NKV, D));
  TRY(zero(m, dxn, (size_t)N * C));
  ZS_TRY(zs_k_matmul_bwd(k, dxn, G(LLAY_Q_W), G(LLAY_Q_B), dq0, a->xn, P(LLAY_Q_W), N, C, Q));
  ZS_TRY(zs_k_matmul_bwd(k, dxn, kv_rows(m, G(LLAY_K_W), C), kv_rows(m, G(LLAY_K_B), 1), dk0, a->xn,
                         kv_rows(m, P(LLAY_K_W), C), N, C, KV));
  ZS_TRY(zs_k_matmul_bwd(k, dxn, kv_rows(m, G(LLAY_V_W), C), kv_rows(m, G(LLAY_V_B), 1), dv, a->xn,
                         kv_rows(m, P(LLAY_V_W), C), N, C, KV));
  return norm_bwd(m, G(LLAY_ATTN_NORM), dxn, x, P(LLAY_ATTN_NORM), a->rrms1, N);
}

static int layer_backward(llama_model *m, void *const *p, void *const *g, const llama_layer_acts *a,
                          const void *x) {
  TRY(mlp_bwd(m, p, g, a));
  return attn_bwd(m, p, g, a, x);
}

/* ======== One micro-step on the engine ========
 * Every unit is used as: gather -> zs_unit_param -> kernels -> release in forward, and gather ->
 * kernels writing zs_unit_grad -> grads_ready -> release in backward (reverse order). The head
 * unit (final norm + lm_head) runs its forward, the loss and its backward in one gather. A tied
 * head (Qwen2's small sizes) is the embedding: the embedding unit is gathered beside the head for
 * the logits, the head's share of its gradient is flushed at once (zs_unit_grads_flush), and its
 * grads_ready comes at the very end, after the lookup's share. The lookup's backward reads only
 * token ids, so the embedding is not gathered for it. In deterministic mode the engine stages each
 * micro-step's gradient, so the kernels' += give every ranks x micro-steps split the same bits. */

/* The widen slot of unit u (bf16 params on the CPU device, common/widen.h): a tied embedding is
   held beside the head unit, so it has its own. */
static int wslot(const llama_model *m, int u) {
  return m->cfg.tied && u == 0 ? 1 : 0;
}

/* Gathered param pointers of unit u. */
static int params(llama_model *m, int u, void **p) {
  return ex_unit_params(m->units[u], &m->widen, wslot(m, u), p);
}

/* Gradient pointers of unit u (inside a step); a frozen unit's go to the zeroed throw-away
   buffer. */
static int grads(llama_model *m, int u, void **g) {
  return ex_unit_grads(m->units[u], &m->dev, m->frozen_grads, &m->widen, wslot(m, u), g);
}

/* Unit u's backward is done for this micro-step: its widened gradient (bf16 params on the CPU
   device) folded into the engine's, then zs_unit_grads_ready. */
static int ready(llama_model *m, int u) {
  TRY(gpt2_widen_fold(&m->widen, wslot(m, u)));
  ZS_TRY(zs_unit_grads_ready(m->units[u]));
  return 0;
}

/* The embedding of b sequences (m->tok) into m->res[0] (this rank's rows with sequence
   parallelism). Vocabulary-parallel: every token's row from this rank's part of the table (zero
   for the others' tokens), summed over the tp group (reduce-scattered to this rank's rows through
   m->dln with sequence parallelism). */
static int embed(llama_model *m, const void *w, int b) {
  const llama_config *c = &m->cfg;
  const int N = b * m->T, Nl = N / m->sp, C = c->hidden;
  if (!c->vocab_part) {
    ZS_TRY(zs_k_embedding_fwd(m->k, m->res[0], m->tok + (size_t)m->q * (size_t)Nl, w, Nl, C,
                              c->vocab));
    return 0;
  }
  void *all = m->sp > 1 ? m->dln : m->res[0];
  ZS_TRY(zs_k_vocab_embedding_fwd(m->k, all, m->tok, w, N, C, m->v0, c->vocab_part, c->vocab));
  ZS_TRY(zs_k_tp_sum(m->k, m->e, SPF(m), m->res[0], all, N, C));
  return 0;
}

/* Embedding and decoder layers for b sequences already uploaded to m->tok. */
static int forward_body(llama_model *m, int b) {
  const int L = m->cfg.layers;
  void *p[LLAMA_MAX_UNIT_TENSORS];
  ZS_TRY(zs_unit_gather(m->units[0]));
  TRY(params(m, 0, p));
  TRY(embed(m, p[LEMB_EMBED], b));
  ZS_TRY(zs_unit_release(m->units[0]));
  for (int l = 0; l < L; l++) {
    ZS_TRY(zs_unit_gather(m->units[l + 1]));
    TRY(params(m, l + 1, p));
    TRY(layer_forward(m, p, &m->acts[m->recompute ? 0 : l], m->res[l], m->res[l + 1], b));
    ZS_TRY(zs_unit_release(m->units[l + 1]));
  }
  return 0;
}

/* The replicated head's logits and loss (the whole table on every tp rank): this rank's rows
   (Nl of N) with sequence parallelism, each rank's losses gathered; every row otherwise. When
   training, dlogits in place of the logits. */
static int replicated_loss(llama_model *m, const void *norm_w, const void *w, int N, int train) {
  const llama_config *c = &m->cfg;
  const int Nl = N / m->sp, C = c->hidden, V = c->vocab;
  ZS_TRY(
      zs_k_rmsnorm_fwd(m->k, m->fn, m->rrmsf, m->res[c->layers], norm_w, (float)c->rms_eps, Nl, C));
  ZS_TRY(zs_k_matmul_fwd(m->k, m->logits, m->fn, w, NULL, Nl, C, V));
  float *losses = m->sp > 1 ? m->spbuf : m->losses; /* this rank's rows', then gathered */
  ZS_TRY(zs_k_softmax_xent(m->k, losses, train ? m->logits : NULL, m->logits,
                           m->tgt + (size_t)m->q * (size_t)Nl, 1.0f / (float)N, Nl, V, V));
  if (m->sp > 1)
    ZS_TRY(zs_engine_all_gather(m->e, ZS_MESH_TP, losses, m->losses, (size_t)Nl, ZS_F32));
  return 0;
}

/* The replicated head's backward down to m->dres, on this rank's rows. */
static int replicated_head_bwd(llama_model *m, const void *norm_w, void *norm_g, const void *w,
                               void *gw, int N) {
  const llama_config *c = &m->cfg;
  const int Nl = N / m->sp, C = c->hidden;
  TRY(zero(m, m->dln, (size_t)Nl * C));
  ZS_TRY(zs_k_matmul_bwd(m->k, m->dln, gw, NULL, m->logits, m->fn, w, Nl, C, c->vocab));
  TRY(zero(m, m->dres, (size_t)Nl * C));
  ZS_TRY(
      zs_k_rmsnorm_bwd(m->k, m->dres, norm_g, m->dln, m->res[c->layers], norm_w, m->rrmsf, Nl, C));
  return 0;
}

/* The vocabulary-parallel head's logits and loss: the final norm's output of every token (m->fn,
   gathered with sequence parallelism), this rank's vocab_part columns of the logits, the loss's
   parts gathered over the tp group and merged (every rank gets every token's loss); when
   training, dlogits in place of the logits. */
static int vocab_loss(llama_model *m, const void *norm_w, const void *w, int N, int train) {
  const llama_config *c = &m->cfg;
  const int Nl = N / m->sp, C = c->hidden, Vp = c->vocab_part, P = c->vocab / Vp;
  const size_t n3 = 3 * (size_t)N;
  void *fn_mine = m->sp > 1 ? m->spbuf : m->fn;
  float *mine = m->xpart + (size_t)P * n3;
  ZS_TRY(zs_k_rmsnorm_fwd(m->k, fn_mine, m->rrmsf, m->res[c->layers], norm_w, (float)c->rms_eps, Nl,
                          C));
  ZS_TRY(zs_k_tp_gather(m->k, m->e, SPF(m), m->fn, fn_mine, N, C));
  ZS_TRY(zs_k_matmul_fwd(m->k, m->logits, m->fn, w, NULL, N, C, Vp));
  ZS_TRY(zs_k_vocab_xent_part(m->k, mine, m->logits, m->tgt, N, m->v0, Vp, c->vocab));
  ZS_TRY(zs_engine_all_gather(m->e, ZS_MESH_TP, mine, m->xpart, n3, ZS_F32));
  ZS_TRY(zs_k_vocab_xent_finish(m->k, m->losses, train ? m->logits : NULL, m->logits, m->xpart, P,
                                m->tgt, 1.0f / (float)N, N, m->v0, Vp, c->vocab));
  return 0;
}

/* The vocabulary-parallel head's backward down to its input: this rank's columns' part of
   dL/d(final norm output) for every token, summed over the tp group (this rank's rows of it with
   sequence parallelism, through m->spbuf), then the final norm's backward into m->dres. */
static int vocab_head_bwd(llama_model *m, const void *norm_w, void *norm_g, const void *w, void *gw,
                          int N) {
  const llama_config *c = &m->cfg;
  const int Nl = N / m->sp, C = c->hidden;
  TRY(zero(m, m->dln, (size_t)N * C));
  ZS_TRY(zs_k_matmul_bwd(m->k, m->dln, gw, NULL, m->logits, m->fn, w, N, C, c->vocab_part));
  void *dfn = SPF(m) ? m->spbuf : m->dln;
  ZS_TRY(zs_k_tp_sum(m->k, m->e, SPF(m), dfn, m->dln, N, C));
  TRY(zero(m, m->dres, (size_t)Nl * C));
  ZS_TRY(zs_k_rmsnorm_bwd(m->k, m->dres, norm_g, dfn, m->res[c->layers], norm_w, m->rrmsf, Nl, C));
  return 0;
}

/* The head: final RMSNorm, logits, and when training the loss and the backward down to
   dL/d(last residual) in m->dres (grads_ready for the head unit). Losses of b sequences in
   m->losses either way. With sequence parallelism on this rank's rows (Nl of N): their logits
   only, each rank's losses gathered (a vocabulary-parallel head: vocab_loss). */
static int head(llama_model *m, int b, int train) {
  const llama_config *c = &m->cfg;
  const int L = c->layers, N = b * m->T;
  zs_unit *hu = m->units[L + 1], *emb = m->units[0];
  void *p[LLAMA_MAX_UNIT_TENSORS], *g[LLAMA_MAX_UNIT_TENSORS], *pe[1], *ge[1];
  ZS_TRY(zs_unit_gather(hu));
  TRY(params(m, L + 1, p));
  if (c->tied) {
    ZS_TRY(zs_unit_gather(emb));
    TRY(params(m, 0, pe));
  }
  void *w = c->tied ? pe[0] : p[LHEAD_LM_HEAD];
  TRY(c->vocab_part ? vocab_loss(m, p[LHEAD_NORM], w, N, train)
                    : replicated_loss(m, p[LHEAD_NORM], w, N, train));
  if (train) {
    TRY(grads(m, L + 1, g));
    if (c->tied) TRY(grads(m, 0, ge));
    void *gw = c->tied ? ge[0] : g[LHEAD_LM_HEAD];
    TRY(c->vocab_part ? vocab_head_bwd(m, p[LHEAD_NORM], g[LHEAD_NORM], w, gw, N)
                      : replicated_head_bwd(m, p[LHEAD_NORM], g[LHEAD_NORM], w, gw, N));
    TRY(ready(m, L + 1));
    if (c->tied && !zs_unit_is_frozen(emb)) {
      TRY(gpt2_widen_fold(&m->widen, wslot(m, 0)));
      ZS_TRY(zs_unit_grads_flush(emb));
    }
  }
  if (c->tied) ZS_TRY(zs_unit_release(emb));
  ZS_TRY(zs_unit_release(hu));
  return 0;
}

/* Backward from dL/d(last residual) (in m->dres) down to the embedding. */
static int backward(llama_model *m) {
  const int L = m->cfg.layers, B = m->B, Nl = B * m->T / m->sp;
  void *p[LLAMA_MAX_UNIT_TENSORS], *g[LLAMA_MAX_UNIT_TENSORS];
  for (int l = L - 1; l >= 0; l--) {
    llama_layer_acts *a = &m->acts[m->recompute ? 0 : l];
    zs_unit *unit = m->units[l + 1];
    ZS_TRY(zs_unit_gather(unit));
    TRY(params(m, l + 1, p));
    if (m->recompute) TRY(layer_forward(m, p, a, m->res[l], m->res[l + 1], B));
    TRY(grads(m, l + 1, g));
    TRY(layer_backward(m, p, g, a, m->res[l]));
    TRY(ready(m, l + 1));
    ZS_TRY(zs_unit_release(unit));
  }
  TRY(grads(m, 0, g)); /* a tied embedding's gradient holds the head's share already */
  const llama_config *c = &m->cfg;
  if (!c->vocab_part) {
    ZS_TRY(zs_k_embedding_bwd(m->k, g[LEMB_EMBED], m->dres, m->tok + (size_t)m->q * (size_t)Nl, Nl,
                              c->hidden, c->vocab));
  } else { /* every token's gradient (gathered with sp) into this rank's rows of the table */
    const void *d = m->dres;
    if (m->sp > 1) {
      ZS_TRY(zs_k_tp_gather(m->k, m->e, 1, m->dln, m->dres, B * m->T, c->hidden));
      d = m->dln;
    }
    ZS_TRY(zs_k_vocab_embedding_bwd(m->k, g[LEMB_EMBED], d, m->tok, B * m->T, c->hidden, m->v0,
                                    c->vocab_part, c->vocab));
  }
  TRY(ready(m, 0));
  return 0;
}

/* Uploads b sequences of tokens and targets. */
static int upload(llama_model *m, const int *tok, const int *tgt, int b) {
  return ex_upload_tokens(&m->dev, m->tok, m->tgt, tok, tgt, (size_t)b * m->T);
}

/* Mean of the first n per-token losses (summed in double, in order). */
static int mean_loss(llama_model *m, int n, float *loss) {
  return ex_mean_loss(&m->dev, m->host_losses, m->losses, n, loss);
}

/* One micro-step of training on tokens/targets (host, B*T each); *loss = its mean loss. */
static int train_micro(llama_model *m, const int *tok, const int *tgt, float *loss) {
  TRY(upload(m, tok, tgt, m->B));
  TRY(forward_body(m, m->B));
  TRY(head(m, m->B, 1));
  TRY(backward(m));
  return mean_loss(m, m->B * m->T, loss);
}

/* Forward and loss only on b <= B sequences. */
static int eval_micro(llama_model *m, const int *tok, const int *tgt, int b, float *loss) {
  if (b > m->B) return gpt2_fail("eval batch %d exceeds the buffers' %d", b, m->B);
  TRY(upload(m, tok, tgt, b));
  TRY(forward_body(m, b));
  TRY(head(m, b, 0));
  return mean_loss(m, b * m->T, loss);
}

/* With sequence parallelism: row `row` of a sequence's logits, which one tp rank holds, into the
   first row of every rank's m->logits (the holder's copy, zeros elsewhere, summed over tp). */
static int share_row(llama_model *m, int row) {
  const int Nl = m->T / m->sp, own = row / Nl == m->q;
  const size_t V = (size_t)m->cfg.vocab, bytes = V * m->dev.esz;
  int rc = own ? 0 : zero(m, m->logits, V);
  if (own && row % Nl) { /* through the host: the rows may be device memory */
    void *h = malloc(bytes);
    rc = h ? gpt2_dev_download(&m->dev, h, gpt2_at(&m->dev, m->logits, (size_t)(row % Nl) * V),
                               bytes)
           : gpt2_fail("out of host memory");
    if (rc == 0) rc = gpt2_dev_upload(&m->dev, m->logits, h, bytes);
    free(h);
  }
  /* every rank sums, whatever failed here (its peers are in the sum) */
  ZS_TRY(zs_engine_all_reduce(m->e, ZS_MESH_TP, m->logits, V, m->dev.dt));
  return rc;
}

/* ex_forward_fn for sampling: row `row` of the logits of one sequence of T tokens (ctx:
   llama_model). The targets are only read by the loss, which sampling ignores: zeros. */
static int forward_logits(void *ctx, const int *win, int row, const void **logits_row) {
  llama_model *m = ctx;
  int *zeros = calloc((size_t)m->T, sizeof(int));
  if (!zeros) return gpt2_fail("out of host memory");
  int rc = upload(m, win, zeros, 1);
  free(zeros);
  TRY(rc);
  TRY(forward_body(m, 1));
  TRY(head(m, 1, 0));
  const size_t Vp = (size_t)m->cfg.vocab_part;
  if (Vp) { /* every rank's columns of the row, in vocabulary order */
    ZS_TRY(zs_engine_all_gather(m->e, ZS_MESH_TP, gpt2_at(&m->dev, m->logits, (size_t)row * Vp),
                                m->row, Vp, m->dev.dt));
    *logits_row = m->row;
    return 0;
  }
  if (m->sp > 1) {
    TRY(share_row(m, row));
    row = 0;
  }
  *logits_row = gpt2_at(&m->dev, m->logits, (size_t)row * (size_t)m->cfg.vocab);
  return 0;
}

/* ======== Running: setup, the step loop, reporting ======== */

/* Everything one process holds: the run both examples share (common/train_run.h) and the
   Llama's. */
typedef struct {
  llama_args a;
  ex_run x;            /* x.data: token file or text (unless --batches) */
  llama_batches fixed; /* --batches */
  llama_config cfg;    /* the whole model */
  llama_config lcfg;   /* what one tp rank holds (cfg without tensor parallelism) */
  lhf_dir hf;          /* --init-safetensors, open until the weights are read */
  int hf_open;
  zs_unit **units; /* [L+2] */
  llama_model model;
} run;

/* Model shape: a Hugging Face directory's config.json, a config.json, or the flags. */
static int resolve_config(run *r) {
  const llama_args *a = &r->a;
  const gpt2_data *data = &r->x.data;
  llama_config *c = &r->cfg;
  if (a->init_dir) {
    LTRY(llama_hf_import(a->init_dir, a->t.seq, c, &r->hf));
    r->hf_open = 1;
  } else if (a->config) {
    LTRY(llama_config_load(c, a->config));
  } else {
    const char *n = a->arch;
    llama_arch arch = !strcmp(n, "qwen2")     ? LLAMA_ARCH_QWEN2
                      : !strcmp(n, "mistral") ? LLAMA_ARCH_MISTRAL
                                              : LLAMA_ARCH_LLAMA;
    if (strcmp(n, "llama") && arch == LLAMA_ARCH_LLAMA)
      return gpt2_fail("--arch %s: llama, qwen2 or mistral", n);
    llama_config_defaults(c, arch);
    c->layers = a->layers;
    c->hidden = a->hidden;
    c->intermediate = a->intermediate;
    c->heads = a->heads;
    c->kv_heads = a->kv_heads;
    c->head_dim = a->head_dim > 0 ? a->head_dim : a->hidden / (a->heads > 0 ? a->heads : 1);
    c->max_pos = a->max_pos > 0 ? a->max_pos : a->t.seq;
    c->vocab = a->vocab > 0 ? a->vocab : (data->is_text ? 256 : 50257);
    if (c->vocab < data->vocab) c->vocab = data->vocab;
    c->sliding_window = 0;
    if (a->qkv_bias >= 0) c->qkv_bias = a->qkv_bias;
    if (a->tied >= 0) c->tied = a->tied;
  }
  LTRY(llama_config_check(c, a->t.seq));
  LTRY(llama_tp_local(c, a->t.tp, a->vocab_parallel, &r->lcfg));
  if (a->t.device == ZS_DEVICE_CUDA && c->head_dim > 128) /* the CUDA attention kernel's limit */
    return gpt2_fail("head_dim %d: the CUDA attention kernels support head_dim <= 128; train "
                     "this model with --device cpu",
                     c->head_dim);
  /* refuse a directory with an earlier export's weights now, not after training */
  if (a->t.export_path) LTRY(llama_hf_export_check(a->t.export_path));
  if (!a->batches && data->vocab > c->vocab)
    return gpt2_fail("the data has token ids up to %d but the model's vocabulary is %d",
                     data->vocab - 1, c->vocab);
  return 0;
}

/* --freeze: the units of the spec frozen (before commit), and the throw-away gradient buffer the
   kernels of a frozen unit write into (the largest frozen unit's elements, counted into the
   printed activations so the memory table stays true). */
static int freeze_units(run *r) {
  const int n = llama_num_units(&r->cfg);
  int *mask = calloc((size_t)n, sizeof *mask);
  if (!mask) return gpt2_fail("out of host memory");
  int rc = gpt2_freeze_spec(r->a.t.freeze, r->cfg.layers, "head", mask);
  for (int u = 0; rc == 0 && u < n; u++)
    if (zs_unit_freeze(r->units[u], mask[u]) != ZS_OK) rc = gpt2_fail("%s", zs_last_error());
  free(mask);
  return rc;
}

/* The model's units registered with the engine (r->units), and --freeze's frozen (before commit;
   ctx: run). */
static int add_units(void *ctx) {
  run *r = ctx;
  r->units = calloc((size_t)llama_num_units(&r->cfg), sizeof *r->units);
  if (!r->units) return gpt2_fail("out of host memory");
  TRY(llama_units_register(&r->lcfg, r->x.eng, r->units));
  for (int u = 0; r->a.t.tp > 1 && u < llama_num_units(&r->cfg); u++)
    for (int t = 0; t < zs_unit_num_tensors(r->units[u]); t++)
      ZS_TRY(zs_unit_set_tp(r->units[u], t, llama_tp_layout(&r->lcfg, r->a.sp, u, t)));
  return freeze_units(r);
}

/* Engine from the flags, units, commit, initial weights, kernels, activations. */
static int build(run *r) {
  const llama_args *a = &r->a;
  ex_run *x = &r->x;
  /* a tied head holds the embedding beside it */
  TRY(ex_engine_build(x, r->cfg.tied ? 2 : 1, add_units));
  if (r->hf_open) {
    TRY(llama_init_hf(&r->cfg, r->units, &r->hf));
    lhf_close(&r->hf);
    r->hf_open = 0;
  } else {
    TRY(llama_init_random(&r->cfg, r->units, a->t.seed));
  }
  gpt2_dev dev;
  TRY(ex_kernels_open(x, &dev));
  int q = 0, T = 1; /* this rank's place in its tp group */
  ZS_TRY(zs_engine_mesh(x->eng, ZS_MESH_TP, &q, &T));
  TRY(llama_model_init(&r->model, &r->lcfg, r->units, &dev, x->k, a->t.batch, a->t.seq,
                       a->t.recompute, a->sp ? T : 1, q));
  r->model.e = x->eng;
  if (r->lcfg.kv_whole) /* ranks q * NKV / tp share a kv head */
    r->model.kv_off = (size_t)(q * r->lcfg.kv_whole / T) * (size_t)r->lcfg.head_dim;
  TRY(gpt2_widen_init(&r->model.widen, dev.dt != a->t.dtype, r->cfg.tied ? 2 : 1, x->eng));
  r->model.act_bytes += gpt2_widen_bytes(&r->model.widen);
  x->act_bytes = &r->model.act_bytes;
  return ex_host_batch_alloc(x);
}

/* ex_micro_fn (ctx: run): micro-step mi of step on the fixed batches, or on the token file's
   sharding rule. */
static int micro(void *ctx, int step, int mi, float *loss) {
  run *r = ctx;
  const ex_train_args *t = &r->a.t;
  ex_run *x = &r->x;
  const double t0 = gpt2_now();
  if (r->a.batches)
    TRY(llama_batches_get(&r->fixed, step, x->dp_rank, x->dp_world, mi, t->micro_steps, t->batch,
                          t->seq, r->cfg.vocab, x->tok, x->tgt));
  else
    TRY(gpt2_data_train_batch(&x->data, step, x->dp_rank, x->dp_world, mi, t->micro_steps, t->batch,
                              t->seq, x->tok, x->tgt));
  x->data_s += gpt2_now() - t0;
  return train_micro(&r->model, x->tok, x->tgt, loss);
}

/* ex_eval_fn (ctx: run). */
static int eval(void *ctx, const int *tok, const int *tgt, int b, float *loss) {
  run *r = ctx;
  return eval_micro(&r->model, tok, tgt, b, loss);
}

/* Header lines: the run's shape and data (rank 0). */
static void banner(run *r) {
  const ex_run *x = &r->x;
  if (x->rank != 0) return;
  const llama_config *c = &r->cfg;
  const llama_args *a = &r->a;
  const ex_train_args *t = &a->t;
  printf("train_llama | %s\n", zs_engine_info(x->eng));
  printf("model: %s L=%d C=%d I=%d NH=%d NKV=%d hd=%d V=%d%s%s | %.2fM params | %s%s\n",
         llama_arch_name(c->arch), c->layers, c->hidden, c->intermediate, c->heads, c->kv_heads,
         c->head_dim, c->vocab, c->qkv_bias ? " qkv-bias" : "", c->tied ? " tied" : "",
         llama_num_params(c) / 1e6, t->dtype == ZS_BF16 ? "bf16" : "fp32",
         t->recompute ? " | recompute" : "");
  if (t->tp > 1) {
    const llama_config *l = &r->lcfg;
    printf("tensor parallel: tp %d | %d query heads and %d of the MLP a rank | embedding and head ",
           t->tp, l->heads, l->intermediate);
    if (l->vocab_part)
      printf("split over the vocabulary, %d rows a rank", l->vocab_part);
    else
      printf("whole on every tp rank (%s)",
             a->vocab_parallel ? "the vocabulary is not a multiple of tp" : "--vocab-parallel 0");
    printf("%s\n", a->sp ? " | sequence parallel" : "");
  }
  ex_print_batch_shape(x);
  if (a->batches)
    printf("data: fixed batches %s\n", a->batches);
  else
    printf("data: %s (%lld tokens, %lld train) | unigram entropy %.4f nats per token\n",
           t->data ? t->data : t->text, (long long)x->data.n, (long long)x->data.n_train,
           x->unigram);
  char ev[512];
  snprintf(ev, sizeof ev,
           "{\"event\":\"config\",\"arch\":\"%s\",\"layers\":%d,\"hidden\":%d,\"heads\":%d,"
           "\"kv_heads\":%d,\"vocab\":%d,\"params\":%lld,\"stage\":%d,\"world\":%d,"
           "\"micro_steps\":%d,\"batch\":%d,\"seq\":%d}",
           llama_arch_name(c->arch), c->layers, c->hidden, c->heads, c->kv_heads, c->vocab,
           (long long)llama_num_params(c), t->stage, x->world, t->micro_steps, t->batch, t->seq);
  gpt2_metrics_event(&r->x.met, ev);
  fflush(stdout);
}

/* After training: final validation, memory, plot, samples, export. */
static int finish(run *r) {
  const llama_args *a = &r->a;
  const ex_train_args *t = &a->t;
  ex_run *x = &r->x;
  TRY(ex_report_end(x, "train_llama loss"));
  const int is_bytes = !a->batches && x->data.is_text;
  const int lines = ex_sample_lines(t, is_bytes);
  if (lines > 0 && t->sample_chars > 0) {
    char text[8192];
    const int start = is_bytes ? '\n' : (r->cfg.bos_id >= 0 ? r->cfg.bos_id : 0);
    TRY(llama_sample(forward_logits, &r->model, &r->model.dev, t->seq, r->cfg.vocab, start,
                     is_bytes, lines, t->sample_chars, t->temperature, t->seed, text, sizeof text));
    if (x->rank == 0)
      printf("---- sample (temperature %.2f) ----\n%s\n----\n", t->temperature, text);
  }
  if (t->export_path) {
    TRY(llama_export_hf(&r->cfg, r->units, t->export_path, t->export_dtype,
                        (uint64_t)a->export_shard_mb << 20, x->rank));
    if (x->rank == 0)
      printf("exported %s (Hugging Face %s directory)\n", t->export_path,
             llama_arch_name(r->cfg.arch));
  }
  float final = isfinite(x->last_val) ? x->last_val : x->last_loss;
  if (x->rank == 0 && t->steps > 0)
    printf("final loss %.4f nats (%s)\n", final, isfinite(x->last_val) ? "validation" : "train");
  return 0;
}

/* The whole run after MPI is up. */
static int run_all(run *r, int argc, char **argv) {
  int pr = llama_args_parse(&r->a, argc, argv);
  if (pr != 0) return pr;
  const llama_args *a = &r->a;
  /* every output path prepared (directories made) or refused before the first step */
  TRY(ex_out_check_shared(&a->t));
  if (a->t.export_path) TRY(ex_out_dir("--export", a->t.export_path));
  ex_run *x = &r->x;
  ex_run_bind(x, &a->t, r, micro, eval);
  x->log_full_loss = 1; /* the proof against Hugging Face compares every step's loss */
  x->unigram = NAN;
  if (a->batches)
    TRY(llama_batches_load(&r->fixed, a->batches));
  else
    TRY(ex_load_data(x));
  TRY(resolve_config(r));
  TRY(gpt2_metrics_open(&x->met, a->t.metrics, x->rank, x->world));
  if (a->t.tensorboard) TRY(gpt2_metrics_tensorboard(&x->met, a->t.tensorboard));
  TRY(build(r));
  banner(r);
  TRY(ex_report_memory(x, "start"));
  TRY(ex_train(x));
  return finish(r);
}

/* Frees what the Llama's part of the run holds (ctx: run). */
static void free_run(void *ctx) {
  run *r = ctx;
  if (r->hf_open) lhf_close(&r->hf);
  llama_model_free(&r->model);
  free(r->units);
  llama_batches_free(&r->fixed);
}

int main(int argc, char **argv) {
  run r;
  memset(&r, 0, sizeof r);
  if (ex_run_start(&r.x, &argc, &argv, "train_llama") != 0) return 1;
  r.x.ctx = &r; /* for free_run, also when parsing failed */
  int rc = run_all(&r, argc, argv);
  return ex_run_end(&r.x, rc, "train_llama", free_run);
}
