/* CPU kernels: fused softmax + cross-entropy over padded rows. Losses against float64, dlogits
 * against float64 central differences of L = dloss * sum(losses) (dlogits is WRITTEN, not added:
 * it is pre-filled with garbage and compared without subtracting it). Padded columns hold NaN in
 * the input, so reading one poisons the result; they must come out 0. Also: dlogits aliasing
 * logits, dlogits == NULL, and a row of large logits (the max must be subtracted). */
#include "test_kernels_cpu_common.h"

typedef struct {
  int N, V, Vp;
  const int *tg;
  double *logits, dloss;
} xe_ctx;

/* float64 loss of row i: log sum exp(l) - l[target], computed around the row max. */
static double xe_row(const xe_ctx *x, int i) {
  const double *l = x->logits + (size_t)i * x->Vp;
  double mx = -INFINITY, s = 0.0;
  for (int j = 0; j < x->V; j++)
    mx = fmax(mx, l[j]);
  for (int j = 0; j < x->V; j++)
    s += exp(l[j] - mx);
  return mx + log(s) - l[x->tg[i]];
}

static double xe_loss(void *p) {
  xe_ctx *x = p;
  double L = 0.0;
  for (int i = 0; i < x->N; i++)
    L += x->dloss * xe_row(x, i);
  return L;
}

static void test_xent(zs_kernels *k, int N, int V, int Vp, float spread, float shift) {
  size_t n = (size_t)N * Vp;
  float *logits = kt_floats(n);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < Vp; j++)
      logits[(size_t)i * Vp + j] = j < V ? shift + kt_uniform(-spread, spread) : NAN;
  int *tg = kt_alloc((size_t)N * sizeof(int));
  for (int i = 0; i < N; i++)
    tg[i] = kt_int(V);
  float dloss = 1.0f / (float)N;
  float *losses = kt_floats((size_t)N), *dl = kt_rand(n, 100, 200), *zero = kt_floats(n);
  ZS_OK_OR_DIE(zs_k_softmax_xent(k, losses, dl, logits, tg, dloss, N, V, Vp));

  xe_ctx x = {N, V, Vp, tg, kt_widen(logits, n), dloss};
  double *wl = kt_doubles((size_t)N);
  for (int i = 0; i < N; i++)
    wl[i] = xe_row(&x, i);
  char what[96];
  snprintf(what, sizeof what, "xent losses N=%d V=%d Vp=%d", N, V, Vp);
  kt_check_fwd(what, losses, wl, (size_t)N);

  /* numeric gradient over the real columns only (the padded ones are NaN, FD there is moot) */
  size_t m = (size_t)N * V, *idx = kt_alloc(m * sizeof *idx);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < V; j++)
      idx[(size_t)i * V + j] = (size_t)i * Vp + j;
  snprintf(what, sizeof what, "xent dlogits N=%d V=%d Vp=%d", N, V, Vp);
  kt_check_grad(what, xe_loss, &x, x.logits, n, dl, zero, idx, m);
  int pad_ok = 1;
  for (int i = 0; i < N; i++)
    for (int j = V; j < Vp; j++)
      pad_ok &= dl[(size_t)i * Vp + j] == 0.0f;
  ZS_EXPECT(pad_ok, "xent: a padded column of dlogits is not 0");

  /* losses only */
  float *l2 = kt_floats((size_t)N);
  ZS_OK_OR_DIE(zs_k_softmax_xent(k, l2, NULL, logits, tg, dloss, N, V, Vp));
  ZS_EXPECT(memcmp(l2, losses, (size_t)N * sizeof(float)) == 0,
            "xent: losses differ without dlogits");
  /* in place: dlogits aliases logits, same bits as out of place */
  ZS_OK_OR_DIE(zs_k_softmax_xent(k, l2, logits, logits, tg, dloss, N, V, Vp));
  ZS_EXPECT(memcmp(l2, losses, (size_t)N * sizeof(float)) == 0, "xent: in-place losses differ");
  ZS_EXPECT(memcmp(logits, dl, n * sizeof(float)) == 0, "xent: in-place dlogits differ");
  free(logits), free(tg), free(losses), free(dl), free(zero), free(x.logits), free(wl), free(idx);
  free(l2);
}

int main(void) {
  zs_kernels *k = kt_cpu();
  test_xent(k, 6, 13, 16, 3, 0);
  test_xent(k, 4, 5, 5, 2, 0);    /* no padding */
  test_xent(k, 1, 1, 1, 1, 0);    /* one class: loss 0, gradient 0 */
  test_xent(k, 3, 1, 4, 1, 0);    /* one class with padding */
  test_xent(k, 5, 29, 32, 4, 80); /* large logits: exp without the max would overflow */
  test_xent(k, 2, 256, 256, 6, -3);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_xent");
}
