/* One micro-step on the engine. Every unit is used as: gather -> zs_unit_param -> kernels ->
 * release in forward, and gather -> kernels writing zs_unit_grad -> grads_ready -> release in
 * backward (reverse order). The LM head is tied to wte, so the embedding unit is gathered a
 * second time for the head: its forward and backward run back to back while it is gathered, the
 * head's share of the wte gradient goes into the embedding unit's gradient, and grads_ready for
 * the embedding comes once, at the very end, after the lookup's share is added too. The lookup's
 * backward needs no params, so the embedding is gathered twice per micro-step, not three times.
 *
 * Deterministic mode needs nothing here: the engine hands out each micro-step's gradient in its
 * own zeroed buffer and adds it to the accumulator once at zs_unit_grads_ready, so the kernels'
 * many += (GEMM blocking, row-by-row layernorm sums, the two uses of wte) still give N ranks the
 * bits of one rank. */
#include <stdlib.h>

#include "model.h"
#include "util.h"

/* Gathered param pointers of unit u. */
static int params(gpt2_model *m, int u, void **p) {
  zs_unit *unit = gpt2_unit(&m->units, u);
  zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
  int nt = gpt2_unit_descs(&m->cfg, u, d);
  for (int t = 0; t < nt; t++) {
    p[t] = zs_unit_param(unit, t);
    if (!p[t])
      return gpt2_fail("zs_unit_param(%s, %d) is NULL after gather", zs_unit_name(unit), t);
  }
  return 0;
}

/* Gradient pointers of unit u. In deterministic mode the engine stages each micro-step's
   gradient itself, so the kernels may += into these as often as they like. */
static int grads(gpt2_model *m, int u, void **g) {
  zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
  int nt = gpt2_unit_descs(&m->cfg, u, d);
  for (int t = 0; t < nt; t++) {
    g[t] = zs_unit_grad(gpt2_unit(&m->units, u), t);
    if (!g[t])
      return gpt2_fail("zs_unit_grad(%s, %d) is NULL inside a step",
                       zs_unit_name(gpt2_unit(&m->units, u)), t);
  }
  return 0;
}

/* End of unit u's backward: run the hook, grads_ready, and release when the backward gathered
   the unit (the embedding's lookup backward needs no params). */
static int unit_bwd_done(gpt2_model *m, int u, int gathered) {
  zs_unit *unit = gpt2_unit(&m->units, u);
  if (m->hook) TRY(m->hook(m->hook_ctx, m, u, "final"));
  ZS_TRY(zs_unit_grads_ready(unit));
  if (gathered) ZS_TRY(zs_unit_release(unit));
  return 0;
}

/* Embedding, blocks and final layernorm for b sequences already uploaded to m->tok. */
static int forward_body(gpt2_model *m, int b) {
  int L = m->cfg.layers, T = m->T, C = m->cfg.channels, N = b * T;
  void *p[GPT2_MAX_UNIT_TENSORS];
  ZS_TRY(zs_unit_gather(m->units.emb));
  TRY(params(m, 0, p));
  ZS_TRY(zs_k_encoder_fwd(m->k, m->res[0], m->tok, p[EMB_WTE], p[EMB_WPE], b, T, C));
  ZS_TRY(zs_unit_release(m->units.emb));
  for (int l = 0; l < L; l++) {
    zs_unit *unit = m->units.blocks[l];
    ZS_TRY(zs_unit_gather(unit));
    TRY(params(m, l + 1, p));
    TRY(gpt2_block_fwd(m, p, &m->acts[m->recompute ? 0 : l], m->res[l], m->res[l + 1], b));
    ZS_TRY(zs_unit_release(unit));
  }
  ZS_TRY(zs_unit_gather(m->units.lnf));
  TRY(params(m, L + 1, p));
  ZS_TRY(zs_k_layernorm_fwd(m->k, m->lnf, m->lnf_mean, m->lnf_rstd, m->res[L], p[LNF_W], p[LNF_B],
                            N, C));
  ZS_TRY(zs_unit_release(m->units.lnf));
  return 0;
}

/* Uploads b sequences of tokens (and targets when given). */
static int upload(gpt2_model *m, const int *tok, const int *tgt, int b) {
  size_t bytes = (size_t)b * m->T * sizeof(int);
  TRY(gpt2_dev_upload(&m->dev, m->tok, tok, bytes));
  if (tgt) TRY(gpt2_dev_upload(&m->dev, m->tgt, tgt, bytes));
  return 0;
}

/* Mean of the first n per-token losses (summed in double, in order). */
static int mean_loss(gpt2_model *m, int n, float *loss) {
  TRY(gpt2_dev_download(&m->dev, m->host_losses, m->losses, (size_t)n * sizeof(float)));
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += m->host_losses[i];
  *loss = (float)(s / n);
  return 0;
}

