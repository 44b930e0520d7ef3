/* CPU kernels: the vocabulary-parallel embedding and cross-entropy (zs_k_vocab_*). P ranks are
 * simulated in one process: each gets its Vl columns of the logits (or rows of the table), the
 * parts are "gathered" by concatenation in rank order, and every rank finishes. Checked against
 * float64 written here from the definitions over the WHOLE vocabulary: the loss log sum exp(l) -
 * l[target], its gradient (softmax - onehot) * dloss, and the embedding lookup and scatter-add.
 * Every rank must also get the same loss bits. Also: dlogits aliasing logits, losses only, large
 * logits, a rank with none of a row's mass, and the argument checks. */
#include "test_kernels_cpu_common.h"

#define INV ZS_ERR_INVALID_ARG

static void test_xent(zs_kernels *k, int N, int P, int Vl, float spread, float shift) {
  const int V = P * Vl;
  float *logits = kt_floats((size_t)N * V);
  for (size_t i = 0; i < (size_t)N * V; i++)
    logits[i] = shift + kt_uniform(-spread, spread);
  int *tg = kt_alloc((size_t)N * sizeof(int));
  for (int i = 0; i < N; i++)
    tg[i] = kt_int(V);
  if (P > 1) logits[V - 1] = shift + 40.0f; /* row 0's mass on the last rank alone */
  const float dloss = 1.0f / (float)N;
  /* float64 references over the whole rows */
  double *wl = kt_doubles((size_t)N), *wg = kt_doubles((size_t)N * V);
  for (int i = 0; i < N; i++) {
    const float *l = logits + (size_t)i * V;
    double mx = -INFINITY, s = 0.0;
    for (int j = 0; j < V; j++)
      mx = fmax(mx, l[j]);
    for (int j = 0; j < V; j++)
      s += exp((double)l[j] - mx);
    wl[i] = mx + log(s) - l[tg[i]];
    for (int j = 0; j < V; j++)
      wg[(size_t)i * V + j] = (exp((double)l[j] - mx) / s - (j == tg[i])) * dloss;
  }
  float *parts = kt_floats((size_t)P * N * 3), *mine = kt_floats((size_t)N * Vl);
  float *dl = kt_floats((size_t)N * V), *losses = kt_floats((size_t)N * P);
  float *l2 = kt_floats((size_t)N), *inplace = kt_floats((size_t)N * Vl);
  for (int r = 0; r < P; r++) {
    for (int i = 0; i < N; i++)
      memcpy(mine + (size_t)i * Vl, logits + (size_t)i * V + (size_t)r * Vl, Vl * sizeof(float));
    ZS_OK_OR_DIE(zs_k_vocab_xent_part(k, parts + (size_t)r * N * 3, mine, tg, N, r * Vl, Vl, V));
  }
  int same = 1, alias = 1;
  for (int r = 0; r < P; r++) {
    for (int i = 0; i < N; i++)
      memcpy(mine + (size_t)i * Vl, logits + (size_t)i * V + (size_t)r * Vl, Vl * sizeof(float));
    float *d = kt_rand((size_t)N * Vl, 100, 200); /* written, not added: garbage must go */
    ZS_OK_OR_DIE(zs_k_vocab_xent_finish(k, losses + (size_t)r * N, d, mine, parts, P, tg, dloss, N,
                                        r * Vl, Vl, V));
    for (int i = 0; i < N; i++)
      memcpy(dl + (size_t)i * V + (size_t)r * Vl, d + (size_t)i * Vl, Vl * sizeof(float));
    same &= memcmp(losses, losses + (size_t)r * N, (size_t)N * sizeof(float)) == 0;
    ZS_OK_OR_DIE(zs_k_vocab_xent_finish(k, l2, NULL, mine, parts, P, tg, dloss, N, r * Vl, Vl, V));
    same &= memcmp(losses, l2, (size_t)N * sizeof(float)) == 0;
    memcpy(inplace, mine, (size_t)N * Vl * sizeof(float));
    ZS_OK_OR_DIE(
        zs_k_vocab_xent_finish(k, l2, inplace, inplace, parts, P, tg, dloss, N, r * Vl, Vl, V));
    alias &= memcmp(inplace, d, (size_t)N * Vl * sizeof(float)) == 0;
    free(d);
  }
  char what[96];
  snprintf(what, sizeof what, "vocab xent losses N=%d P=%d Vl=%d", N, P, Vl);
  kt_check_fwd(what, losses, wl, (size_t)N);
  snprintf(what, sizeof what, "vocab xent dlogits N=%d P=%d Vl=%d", N, P, Vl);
  kt_compare(what, dl, NULL, wg, (size_t)N * V, KT_GRAD_RTOL, 1e-3);
  ZS_EXPECT(same, "vocab xent P=%d: the ranks' losses (or losses without dlogits) differ", P);
  ZS_EXPECT(alias, "vocab xent P=%d: in-place dlogits differ from out of place", P);
  free(logits), free(tg), free(wl), free(wg), free(parts), free(mine), free(dl), free(losses);
  free(l2), free(inplace);
}

