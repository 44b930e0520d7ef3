/* Backward of one transformer block. On entry m->dres holds dL/dy (the block's output); on exit
 * it holds dL/dx. The residual adds need no kernel: dL/dy flows unchanged into both branches, and
 * each layernorm backward adds its input gradient onto m->dres in place. Scratch: dln (C per
 * token), dA and dB (4C per token), reused as the shapes allow. */
#include "model.h"
#include "util.h"

/* MLP half: y = res2 + fcproj(gelu(fc(ln2(res2)))). */
static int mlp_bwd(gpt2_model *m, void *const *p, void *const *g, const gpt2_block_acts *a) {
  zs_kernels *k = m->k;
  int N = m->B * m->T, C = m->cfg.channels;
  size_t NC = (size_t)N * C, esz = m->dev.esz;
  void *dfch_gelu = m->dA, *dfch = m->dB, *dln2 = m->dln;
  TRY(gpt2_dev_zero(&m->dev, dfch_gelu, 4 * NC * esz));
  ZS_TRY(zs_k_matmul_bwd(k, dfch_gelu, g[BLK_FCPROJ_W], g[BLK_FCPROJ_B], m->dres, a->fch_gelu,
                         p[BLK_FCPROJ_W], N, 4 * C, C));
  TRY(gpt2_dev_zero(&m->dev, dfch, 4 * NC * esz));
  ZS_TRY(zs_k_gelu_bwd(k, dfch, a->fch, dfch_gelu, 4 * NC));
  TRY(gpt2_dev_zero(&m->dev, dln2, NC * esz));
  ZS_TRY(
      zs_k_matmul_bwd(k, dln2, g[BLK_FC_W], g[BLK_FC_B], dfch, a->ln2, p[BLK_FC_W], N, C, 4 * C));
  ZS_TRY(zs_k_layernorm_bwd(k, m->dres, g[BLK_LN2_W], g[BLK_LN2_B], dln2, a->res2, p[BLK_LN2_W],
                            a->ln2_mean, a->ln2_rstd, N, C));
  return 0;
}

/* Attention half: res2 = x + proj(attn(qkv(ln1(x)))). */
static int attn_bwd(gpt2_model *m, void *const *p, void *const *g, const gpt2_block_acts *a,
                    const void *x) {
  zs_kernels *k = m->k;
  int B = m->B, T = m->T, N = B * T, C = m->cfg.channels, NH = m->cfg.heads;
  size_t NC = (size_t)N * C, esz = m->dev.esz;
  void *datty = m->dln, *dqkv = m->dB, *dln1 = m->dA;
  TRY(gpt2_dev_zero(&m->dev, datty, NC * esz));
  ZS_TRY(zs_k_matmul_bwd(k, datty, g[BLK_PROJ_W], g[BLK_PROJ_B], m->dres, a->atty, p[BLK_PROJ_W], N,
                         C, C));
  TRY(gpt2_dev_zero(&m->dev, dqkv, 3 * NC * esz));
  ZS_TRY(zs_k_attention_bwd(k, dqkv, datty, a->qkv, a->atty, a->lse, B, T, C, NH));
  TRY(gpt2_dev_zero(&m->dev, dln1, NC * esz));
  ZS_TRY(zs_k_matmul_bwd(k, dln1, g[BLK_QKV_W], g[BLK_QKV_B], dqkv, a->ln1, p[BLK_QKV_W], N, C,
                         3 * C));
  ZS_TRY(zs_k_layernorm_bwd(k, m->dres, g[BLK_LN1_W], g[BLK_LN1_B], dln1, x, p[BLK_LN1_W],
                            a->ln1_mean, a->ln1_rstd, N, C));
  return 0;
}

int gpt2_block_bwd(gpt2_model *m, void *const *p, void *const *g, const gpt2_block_acts *a,
                   const void *x) {
  TRY(mlp_bwd(m, p, g, a));
  return attn_bwd(m, p, g, a, x);
}