/* LM head forward (+ loss and backward when training) with the embedding unit gathered. */
static int head(gpt2_model *m, int b, int train) {
  int N = b * m->T, C = m->cfg.channels, V = m->cfg.vocab, Vp = m->cfg.padded_vocab;
  void *p[GPT2_MAX_UNIT_TENSORS], *g[GPT2_MAX_UNIT_TENSORS];
  ZS_TRY(zs_unit_gather(m->units.emb));
  TRY(params(m, 0, p));
  ZS_TRY(zs_k_matmul_fwd(m->k, m->logits, m->lnf, p[EMB_WTE], NULL, N, C, Vp));
  if (train && m->hook) TRY(m->hook(m->hook_ctx, m, 0, "logits"));
  if (train) {
    TRY(grads(m, 0, g));
    ZS_TRY(zs_k_softmax_xent(m->k, m->losses, m->logits, m->logits, m->tgt, 1.0f / (float)N, N, V,
                             Vp));
    TRY(gpt2_dev_zero(&m->dev, m->dln, (size_t)N * C * m->dev.esz));
    ZS_TRY(
        zs_k_matmul_bwd(m->k, m->dln, g[EMB_WTE], NULL, m->logits, m->lnf, p[EMB_WTE], N, C, Vp));
    if (m->hook) TRY(m->hook(m->hook_ctx, m, 0, "head"));
    /* The head's share of the tied wte gradient is reduced now, so the embedding's full
       gradient does not live through the whole backward (a no-op with full gradients and in
       deterministic mode). Gradient dumps (the hook) need the whole local gradient at the end:
       no flush then. */
    if (!m->hook) ZS_TRY(zs_unit_grads_flush(m->units.emb));
  }
  ZS_TRY(zs_unit_release(m->units.emb));
  return 0;
}

/* Backward from dL/dlnf (in m->dln) down to the embedding. */
static int backward(gpt2_model *m) {
  int L = m->cfg.layers, T = m->T, B = m->B, N = B * T, C = m->cfg.channels;
  void *p[GPT2_MAX_UNIT_TENSORS], *g[GPT2_MAX_UNIT_TENSORS];
  ZS_TRY(zs_unit_gather(m->units.lnf));
  TRY(params(m, L + 1, p));
  TRY(grads(m, L + 1, g));
  TRY(gpt2_dev_zero(&m->dev, m->dres, (size_t)N * C * m->dev.esz));
  ZS_TRY(zs_k_layernorm_bwd(m->k, m->dres, g[LNF_W], g[LNF_B], m->dln, m->res[L], p[LNF_W],
                            m->lnf_mean, m->lnf_rstd, N, C));
  TRY(unit_bwd_done(m, L + 1, 1));
  for (int l = L - 1; l >= 0; l--) {
    gpt2_block_acts *a = &m->acts[m->recompute ? 0 : l];
    ZS_TRY(zs_unit_gather(m->units.blocks[l]));
    TRY(params(m, l + 1, p));
    if (m->recompute) TRY(gpt2_block_fwd(m, p, a, m->res[l], m->res[l + 1], B));
    TRY(grads(m, l + 1, g));
    TRY(gpt2_block_bwd(m, p, g, a, m->res[l]));
    TRY(unit_bwd_done(m, l + 1, 1));
  }
  /* The lookup's backward reads only token ids: no gather of the (largest) embedding unit. */
  TRY(grads(m, 0, g)); /* wte's gradient still holds the head's share (unless flushed) */
  ZS_TRY(zs_k_encoder_bwd(m->k, g[EMB_WTE], g[EMB_WPE], m->dres, m->tok, B, T, C));
  return unit_bwd_done(m, 0, 0);
}

int gpt2_train_micro(gpt2_model *m, const int *tok, const int *tgt, float *loss) {
  TRY(upload(m, tok, tgt, m->B));
  TRY(forward_body(m, m->B));
  TRY(head(m, m->B, 1));
  TRY(backward(m));
  return mean_loss(m, m->B * m->T, loss);
}

int gpt2_eval(gpt2_model *m, const int *tok, const int *tgt, int b, float *loss) {
  if (b > m->B) return gpt2_fail("eval batch %d exceeds the buffers' %d", b, m->B);
  TRY(upload(m, tok, tgt, b));
  TRY(forward_body(m, b));
  TRY(head(m, b, 0));
  int N = b * m->T;
  ZS_TRY(zs_k_softmax_xent(m->k, m->losses, NULL, m->logits, m->tgt, 1.0f, N, m->cfg.vocab,
                           m->cfg.padded_vocab));
  return mean_loss(m, N, loss);
}

int gpt2_forward_logits(gpt2_model *m, const int *tok) {
  TRY(upload(m, tok, NULL, 1));
  TRY(forward_body(m, 1));
  return head(m, 1, 0);
}
