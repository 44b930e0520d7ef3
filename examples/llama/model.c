/* Activation buffers of the Llama model: allocation, accounting and release. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "../common/act_buffers.h"
#include "../common/llama_activations.h"
#include "../common/util.h"

/* The saved set of one layer for N = B*T tokens. */
static void layer_acts_alloc(llama_model *m, llama_layer_acts *a, ex_act_count *ac) {
  const llama_config *c = &m->cfg;
  size_t N = (size_t)m->B * m->T, C = (size_t)c->hidden, e = m->dev.esz,
         I = (size_t)c->intermediate, Nl = N / (size_t)m->sp;
  size_t Q = (size_t)c->heads * c->head_dim, KV = (size_t)c->kv_heads * c->head_dim;
  a->xn = ex_act_buf(ac, N * C * e);
  a->q = ex_act_buf(ac, N * Q * e);
  a->k = ex_act_buf(ac, N * KV * e);
  a->v = ex_act_buf(ac, N * KV * e);
  a->att = ex_act_buf(ac, N * Q * e);
  a->res2 = ex_act_buf(ac, Nl * C * e);
  a->hn = ex_act_buf(ac, N * C * e);
  a->gate = ex_act_buf(ac, N * I * e);
  a->up = ex_act_buf(ac, N * I * e);
  a->act = ex_act_buf(ac, N * I * e);
  a->rrms1 = ex_act_buf(ac, Nl * sizeof(float));
  a->rrms2 = ex_act_buf(ac, Nl * sizeof(float));
  a->lse = ex_act_buf(ac, N * (size_t)c->heads * sizeof(float));
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
                     zs_kernels *k, int B, int T, int recompute, int sp, int q) {
  memset(m, 0, sizeof *m);
  m->cfg = *c;
  m->units = units;
  m->dev = *dev;
  m->k = k;
  m->B = B;
  m->T = T;
  m->recompute = recompute;
  m->sp = sp > 1 ? sp : 1;
  m->q = sp > 1 ? q : 0; /* q: this rank's place in its tp group */
  for (int s = 0, t = 0; s < LLAY_NT; s++)
    m->slot[s] = (!c->qkv_bias && s >= LLAY_Q_B && s <= LLAY_V_B) ? -1 : t++;
  int L = c->layers;
  size_t N = (size_t)B * T, C = (size_t)c->hidden, e = dev->esz, Nl = N / (size_t)m->sp;
  ex_act_count ac = {&m->dev, 0, 0};
  size_t Q = (size_t)c->heads * c->head_dim, KV = (size_t)c->kv_heads * c->head_dim;
  size_t I2 = 2 * (size_t)c->intermediate, W = Q + 2 * KV > I2 ? Q + 2 * KV : I2;
  m->acts = calloc(recompute ? 1 : (size_t)L, sizeof *m->acts);
  m->host_losses = calloc(N, sizeof(float));
  if (!m->acts || !m->host_losses) return gpt2_fail("out of host memory");
  TRY(ex_residuals_alloc(&ac, &m->res, L, Nl * C * e));
  for (int l = 0; l < (recompute ? 1 : L); l++)
    layer_acts_alloc(m, &m->acts[l], &ac);
  const size_t Vp = (size_t)c->vocab_part,
               V = (size_t)c->vocab; /* Vp: a vocabulary-parallel head */
  m->fn = ex_act_buf(&ac, (Vp ? N : Nl) * C * e);
  m->rrmsf = ex_act_buf(&ac, Nl * sizeof(float));
  m->logits = ex_act_buf(&ac, Vp ? N * Vp * e : Nl * V * e);
  if (Vp) {
    m->xpart = ex_act_buf(&ac, 3 * N * (V / Vp + 1) * sizeof(float));
    m->row = ex_act_buf(&ac, V * e);
    m->v0 = q * c->vocab_part;
  }
  m->losses = ex_act_buf(&ac, N * sizeof(float));
  m->tok = ex_act_buf(&ac, N * sizeof(int));
  m->tgt = ex_act_buf(&ac, N * sizeof(int));
  m->dres = ex_act_buf(&ac, Nl * C * e);
  m->dln = ex_act_buf(&ac, N * C * e);
  m->wA = ex_act_buf(&ac, N * W * e);
  m->wB = ex_act_buf(&ac, N * W * e);
  if (m->sp > 1) m->spbuf = ex_act_buf(&ac, N * C * e);
  m->cos = ex_act_buf(&ac, (size_t)T * (size_t)(c->head_dim / 2) * sizeof(float));
  m->sin = ex_act_buf(&ac, (size_t)T * (size_t)(c->head_dim / 2) * sizeof(float));
  m->act_bytes = ac.total;
  if (ac.bad) return -1;
  /* The planner's formula is what runs: a mismatch is a bug in one of the two. */
  const size_t want = llama_activation_bytes(c, B, T, dev->dt, recompute, m->sp);
  if (ac.total != want)
    return gpt2_fail("activation buffers (%zu bytes) differ from llama_activation_bytes (%zu)",
                     ac.total, want);
  /* Beside the formula (which counts trainable models): the frozen units' throw-away gradient,
     as large as the largest frozen unit. act_bytes counts it, so the memory table stays true. */
  size_t frozen = 0;
  for (int u = 0; u < llama_num_units(c); u++)
    frozen = ex_largest_frozen(units[u], frozen);
  if (frozen) m->frozen_grads = ex_act_buf(&ac, frozen * e);
  m->act_bytes = ac.total;
  if (ac.bad) return -1;
  return rope_tables(m);
}

/* Frees one layer's saved set. */
static void layer_acts_free(llama_model *m, llama_layer_acts *a) {
  void *ps[] = {a->xn,   a->q,  a->k,   a->v,     a->att,   a->res2, a->hn,
                a->gate, a->up, a->act, a->rrms1, a->rrms2, a->lse};
  ex_dev_free_all(&m->dev, ps, sizeof ps / sizeof ps[0]);
}

void llama_model_free(llama_model *m) {
  int L = m->cfg.layers;
  ex_residuals_free(&m->dev, m->res, L);
  if (m->acts)
    for (int l = 0; l < (m->recompute ? 1 : L); l++)
      layer_acts_free(m, &m->acts[l]);
  void *ps[] = {m->fn,    m->rrmsf, m->logits, m->xpart,       m->row, m->losses,
                m->tok,   m->tgt,   m->dres,   m->dln,         m->wA,  m->wB,
                m->spbuf, m->cos,   m->sin,    m->frozen_grads};
  ex_dev_free_all(&m->dev, ps, sizeof ps / sizeof ps[0]);
  free(m->acts);
  free(m->host_losses);
  gpt2_widen_free(&m->widen);
  memset(m, 0, sizeof *m);
}
