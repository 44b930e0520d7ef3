/* Activation buffers of the GPT-2 model: allocation, accounting and release. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "../common/act_buffers.h"
#include "../common/util.h"

/* The saved activations of one block for N = B*T tokens. */
static void block_acts_alloc(gpt2_model *m, gpt2_block_acts *a, ex_act_count *ac) {
  size_t N = (size_t)m->B * m->T, C = (size_t)m->cfg.channels, e = m->dev.esz;
  size_t NH = (size_t)m->cfg.heads;
  a->ln1 = ex_act_buf(ac, N * C * e);
  a->qkv = ex_act_buf(ac, 3 * N * C * e);
  a->atty = ex_act_buf(ac, N * C * e);
  a->res2 = ex_act_buf(ac, N * C * e);
  a->ln2 = ex_act_buf(ac, N * C * e);
  a->fch = ex_act_buf(ac, 4 * N * C * e);
  a->fch_gelu = ex_act_buf(ac, 4 * N * C * e);
  a->ln1_mean = ex_act_buf(ac, N * sizeof(float));
  a->ln1_rstd = ex_act_buf(ac, N * sizeof(float));
  a->ln2_mean = ex_act_buf(ac, N * sizeof(float));
  a->ln2_rstd = ex_act_buf(ac, N * sizeof(float));
  a->lse = ex_act_buf(ac, N * NH * sizeof(float));
}

int gpt2_model_init(gpt2_model *m, const gpt2_units *units, const gpt2_dev *dev, zs_kernels *k,
                    int B, int T, int recompute) {
  memset(m, 0, sizeof *m);
  m->cfg = units->cfg;
  m->units = *units;
  m->dev = *dev;
  m->k = k;
  m->B = B;
  m->T = T;
  m->recompute = recompute;
  if (T > m->cfg.max_seq)
    return gpt2_fail("--seq %d exceeds the model's %d positions", T, m->cfg.max_seq);
  int L = m->cfg.layers;
  size_t N = (size_t)B * T, C = (size_t)m->cfg.channels, e = dev->esz;
  ex_act_count ac = {&m->dev, 0, 0};
  size_t Vp = (size_t)m->cfg.padded_vocab;
  m->acts = calloc(recompute ? 1 : (size_t)L, sizeof *m->acts);
  m->host_losses = calloc(N, sizeof(float));
  if (!m->acts || !m->host_losses) return gpt2_fail("out of host memory");
  TRY(ex_residuals_alloc(&ac, &m->res, L, N * C * e));
  for (int l = 0; l < (recompute ? 1 : L); l++)
    block_acts_alloc(m, &m->acts[l], &ac);
  m->lnf = ex_act_buf(&ac, N * C * e);
  m->lnf_mean = ex_act_buf(&ac, N * sizeof(float));
  m->lnf_rstd = ex_act_buf(&ac, N * sizeof(float));
  m->logits = ex_act_buf(&ac, N * Vp * e);
  m->losses = ex_act_buf(&ac, N * sizeof(float));
  m->tok = ex_act_buf(&ac, N * sizeof(int));
  m->tgt = ex_act_buf(&ac, N * sizeof(int));
  m->dres = ex_act_buf(&ac, N * C * e);
  m->dln = ex_act_buf(&ac, N * C * e);
  m->dA = ex_act_buf(&ac, 4 * N * C * e);
  m->dB = ex_act_buf(&ac, 4 * N * C * e);
  size_t frozen = 0; /* elements of the largest frozen unit */
  for (int u = 0; u < L + 2; u++)
    frozen = ex_largest_frozen(gpt2_unit(units, u), frozen);
  if (frozen) m->frozen_grads = ex_act_buf(&ac, frozen * e);
  m->act_bytes = ac.total;
  return ac.bad ? -1 : 0;
}

/* Frees one block's activations. */
static void block_acts_free(gpt2_model *m, gpt2_block_acts *a) {
  void *ps[] = {a->ln1,      a->qkv,      a->atty,     a->res2,     a->ln2,      a->fch,
                a->fch_gelu, a->ln1_mean, a->ln1_rstd, a->ln2_mean, a->ln2_rstd, a->lse};
  ex_dev_free_all(&m->dev, ps, sizeof ps / sizeof ps[0]);
}

void gpt2_model_free(gpt2_model *m) {
  int L = m->cfg.layers;
  ex_residuals_free(&m->dev, m->res, L);
  if (m->acts)
    for (int l = 0; l < (m->recompute ? 1 : L); l++)
      block_acts_free(m, &m->acts[l]);
  void *ps[] = {m->lnf, m->lnf_mean, m->lnf_rstd, m->logits, m->losses, m->tok,
                m->tgt, m->dres,     m->dln,      m->dA,     m->dB,     m->frozen_grads};
  ex_dev_free_all(&m->dev, ps, sizeof ps / sizeof ps[0]);
  free(m->acts);
  free(m->host_losses);
  gpt2_widen_free(&m->widen);
  memset(m, 0, sizeof *m);
}
