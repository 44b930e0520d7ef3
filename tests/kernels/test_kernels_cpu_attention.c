/* CPU kernels: causal multi-head attention (flash style) against a float64 reference written here
 * the textbook way (full softmax rows, no online tricks), forward (out and lse) and backward by
 * float64 central differences (method and tolerances in test_kernels_cpu_common.h). */
#include "test_kernels_cpu_common.h"

typedef struct {
  int B, T, C, NH;
  double *qkv, *dout; /* dout NULL while only the forward is needed */
} at_ctx;

/* float64 forward: out[B,T,C] and lse[B,NH,T] (either may be NULL); returns sum(dout * out) when
   dout is set. Scores s_tj = q_t . k_j / sqrt(hs) for j <= t; softmax over j; out = P V. */
static double at_forward(const at_ctx *a, double *out, double *lse) {
  int hs = a->C / a->NH;
  size_t rs = (size_t)3 * a->C;
  double scale = 1.0 / sqrt((double)hs), L = 0.0;
  double *s = kt_doubles((size_t)a->T);
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++)
      for (int t = 0; t < a->T; t++) {
        const double *q = a->qkv + ((size_t)b * a->T + t) * rs + (size_t)h * hs;
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j <= t; j++) {
          const double *kj = a->qkv + ((size_t)b * a->T + j) * rs + a->C + (size_t)h * hs;
          double d = 0.0;
          for (int i = 0; i < hs; i++)
            d += q[i] * kj[i];
          s[j] = d * scale;
          mx = fmax(mx, s[j]);
        }
        for (int j = 0; j <= t; j++)
          sum += exp(s[j] - mx);
        if (lse) lse[((size_t)b * a->NH + h) * a->T + t] = mx + log(sum);
        for (int i = 0; i < hs; i++) {
          double o = 0.0;
          for (int j = 0; j <= t; j++)
            o += exp(s[j] - mx) / sum *
                 a->qkv[((size_t)b * a->T + j) * rs + 2 * (size_t)a->C + (size_t)h * hs + i];
          size_t oi = ((size_t)b * a->T + t) * a->C + (size_t)h * hs + i;
          if (out) out[oi] = o;
          if (a->dout) L += a->dout[oi] * o;
        }
      }
  free(s);
  return L;
}

static double at_loss(void *p) {
  return at_forward(p, NULL, NULL);
}

/* Runs forward + backward through zs_k_*; checks out, lse and dqkv. With sample > 0 only that many
   random qkv elements are differentiated (large shapes), otherwise all of them. */
static void test_attention(zs_kernels *k, int B, int T, int C, int NH, size_t sample) {
  size_t nqkv = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
  float *qkv = kt_rand(nqkv, -1.5f, 1.5f), *out = kt_floats(no), *lse = kt_floats(nl);
  ZS_OK_OR_DIE(zs_k_attention_fwd(k, out, lse, qkv, B, T, C, NH));
  at_ctx a = {B, T, C, NH, kt_widen(qkv, nqkv), NULL};
  double *wo = kt_doubles(no), *wl = kt_doubles(nl);
  at_forward(&a, wo, wl);
  char what[96];
  snprintf(what, sizeof what, "attention fwd out B=%d T=%d C=%d NH=%d", B, T, C, NH);
  kt_check_fwd(what, out, wo, no);
  snprintf(what, sizeof what, "attention fwd lse B=%d T=%d C=%d NH=%d", B, T, C, NH);
  kt_check_fwd(what, lse, wl, nl);

  float *dout = kt_rand(no, -1, 1), *dqkv = kt_rand(nqkv, -1, 1), *pre = kt_copy(dqkv, nqkv);
  ZS_OK_OR_DIE(zs_k_attention_bwd(k, dqkv, dout, qkv, out, lse, B, T, C, NH));
  a.dout = kt_widen(dout, no);
  size_t *idx = NULL;
  if (sample) {
    idx = kt_alloc(sample * sizeof *idx);
    for (size_t s = 0; s < sample; s++)
      idx[s] = (size_t)kt_int((int)nqkv);
  }
  snprintf(what, sizeof what, "attention dqkv B=%d T=%d C=%d NH=%d", B, T, C, NH);
  kt_check_grad(what, at_loss, &a, a.qkv, nqkv, dqkv, pre, idx, sample);
  free(qkv), free(out), free(lse), free(a.qkv), free(a.dout), free(wo), free(wl), free(dout);
  free(dqkv), free(pre), free(idx);
}

/* Causality: changing the last time step's q, k, v must leave every earlier output unchanged. */
static void test_causal(zs_kernels *k) {
  int B = 1, T = 6, C = 8, NH = 2;
  size_t nqkv = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
  float *qkv = kt_rand(nqkv, -1, 1), *o1 = kt_floats(no), *o2 = kt_floats(no);
  float *lse = kt_floats((size_t)B * NH * T);
  ZS_OK_OR_DIE(zs_k_attention_fwd(k, o1, lse, qkv, B, T, C, NH));
  for (int c = 0; c < 3 * C; c++)
    qkv[(size_t)(T - 1) * 3 * C + c] += 5.0f;
  ZS_OK_OR_DIE(zs_k_attention_fwd(k, o2, lse, qkv, B, T, C, NH));
  ZS_EXPECT(memcmp(o1, o2, (size_t)(T - 1) * C * sizeof(float)) == 0,
            "attention: a later time step changed an earlier output");
  ZS_EXPECT(memcmp(o1 + (size_t)(T - 1) * C, o2 + (size_t)(T - 1) * C, C * sizeof(float)) != 0,
            "attention: the last output ignored its own step");
  free(qkv), free(o1), free(o2), free(lse);
}

int main(void) {
  zs_kernels *k = kt_cpu();
  test_attention(k, 2, 5, 12, 3, 0);
  test_attention(k, 1, 1, 4, 2, 0);  /* T = 1: out = v */
  test_attention(k, 1, 7, 8, 1, 0);  /* one head */
  test_attention(k, 2, 9, 20, 4, 0); /* hs = 5: not a multiple of the dot's 8-wide unroll */
  test_attention(k, 1, 4, 48, 2, 0); /* hs = 24 */
  test_attention(k, 2, 40, 64, 4, 300);
  test_causal(k);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_attention");
}