/* The ranks' embedding outputs sum to the whole table's rows; their gradients concatenate to the
   whole scatter-add (repeated tokens included). */
static void test_embedding(zs_kernels *k, int P) {
  enum { N = 9, C = 5, Vl = 3 };
  const int V = P * Vl;
  int tok[N];
  for (int i = 0; i < N; i++)
    tok[i] = (i * 7 + 2) % V;
  tok[N - 1] = tok[0];
  float *wte = kt_rand((size_t)V * C, -1, 1), *out = kt_floats((size_t)N * C);
  float *sum = kt_floats((size_t)N * C), *dout = kt_rand((size_t)N * C, -1, 1);
  float *dw = kt_rand((size_t)V * C, -1, 1), *pre = kt_copy(dw, (size_t)V * C);
  double *want = kt_doubles((size_t)V * C);
  for (int i = 0; i < N; i++)
    for (int c = 0; c < C; c++)
      want[tok[i] * C + c] += dout[i * C + c];
  for (int r = 0; r < P; r++) {
    float *garbage = kt_rand((size_t)N * C, 100, 200);
    memcpy(out, garbage, (size_t)N * C * sizeof(float));
    ZS_OK_OR_DIE(
        zs_k_vocab_embedding_fwd(k, out, tok, wte + (size_t)r * Vl * C, N, C, r * Vl, Vl, V));
    for (int i = 0; i < N * C; i++)
      sum[i] += out[i];
    ZS_OK_OR_DIE(
        zs_k_vocab_embedding_bwd(k, dw + (size_t)r * Vl * C, dout, tok, N, C, r * Vl, Vl, V));
    free(garbage);
  }
  for (int i = 0; i < N; i++)
    ZS_EXPECT(memcmp(sum + i * C, wte + tok[i] * C, C * sizeof(float)) == 0,
              "vocab embedding fwd P=%d: row %d is not wte[%d]", P, i, tok[i]);
  char what[64];
  snprintf(what, sizeof what, "vocab embedding bwd P=%d", P);
  kt_compare(what, dw, pre, want, (size_t)V * C, KT_FWD_RTOL, 0.1);
  free(wte), free(out), free(sum), free(dout), free(dw), free(pre), free(want);
}

/* Arguments: ranges outside the vocabulary, an uneven split, ids outside it, aliasing; nothing
   written on a refusal. */
static void test_args(zs_kernels *k) {
  enum { N = 2, C = 2, Vl = 2, V = 4 };
  int tok[N] = {0, 3}, bad[N] = {0, 4};
  float w[Vl * C] = {1, 2, 3, 4}, o[N * C] = {7, 7, 7, 7}, part[3 * N * 2] = {0};
  float lg[N * Vl] = {0}, ls[N] = {9, 9};
  ZS_EXPECT_STATUS(zs_k_vocab_embedding_fwd(k, o, tok, w, N, C, 3, Vl, V), INV); /* 3 + 2 > 4 */
  ZS_EXPECT_STATUS(zs_k_vocab_embedding_fwd(k, o, tok, w, N, C, -1, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_embedding_fwd(k, o, bad, w, N, C, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_embedding_fwd(k, w, tok, w, N, C, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_embedding_bwd(k, w, w, tok, N, C, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_embedding_bwd(NULL, w, o, tok, N, C, 2, Vl, V), INV);
  ZS_EXPECT(o[0] == 7 && w[0] == 1, "vocab embedding: a refused call wrote");
  ZS_EXPECT_STATUS(zs_k_vocab_xent_part(k, part, lg, bad, N, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_xent_part(k, part, lg, tok, 0, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_xent_finish(k, ls, lg, lg, part, 3, tok, 1, N, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_xent_finish(k, ls, lg, lg, part, 2, bad, 1, N, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_xent_finish(k, part, lg, lg, part, 2, tok, 1, N, 2, Vl, V), INV);
  ZS_EXPECT_STATUS(zs_k_vocab_xent_finish(k, ls, part, lg, part, 2, tok, 1, N, 2, Vl, V), INV);
  ZS_EXPECT(ls[0] == 9 && part[0] == 0, "vocab xent: a refused call wrote");
}

int main(void) {
  zs_kernels *k = kt_cpu();
  test_xent(k, 5, 1, 13, 3, 0); /* one rank: the whole softmax */
  test_xent(k, 6, 2, 7, 3, 0);
  test_xent(k, 4, 4, 5, 4, 80); /* large logits: exp without the max would overflow */
  test_xent(k, 3, 3, 1, 2, -3); /* one column a rank */
  for (int P = 1; P <= 4; P++)
    test_embedding(k, P);
  test_args(k);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_vocab");
}
