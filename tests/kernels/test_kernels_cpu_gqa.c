/* CPU kernels: causal grouped-query attention against a float64 reference written here the
 * textbook way (kv heads repeated for their query heads as HF's repeat_kv, full softmax rows),
 * forward (out and lse) and backward (dq, dkey, dval) by float64 central differences of
 * L = sum(dout * out) (method and tolerances in test_kernels_cpu_common.h). */
#include "test_kernels_cpu_common.h"

typedef struct {
  int B, T, NH, NKV, D;
  double *q, *k, *v, *dout; /* dout NULL while only the forward is needed */
} gq_ctx;

/* float64 forward: out[B,T,NH*D] and lse[B,NH,T] (either may be NULL); returns sum(dout * out)
   when dout is set. Query head h uses kv head h / (NH / NKV); s_tj = q_t . k_j / sqrt(D), j <= t.
 */
static double gq_forward(const gq_ctx *a, double *out, double *lse) {
  const int D = a->D, G = a->NH / a->NKV;
  double scale = 1.0 / sqrt((double)D), L = 0.0;
  double *s = kt_doubles((size_t)a->T);
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++) {
      int kh = h / G;
      for (int t = 0; t < a->T; t++) {
        const double *q = a->q + (((size_t)b * a->T + t) * a->NH + h) * D;
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j <= t; j++) {
          const double *kj = a->k + (((size_t)b * a->T + j) * a->NKV + kh) * D;
          double d = 0.0;
          for (int i = 0; i < D; i++)
            d += q[i] * kj[i];
          s[j] = d * scale;
          mx = fmax(mx, s[j]);
        }
        for (int j = 0; j <= t; j++)
          sum += exp(s[j] - mx);
        if (lse) lse[((size_t)b * a->NH + h) * a->T + t] = mx + log(sum);
        for (int i = 0; i < D; i++) {
          double o = 0.0;
          for (int j = 0; j <= t; j++)
            o += exp(s[j] - mx) / sum * a->v[(((size_t)b * a->T + j) * a->NKV + kh) * D + i];
          size_t oi = (((size_t)b * a->T + t) * a->NH + h) * D + i;
          if (out) out[oi] = o;
          if (a->dout) L += a->dout[oi] * o;
        }
      }
    }
  free(s);
  return L;
}

static double gq_loss(void *p) {
  return gq_forward(p, NULL, NULL);
}

/* Indices of `m` random elements of n, or NULL (all) when m == 0. */
static size_t *gq_sample(size_t n, size_t m) {
  if (!m) return NULL;
  size_t *idx = kt_alloc(m * sizeof *idx);
  for (size_t s = 0; s < m; s++)
    idx[s] = (size_t)kt_int((int)n);
  return idx;
}

/* Forward + backward through zs_k_gqa_attention_*; checks out, lse, dq, dkey, dval. With
   sample > 0 only that many random elements of each input are differentiated. */
static void test_gqa(zs_kernels *k, int B, int T, int NH, int NKV, int D, size_t sample) {
  size_t nq = (size_t)B * T * NH * D, nk = (size_t)B * T * NKV * D, nl = (size_t)B * NH * T;
  float *q = kt_rand(nq, -1.5f, 1.5f), *key = kt_rand(nk, -1.5f, 1.5f);
  float *val = kt_rand(nk, -1.5f, 1.5f), *out = kt_floats(nq), *lse = kt_floats(nl);
  ZS_OK_OR_DIE(zs_k_gqa_attention_fwd(k, out, lse, q, key, val, B, T, NH, NKV, D));
  gq_ctx a = {B, T, NH, NKV, D, kt_widen(q, nq), kt_widen(key, nk), kt_widen(val, nk), NULL};
  double *wo = kt_doubles(nq), *wl = kt_doubles(nl);
  gq_forward(&a, wo, wl);
  char what[112];
  snprintf(what, sizeof what, "gqa fwd out B=%d T=%d NH=%d NKV=%d D=%d", B, T, NH, NKV, D);
  kt_check_fwd(what, out, wo, nq);
  snprintf(what, sizeof what, "gqa fwd lse B=%d T=%d NH=%d NKV=%d D=%d", B, T, NH, NKV, D);
  kt_check_fwd(what, lse, wl, nl);

  float *dout = kt_rand(nq, -1, 1);
  float *dq = kt_rand(nq, -1, 1), *dk = kt_rand(nk, -1, 1), *dv = kt_rand(nk, -1, 1);
  float *pq = kt_copy(dq, nq), *pk = kt_copy(dk, nk), *pv = kt_copy(dv, nk);
  ZS_OK_OR_DIE(
      zs_k_gqa_attention_bwd(k, dq, dk, dv, dout, q, key, val, out, lse, B, T, NH, NKV, D));
  a.dout = kt_widen(dout, nq);
  size_t *iq = gq_sample(nq, sample), *ik = gq_sample(nk, sample);
  snprintf(what, sizeof what, "gqa dq B=%d T=%d NH=%d NKV=%d D=%d", B, T, NH, NKV, D);
  kt_check_grad(what, gq_loss, &a, a.q, nq, dq, pq, iq, sample);
  snprintf(what, sizeof what, "gqa dkey B=%d T=%d NH=%d NKV=%d D=%d", B, T, NH, NKV, D);
  kt_check_grad(what, gq_loss, &a, a.k, nk, dk, pk, ik, sample);
  snprintf(what, sizeof what, "gqa dval B=%d T=%d NH=%d NKV=%d D=%d", B, T, NH, NKV, D);
  kt_check_grad(what, gq_loss, &a, a.v, nk, dv, pv, ik, sample);
  free(q), free(key), free(val), free(out), free(lse), free(a.q), free(a.k), free(a.v);
  free(a.dout), free(wo), free(wl), free(dout), free(dq), free(dk), free(dv), free(pq), free(pk);
  free(pv), free(iq), free(ik);
}

