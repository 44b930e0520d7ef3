/* Forward of one transformer block (pre-norm GPT-2):
 *   res2 = x + proj(attn(qkv(ln1(x))))      y = res2 + fcproj(gelu(fc(ln2(res2)))) */
#include "model.h"
#include "util.h"

int gpt2_block_fwd(gpt2_model *m, void *const *p, gpt2_block_acts *a, const void *x, void *y,
                   int B) {
  zs_kernels *k = m->k;
  int T = m->T, C = m->cfg.channels, NH = m->cfg.heads, N = B * T;
  size_t NC = (size_t)N * C;
  void *tmp = m->dln; /* projection outputs live only until the residual add */
  ZS_TRY(
      zs_k_layernorm_fwd(k, a->ln1, a->ln1_mean, a->ln1_rstd, x, p[BLK_LN1_W], p[BLK_LN1_B], N, C));
  ZS_TRY(zs_k_matmul_fwd(k, a->qkv, a->ln1, p[BLK_QKV_W], p[BLK_QKV_B], N, C, 3 * C));
  ZS_TRY(zs_k_attention_fwd(k, a->atty, a->lse, a->qkv, B, T, C, NH));
  ZS_TRY(zs_k_matmul_fwd(k, tmp, a->atty, p[BLK_PROJ_W], p[BLK_PROJ_B], N, C, C));
  ZS_TRY(zs_k_residual_fwd(k, a->res2, x, tmp, NC));
  ZS_TRY(zs_k_layernorm_fwd(k, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, p[BLK_LN2_W],
                            p[BLK_LN2_B], N, C));
  ZS_TRY(zs_k_matmul_fwd(k, a->fch, a->ln2, p[BLK_FC_W], p[BLK_FC_B], N, C, 4 * C));
  ZS_TRY(zs_k_gelu_fwd(k, a->fch_gelu, a->fch, 4 * NC));
  ZS_TRY(zs_k_matmul_fwd(k, tmp, a->fch_gelu, p[BLK_FCPROJ_W], p[BLK_FCPROJ_B], N, 4 * C, C));
  ZS_TRY(zs_k_residual_fwd(k, y, a->res2, tmp, NC));
  return 0;
}
