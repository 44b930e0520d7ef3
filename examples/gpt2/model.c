/* Activation buffers of the GPT-2 model: allocation, accounting and release. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* One device buffer, counted in m's activation bytes. */
static void *buf(gpt2_model *m, size_t bytes, size_t *total, int *bad) {
  void *p = gpt2_dev_alloc(&m->dev, bytes);
  if (!p) *bad = 1;
  *total += bytes;
  return p;
}

/* The saved activations of one block for N = B*T tokens. */
static void block_acts_alloc(gpt2_model *m, gpt2_block_acts *a, size_t *tot, int *bad) {
  size_t N = (size_t)m->B * m->T, C = (size_t)m->cfg.channels, e = m->dev.esz;
  size_t NH = (size_t)m->cfg.heads;
  a->ln1 = buf(m, N * C * e, tot, bad);
  a->qkv = buf(m, 3 * N * C * e, tot, bad);
  a->atty = buf(m, N * C * e, tot, bad);
  a->res2 = buf(m, N * C * e, tot, bad);
  a->ln2 = buf(m, N * C * e, tot, bad);
  a->fch = buf(m, 4 * N * C * e, tot, bad);
  a->fch_gelu = buf(m, 4 * N * C * e, tot, bad);
  a->ln1_mean = buf(m, N * sizeof(float), tot, bad);
  a->ln1_rstd = buf(m, N * sizeof(float), tot, bad);
  a->ln2_mean = buf(m, N * sizeof(float), tot, bad);
  a->ln2_rstd = buf(m, N * sizeof(float), tot, bad);
  a->lse = buf(m, N * NH * sizeof(float), tot, bad);
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
  int L = m->cfg.layers, bad = 0;
  size_t N = (size_t)B * T, C = (size_t)m->cfg.channels, e = dev->esz, tot = 0;
  size_t Vp = (size_t)m->cfg.padded_vocab;
  m->res = calloc((size_t)L + 1, sizeof *m->res);
  m->acts = calloc(recompute ? 1 : (size_t)L, sizeof *m->acts);
  m->host_losses = calloc(N, sizeof(float));
  if (!m->res || !m->acts || !m->host_losses) return gpt2_fail("out of host memory");
  for (int l = 0; l <= L; l++)
    m->res[l] = buf(m, N * C * e, &tot, &bad);
  for (int l = 0; l < (recompute ? 1 : L); l++)
    block_acts_alloc(m, &m->acts[l], &tot, &bad);
  m->lnf = buf(m, N * C * e, &tot, &bad);
  m->lnf_mean = buf(m, N * sizeof(float), &tot, &bad);
  m->lnf_rstd = buf(m, N * sizeof(float), &tot, &bad);
  m->logits = buf(m, N * Vp * e, &tot, &bad);
  m->losses = buf(m, N * sizeof(float), &tot, &bad);
  m->tok = buf(m, N * sizeof(int), &tot, &bad);
  m->tgt = buf(m, N * sizeof(int), &tot, &bad);
  m->dres = buf(m, N * C * e, &tot, &bad);
  m->dln = buf(m, N * C * e, &tot, &bad);
  m->dA = buf(m, 4 * N * C * e, &tot, &bad);
  m->dB = buf(m, 4 * N * C * e, &tot, &bad);
  size_t frozen = 0; /* elements of the largest frozen unit */
  for (int u = 0; u < L + 2; u++) {
    if (!zs_unit_is_frozen(gpt2_unit(units, u))) continue;
    zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
    const int nt = gpt2_unit_descs(&m->cfg, u, d);
    size_t n = 0;
    for (int t = 0; t < nt; t++)
      n += (size_t)zs_unit_numel(gpt2_unit(units, u), t);
    if (n > frozen) frozen = n;
  }
  if (frozen) m->frozen_grads = buf(m, frozen * e, &tot, &bad);
  m->act_bytes = tot;
  return bad ? -1 : 0;
}

/* Frees one block's activations. */
static void block_acts_free(gpt2_model *m, gpt2_block_acts *a) {
  void *ps[] = {a->ln1,      a->qkv,      a->atty,     a->res2,     a->ln2,      a->fch,
                a->fch_gelu, a->ln1_mean, a->ln1_rstd, a->ln2_mean, a->ln2_rstd, a->lse};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    gpt2_dev_free(&m->dev, ps[i]);
}

void gpt2_model_free(gpt2_model *m) {
  int L = m->cfg.layers;
  if (m->res)
    for (int l = 0; l <= L; l++)
      gpt2_dev_free(&m->dev, m->res[l]);
  if (m->acts)
    for (int l = 0; l < (m->recompute ? 1 : L); l++)
      block_acts_free(m, &m->acts[l]);
  void *ps[] = {m->lnf, m->lnf_mean, m->lnf_rstd, m->logits, m->losses, m->tok,
                m->tgt, m->dres,     m->dln,      m->dA,     m->dB,     m->frozen_grads};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    gpt2_dev_free(&m->dev, ps[i]);
  free(m->res);
  free(m->acts);
  free(m->host_losses);
  gpt2_widen_free(&m->widen);
  memset(m, 0, sizeof *m);
}