/* With NKV == NH the GQA kernel is plain multi-head attention: it must equal zs_k_attention_* on
   the same heads packed as qkv[B,T,3C] (an independent implementation of the same math). */
static void test_matches_mha(zs_kernels *k) {
  int B = 2, T = 7, NH = 3, D = 8, C = NH * D;
  size_t n = (size_t)B * T * C;
  float *qkv = kt_rand(3 * n, -1, 1), *q = kt_floats(n), *key = kt_floats(n), *val = kt_floats(n);
  for (size_t r = 0; r < (size_t)B * T; r++) {
    memcpy(q + r * C, qkv + r * 3 * C, C * sizeof(float));
    memcpy(key + r * C, qkv + r * 3 * C + C, C * sizeof(float));
    memcpy(val + r * C, qkv + r * 3 * C + 2 * C, C * sizeof(float));
  }
  float *o1 = kt_floats(n), *o2 = kt_floats(n), *l1 = kt_floats((size_t)B * NH * T);
  float *l2 = kt_floats((size_t)B * NH * T);
  ZS_OK_OR_DIE(zs_k_attention_fwd(k, o1, l1, qkv, B, T, C, NH));
  ZS_OK_OR_DIE(zs_k_gqa_attention_fwd(k, o2, l2, q, key, val, B, T, NH, NH, D));
  double *w = kt_widen(o1, n);
  kt_check_fwd("gqa with NKV = NH against zs_k_attention_fwd", o2, w, n);
  free(qkv), free(q), free(key), free(val), free(o1), free(o2), free(l1), free(l2), free(w);
}

/* Causality: changing the last time step's q, k, v must leave every earlier output unchanged. */
static void test_causal(zs_kernels *k) {
  int B = 1, T = 6, NH = 4, NKV = 2, D = 4;
  size_t nq = (size_t)B * T * NH * D, nk = (size_t)B * T * NKV * D;
  float *q = kt_rand(nq, -1, 1), *key = kt_rand(nk, -1, 1), *val = kt_rand(nk, -1, 1);
  float *o1 = kt_floats(nq), *o2 = kt_floats(nq), *lse = kt_floats((size_t)B * NH * T);
  ZS_OK_OR_DIE(zs_k_gqa_attention_fwd(k, o1, lse, q, key, val, B, T, NH, NKV, D));
  for (int c = 0; c < NKV * D; c++) {
    key[(size_t)(T - 1) * NKV * D + c] += 5.0f;
    val[(size_t)(T - 1) * NKV * D + c] += 5.0f;
  }
  ZS_OK_OR_DIE(zs_k_gqa_attention_fwd(k, o2, lse, q, key, val, B, T, NH, NKV, D));
  size_t row = (size_t)NH * D;
  ZS_EXPECT(memcmp(o1, o2, (size_t)(T - 1) * row * sizeof(float)) == 0,
            "gqa attention: a later time step changed an earlier output");
  ZS_EXPECT(memcmp(o1 + (T - 1) * row, o2 + (T - 1) * row, row * sizeof(float)) != 0,
            "gqa attention: the last output ignored its own step");
  free(q), free(key), free(val), free(o1), free(o2), free(lse);
}

int main(void) {
  zs_kernels *k = kt_cpu();
  test_gqa(k, 2, 5, 4, 2, 4, 0);  /* two query heads per kv head (the HF proof's shape) */
  test_gqa(k, 1, 6, 6, 1, 5, 0);  /* multi-query: one kv head; odd D */
  test_gqa(k, 2, 4, 3, 3, 8, 0);  /* NKV = NH: plain multi-head */
  test_gqa(k, 1, 1, 4, 2, 4, 0);  /* T = 1: out = v */
  test_gqa(k, 1, 9, 8, 2, 12, 0); /* groups of 4, D not a multiple of the dot's 8-wide unroll */
  test_gqa(k, 2, 20, 8, 2, 32, 200);
  test_matches_mha(k);
  test_causal(k);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_gqa");
}
