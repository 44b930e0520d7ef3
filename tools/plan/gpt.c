/* The GPT-2 example's model, counted: its units (examples/gpt2/layout.c) and every activation
 * buffer it allocates (examples/gpt2/model.c, gpt2_model_init). The benchmark bench/stages.sh and
 * the test tests/plan check these against what the example reports it allocated. */
#include <stdlib.h>

#include "gpt2/unit_descs.h"
#include "tool.h"

int zp_gpt_pad_vocab(int vocab) {
  int m = vocab > 4096 ? 128 : 64;
  return (vocab + m - 1) / m * m;
}

int zp_gpt_unit_descs(const zp_gpt *g, int u, zs_tensor_desc *d) {
  const gpt2_config c = {g->max_seq, g->vocab, zp_gpt_pad_vocab(g->vocab),
                         g->layers,  g->heads, g->channels};
  return gpt2_unit_descs(&c, u, d);
}

int zp_gpt_units(const zp_gpt *g, zp_model *m) {
  m->n = g->layers + 2;
  m->numel = calloc((size_t)m->n, sizeof *m->numel);
  if (!m->numel) return -1;
  for (int u = 0; u < m->n; u++) { /* the example's own tensors (gpt2/unit_descs.h) */
    zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
    m->numel[u] = zp_desc_numel(d, zp_gpt_unit_descs(g, u, d));
  }
  m->total = 0;
  for (int i = 0; i < m->n; i++)
    m->total += m->numel[i];
  m->is_gpt = 1;
  m->gpt = *g;
  return 0;
}

size_t zp_gpt_activation_bytes(const zp_gpt *g, int B, int T, zs_dtype dt, int recompute) {
  const size_t N = (size_t)B * (size_t)T, C = (size_t)g->channels, e = dt == ZS_BF16 ? 2 : 4;
  const size_t L = (size_t)g->layers, NH = (size_t)g->heads, f = sizeof(float);
  const size_t Vp = (size_t)zp_gpt_pad_vocab(g->vocab);
  /* One block's saved activations: ln1, qkv (3C), atty, res2, ln2, fch (4C), fch_gelu (4C) in dt;
     ln1/ln2 mean and rstd and the attention's log-sum-exp (NH per token) in fp32. */
  const size_t block = 15 * N * C * e + 4 * N * f + N * NH * f;
  size_t t = (L + 1) * N * C * e;     /* the residual stream: every block's input and the output */
  t += (recompute ? 1 : L) * block;   /* recompute shares one set */
  t += N * C * e + 2 * N * f;         /* ln_f output, mean, rstd */
  t += N * Vp * e;                    /* logits (and dlogits in place) */
  t += N * f + 2 * N * sizeof(int);   /* per-token losses, token and target ids */
  t += 2 * N * C * e + 8 * N * C * e; /* backward scratch dres, dln (C), dA, dB (4C) */
  return t;
}
