/* Activation buffers of the Llama model: allocation, accounting and release. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "../gpt2/util.h"
#include "activations.h"

/* One device buffer, counted in the activation bytes. */
static void *buf(llama_model *m, size_t bytes, size_t *total, int *bad) {
  void *p = gpt2_dev_alloc(&m->dev, bytes);
  if (!p) *bad = 1;
  *total += bytes;
  return p;
}

/* The saved set of one layer for N = B*T tokens. */
static void layer_acts_alloc(llama_model *m, llama_layer_acts *a, size_t *tot, int *bad) {
  const llama_config *c = &m->cfg;
  size_t N = (size_t)m->B * m->T, C = (size_t)c->hidden, e = m->dev.esz,
         I = (size_t)c->intermediate;
  size_t Q = (size_t)c->heads * c->head_dim, KV = (size_t)c->kv_heads * c->head_dim;
  a->xn = buf(m, N * C * e, tot, bad);
  a->q = buf(m, N * Q * e, tot, bad);
  a->k = buf(m, N * KV * e, tot, bad);
  a->v = buf(m, N * KV * e, tot, bad);
  a->att = buf(m, N * Q * e, tot, bad);
  a->res2 = buf(m, N * C * e, tot, bad);
  a->hn = buf(m, N * C * e, tot, bad);
  a->gate = buf(m, N * I * e, tot, bad);
  a->up = buf(m, N * I * e, tot, bad);
  a->act = buf(m, N * I * e, tot, bad);
  a->rrms1 = buf(m, N * sizeof(float), tot, bad);
  a->rrms2 = buf(m, N * sizeof(float), tot, bad);
  a->lse = buf(m, N * (size_t)c->heads * sizeof(float), tot, bad);
}

/* The RoPE tables for positions 0..T-1, computed on the host and copied to the device. */
static int rope_tables(llama_model *m) {
  const llama_config *c = &m->cfg;
  const size_t n = (size_t)m->T * (size_t)(c->head_dim / 2);
  float *hc = malloc(n * sizeof(float)), *hs = malloc(n * sizeof(float));
  zs_k_rope_llama3 l3 = {c->rope_factor, c->rope_low_freq, c->rope_high_freq, c->rope_orig_max_pos};
  int rc = hc && hs ? 0 : gpt2_fail("out of host memory for the RoPE tables");
  if (rc == 0) {
    zs_status st =
        zs_k_rope_table(hc, hs, m->T, c->head_dim, c->rope_theta, c->rope_llama3 ? &l3 : NULL);
    if (st != ZS_OK) rc = gpt2_fail_zs("zs_k_rope_table", st);
  }
  if (rc == 0) rc = gpt2_dev_upload(&m->dev, m->cos, hc, n * sizeof(float));
  if (rc == 0) rc = gpt2_dev_upload(&m->dev, m->sin, hs, n * sizeof(float));
  free(hc);
  free(hs);
  return rc;
}

int llama_model_init(llama_model *m, const llama_config *c, zs_unit **units, const gpt2_dev *dev,
                     zs_kernels *k, int B, int T, int recompute) {
  memset(m, 0, sizeof *m);
  m->cfg = *c;
  m->units = units;
  m->dev = *dev;
  m->k = k;
  m->B = B;
  m->T = T;
  m->recompute = recompute;
  for (int s = 0, t = 0; s < LLAY_NT; s++)
    m->slot[s] = (!c->qkv_bias && s >= LLAY_Q_B && s <= LLAY_V_B) ? -1 : t++;
  int L = c->layers, bad = 0;
  size_t N = (size_t)B * T, C = (size_t)c->hidden, e = dev->esz, tot = 0;
  size_t Q = (size_t)c->heads * c->head_dim, KV = (size_t)c->kv_heads * c->head_dim;
  size_t I2 = 2 * (size_t)c->intermediate, W = Q + 2 * KV > I2 ? Q + 2 * KV : I2;
  m->res = calloc((size_t)L + 1, sizeof *m->res);
  m->acts = calloc(recompute ? 1 : (size_t)L, sizeof *m->acts);
  m->host_losses = calloc(N, sizeof(float));
  if (!m->res || !m->acts || !m->host_losses) return gpt2_fail("out of host memory");
  for (int l = 0; l <= L; l++)
    m->res[l] = buf(m, N * C * e, &tot, &bad);
  for (int l = 0; l < (recompute ? 1 : L); l++)
    layer_acts_alloc(m, &m->acts[l], &tot, &bad);
  m->fn = buf(m, N * C * e, &tot, &bad);
  m->rrmsf = buf(m, N * sizeof(float), &tot, &bad);
  m->logits = buf(m, N * (size_t)c->vocab * e, &tot, &bad);
  m->losses = buf(m, N * sizeof(float), &tot, &bad);
  m->tok = buf(m, N * sizeof(int), &tot, &bad);
  m->tgt = buf(m, N * sizeof(int), &tot, &bad);
  m->dres = buf(m, N * C * e, &tot, &bad);
  m->dln = buf(m, N * C * e, &tot, &bad);
  m->wA = buf(m, N * W * e, &tot, &bad);
  m->wB = buf(m, N * W * e, &tot, &bad);
  m->cos = buf(m, (size_t)T * (size_t)(c->head_dim / 2) * sizeof(float), &tot, &bad);
  m->sin = buf(m, (size_t)T * (size_t)(c->head_dim / 2) * sizeof(float), &tot, &bad);
  m->act_bytes = tot;
  if (bad) return -1;
  /* The planner's formula is what runs: a mismatch is a bug in one of the two. */
  if (tot != llama_activation_bytes(c, B, T, dev->dt, recompute))
    return gpt2_fail("activation buffers (%zu bytes) differ from llama_activation_bytes (%zu)", tot,
                     llama_activation_bytes(c, B, T, dev->dt, recompute));
  /* Beside the formula (which counts trainable models): the frozen units' throw-away gradient,
     as large as the largest frozen unit. act_bytes counts it, so the memory table stays true. */
  size_t frozen = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    if (!zs_unit_is_frozen(units[u])) continue;
    size_t n = 0;
    for (int t = 0; t < zs_unit_num_tensors(units[u]); t++)
      n += (size_t)zs_unit_numel(units[u], t);
    if (n > frozen) frozen = n;
  }
  if (frozen) m->frozen_grads = buf(m, frozen * e, &tot, &bad);
  m->act_bytes = tot;
  if (bad) return -1;
  return rope_tables(m);
}

/* Frees one layer's saved set. */
static void layer_acts_free(llama_model *m, llama_layer_acts *a) {
  void *ps[] = {a->xn,   a->q,  a->k,   a->v,     a->att,   a->res2, a->hn,
                a->gate, a->up, a->act, a->rrms1, a->rrms2, a->lse};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    gpt2_dev_free(&m->dev, ps[i]);
}

void llama_model_free(llama_model *m) {
  int L = m->cfg.layers;
  if (m->res)
    for (int l = 0; l <= L; l++)
      gpt2_dev_free(&m->dev, m->res[l]);
  if (m->acts)
    for (int l = 0; l < (m->recompute ? 1 : L); l++)
      layer_acts_free(m, &m->acts[l]);
  void *ps[] = {m->fn,  m->rrmsf, m->logits, m->losses, m->tok, m->tgt,         m->dres,
                m->dln, m->wA,    m->wB,     m->cos,    m->sin, m->frozen_grads};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    gpt2_dev_free(&m->dev, ps[i]);
  free(m->res);
  free(m->acts);
  free(m->host_losses);
  gpt2_widen_free(&m->widen);
  memset(m, 0, sizeof *m);
}
