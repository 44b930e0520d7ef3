/* CPU kernels, pointwise and dense layers: encoder, layernorm, matmul, GELU, residual.
 * Each forward is compared with a float64 forward written here; each backward with float64
 * central differences of L = sum(dout * forward) (see test_kernels_cpu_common.h for the method
 * and the tolerances), through the public zs_k_* calls on a CPU fp32 context. */
#include "test_kernels_cpu_common.h"

/* ---------------- encoder ---------------- */

typedef struct {
  int B, T, C;
  const int *tok;
  double *wte, *wpe, *dout;
} enc_ctx;

/* float64 reference forward fused with the dot against dout. */
static double enc_loss(void *p) {
  enc_ctx *e = p;
  double L = 0.0;
  for (int b = 0; b < e->B; b++)
    for (int t = 0; t < e->T; t++)
      for (int c = 0; c < e->C; c++) {
        size_t bt = (size_t)b * e->T + t;
        double y = e->wte[(size_t)e->tok[bt] * e->C + c] + e->wpe[(size_t)t * e->C + c];
        L += e->dout[bt * e->C + c] * y;
      }
  return L;
}

static void test_encoder(zs_kernels *k, int B, int T, int C, int V) {
  size_t n = (size_t)B * T * C;
  int *tok = kt_alloc((size_t)B * T * sizeof(int));
  for (int i = 0; i < B * T; i++)
    tok[i] = kt_int(V); /* repeats likely: exercises accumulation */
  float *wte = kt_rand((size_t)V * C, -1, 1), *wpe = kt_rand((size_t)T * C, -1, 1);
  float *out = kt_floats(n), *dout = kt_rand(n, -1, 1);
  ZS_OK_OR_DIE(zs_k_encoder_fwd(k, out, tok, wte, wpe, B, T, C));
  double *want = kt_doubles(n);
  for (int i = 0; i < B * T; i++)
    for (int c = 0; c < C; c++)
      want[(size_t)i * C + c] = (double)wte[(size_t)tok[i] * C + c] + wpe[(size_t)(i % T) * C + c];
  kt_check_fwd("encoder fwd", out, want, n);

  float *dwte = kt_rand((size_t)V * C, -1, 1), *dwpe = kt_rand((size_t)T * C, -1, 1);
  float *pte = kt_copy(dwte, (size_t)V * C), *ppe = kt_copy(dwpe, (size_t)T * C);
  ZS_OK_OR_DIE(zs_k_encoder_bwd(k, dwte, dwpe, dout, tok, B, T, C));
  enc_ctx e = {
      B, T, C, tok, kt_widen(wte, (size_t)V * C), kt_widen(wpe, (size_t)T * C), kt_widen(dout, n)};
  kt_check_grad("encoder dwte", enc_loss, &e, e.wte, (size_t)V * C, dwte, pte, NULL, 0);
  kt_check_grad("encoder dwpe", enc_loss, &e, e.wpe, (size_t)T * C, dwpe, ppe, NULL, 0);
  free(tok), free(wte), free(wpe), free(out), free(dout), free(want), free(dwte), free(dwpe);
  free(pte), free(ppe), free(e.wte), free(e.wpe), free(e.dout);
}

/* ---------------- layernorm ---------------- */

typedef struct {
  int N, C;
  double *inp, *w, *b, *dout;
} ln_ctx;

/* float64 layernorm of row i into y[C]; returns nothing, mean/rstd through pointers. */
static void ln_row(const ln_ctx *l, int i, double *y, double *mean, double *rstd) {
  const double *x = l->inp + (size_t)i * l->C;
  double m = 0.0, v = 0.0;
  for (int c = 0; c < l->C; c++)
    m += x[c];
  m /= l->C;
  for (int c = 0; c < l->C; c++)
    v += (x[c] - m) * (x[c] - m);
  v /= l->C;
  double r = 1.0 / sqrt(v + 1e-5);
  for (int c = 0; c < l->C; c++)
    y[c] = (x[c] - m) * r * l->w[c] + l->b[c];
  *mean = m;
  *rstd = r;
}

static double ln_loss(void *p) {
  ln_ctx *l = p;
  double *y = kt_doubles((size_t)l->C), L = 0.0, m, r;
  for (int i = 0; i < l->N; i++) {
    ln_row(l, i, y, &m, &r);
    for (int c = 0; c < l->C; c++)
      L += l->dout[(size_t)i * l->C + c] * y[c];
  }
  free(y);
  return L;
}

static void test_layernorm(zs_kernels *k, int N, int C) {
  size_t n = (size_t)N * C;
  /* an offset mean and a spread scale make mean and rstd matter */
  float *inp = kt_rand(n, -2, 3), *w = kt_rand((size_t)C, 0.5f, 1.5f),
        *b = kt_rand((size_t)C, -1, 1);
  float *out = kt_floats(n), *mean = kt_floats((size_t)N), *rstd = kt_floats((size_t)N);
  ZS_OK_OR_DIE(zs_k_layernorm_fwd(k, out, mean, rstd, inp, w, b, N, C));
  ln_ctx l = {N, C, kt_widen(inp, n), kt_widen(w, (size_t)C), kt_widen(b, (size_t)C), NULL};
  double *want = kt_doubles(n), *wm = kt_doubles((size_t)N), *wr = kt_doubles((size_t)N);
  for (int i = 0; i < N; i++)
    ln_row(&l, i, want + (size_t)i * C, &wm[i], &wr[i]);
  kt_check_fwd("layernorm fwd out", out, want, n);
  kt_check_fwd("layernorm fwd mean", mean, wm, (size_t)N);
  kt_check_fwd("layernorm fwd rstd", rstd, wr, (size_t)N);

  float *dout = kt_rand(n, -1, 1);
  float *dinp = kt_rand(n, -1, 1), *dw = kt_rand((size_t)C, -1, 1), *db = kt_rand((size_t)C, -1, 1);
  float *pi = kt_copy(dinp, n), *pw = kt_copy(dw, (size_t)C), *pb = kt_copy(db, (size_t)C);
  ZS_OK_OR_DIE(zs_k_layernorm_bwd(k, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
  l.dout = kt_widen(dout, n);
  kt_check_grad("layernorm dinp", ln_loss, &l, l.inp, n, dinp, pi, NULL, 0);
  kt_check_grad("layernorm dw", ln_loss, &l, l.w, (size_t)C, dw, pw, NULL, 0);
  kt_check_grad("layernorm db", ln_loss, &l, l.b, (size_t)C, db, pb, NULL, 0);
  free(inp), free(w), free(b), free(out), free(mean), free(rstd), free(want), free(wm), free(wr);
  free(dout), free(dinp), free(dw), free(db), free(pi), free(pw), free(pb);
  free(l.inp), free(l.w), free(l.b), free(l.dout);
}

/* ---------------- matmul ---------------- */

typedef struct {
  int N, C, OC;
  double *inp, *w, *bias, *dout; /* bias NULL: no bias */
} mm_ctx;

static double mm_out(const mm_ctx *m, int i, int o) {
  double s = m->bias ? m->bias[o] : 0.0;
  for (int c = 0; c < m->C; c++)
    s += m->inp[(size_t)i * m->C + c] * m->w[(size_t)o * m->C + c];
  return s;
}

static double mm_loss(void *p) {
  mm_ctx *m = p;
  double L = 0.0;
  for (int i = 0; i < m->N; i++)
    for (int o = 0; o < m->OC; o++)
      L += m->dout[(size_t)i * m->OC + o] * mm_out(m, i, o);
  return L;
}

static void test_matmul(zs_kernels *k, int N, int C, int OC, int with_bias) {
  size_t ni = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
  float *inp = kt_rand(ni, -1, 1), *w = kt_rand(nw, -1, 1);
  float *bias = with_bias ? kt_rand((size_t)OC, -1, 1) : NULL;
  float *out = kt_rand(no, 100, 200); /* garbage: the forward must overwrite, not add */
  ZS_OK_OR_DIE(zs_k_matmul_fwd(k, out, inp, w, bias, N, C, OC));
  mm_ctx m = {
      N,   C, OC, kt_widen(inp, ni), kt_widen(w, nw), with_bias ? kt_widen(bias, (size_t)OC) : NULL,
      NULL};
  double *want = kt_doubles(no);
  for (int i = 0; i < N; i++)
    for (int o = 0; o < OC; o++)
      want[(size_t)i * OC + o] = mm_out(&m, i, o);
  kt_check_fwd(with_bias ? "matmul fwd" : "matmul fwd (no bias)", out, want, no);

  float *dout = kt_rand(no, -1, 1);
  float *dinp = kt_rand(ni, -1, 1), *dw = kt_rand(nw, -1, 1);
  float *dbias = with_bias ? kt_rand((size_t)OC, -1, 1) : NULL;
  float *pi = kt_copy(dinp, ni), *pw = kt_copy(dw, nw);
  float *pb = with_bias ? kt_copy(dbias, (size_t)OC) : NULL;
  ZS_OK_OR_DIE(zs_k_matmul_bwd(k, dinp, dw, dbias, dout, inp, w, N, C, OC));
  m.dout = kt_widen(dout, no);
  kt_check_grad("matmul dinp", mm_loss, &m, m.inp, ni, dinp, pi, NULL, 0);
  kt_check_grad("matmul dw", mm_loss, &m, m.w, nw, dw, pw, NULL, 0);
  if (with_bias) kt_check_grad("matmul dbias", mm_loss, &m, m.bias, (size_t)OC, dbias, pb, NULL, 0);

  /* dinp == NULL (a first layer): the same dw and dbias, bit for bit, from the same start */
  float *dw2 = kt_copy(pw, nw), *db2 = with_bias ? kt_copy(pb, (size_t)OC) : NULL;
  ZS_OK_OR_DIE(zs_k_matmul_bwd(k, NULL, dw2, db2, dout, inp, w, N, C, OC));
  ZS_EXPECT(memcmp(dw2, dw, nw * sizeof(float)) == 0, "matmul bwd dinp=NULL: dw differs (N=%d)", N);
  ZS_EXPECT(!with_bias || memcmp(db2, dbias, (size_t)OC * sizeof(float)) == 0,
            "matmul bwd dinp=NULL: dbias differs (N=%d)", N);
  free(dw2), free(db2);
  free(inp), free(w), free(bias), free(out), free(want), free(dout), free(dinp), free(dw);
  free(dbias), free(pi), free(pw), free(pb), free(m.inp), free(m.w), free(m.bias), free(m.dout);
}

/* ---------------- GELU ---------------- */

typedef struct {
  size_t n;
  double *inp, *dout;
} gelu_ctx;

static double gelu64(double x) {
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double gelu_loss(void *p) {
  gelu_ctx *g = p;
  double L = 0.0;
  for (size_t i = 0; i < g->n; i++)
    L += g->dout[i] * gelu64(g->inp[i]);
  return L;
}

static void test_gelu(zs_kernels *k, size_t n) {
  float *inp = kt_rand(n, -4, 4), *out = kt_floats(n), *dout = kt_rand(n, -1, 1);
  ZS_OK_OR_DIE(zs_k_gelu_fwd(k, out, inp, n));
  gelu_ctx g = {n, kt_widen(inp, n), kt_widen(dout, n)};
  double *want = kt_doubles(n);
  for (size_t i = 0; i < n; i++)
    want[i] = gelu64(g.inp[i]);
  kt_check_fwd("gelu fwd", out, want, n);
  float *dinp = kt_rand(n, -1, 1), *pi = kt_copy(dinp, n);
  ZS_OK_OR_DIE(zs_k_gelu_bwd(k, dinp, inp, dout, n));
  kt_check_grad("gelu dinp", gelu_loss, &g, g.inp, n, dinp, pi, NULL, 0);
  free(inp), free(out), free(dout), free(g.inp), free(g.dout), free(want), free(dinp), free(pi);
}

/* ---------------- residual ---------------- */

typedef struct {
  size_t n;
  double *a, *b, *dout;
} res_ctx;

static double res_loss(void *p) {
  res_ctx *r = p;
  double L = 0.0;
  for (size_t i = 0; i < r->n; i++)
    L += r->dout[i] * (r->a[i] + r->b[i]);
  return L;
}

static void test_residual(zs_kernels *k, size_t n) {
  float *a = kt_rand(n, -1, 1), *b = kt_rand(n, -1, 1), *out = kt_floats(n);
  float *dout = kt_rand(n, -1, 1);
  ZS_OK_OR_DIE(zs_k_residual_fwd(k, out, a, b, n));
  res_ctx r = {n, kt_widen(a, n), kt_widen(b, n), kt_widen(dout, n)};
  double *want = kt_doubles(n);
  for (size_t i = 0; i < n; i++)
    want[i] = r.a[i] + r.b[i];
  kt_check_fwd("residual fwd", out, want, n);
  float *da = kt_rand(n, -1, 1), *db = kt_rand(n, -1, 1);
  float *pa = kt_copy(da, n), *pb = kt_copy(db, n);
  ZS_OK_OR_DIE(zs_k_residual_bwd(k, da, db, dout, n));
  kt_check_grad("residual da", res_loss, &r, r.a, n, da, pa, NULL, 0);
  kt_check_grad("residual db", res_loss, &r, r.b, n, db, pb, NULL, 0);
  /* da == db (out = a + a): the shared buffer receives dout twice */
  memcpy(da, pa, n * sizeof(float));
  ZS_OK_OR_DIE(zs_k_residual_bwd(k, da, da, dout, n));
  for (size_t i = 0; i < n; i++)
    want[i] = 2.0 * dout[i];
  kt_compare("residual bwd aliased", da, pa, want, n, KT_GRAD_RTOL, 0.01);
  free(a), free(b), free(out), free(dout), free(r.a), free(r.b), free(r.dout), free(want);
  free(da), free(db), free(pa), free(pb);
}

int main(void) {
  zs_kernels *k = kt_cpu();
  test_encoder(k, 2, 5, 12, 7);
  test_encoder(k, 1, 1, 1, 1);
  test_encoder(k, 3, 4, 7, 2);
  test_layernorm(k, 10, 12);
  test_layernorm(k, 3, 7);
  test_layernorm(k, 1, 33);
  test_layernorm(k, 4, 1); /* C = 1: the normalised value is 0, out = b */
  test_matmul(k, 10, 12, 7, 1);
  test_matmul(k, 1, 1, 1, 1);
  test_matmul(k, 5, 33, 17, 0);
  test_matmul(k, 7, 5, 3, 1);
  test_gelu(k, 1);
  test_gelu(k, 37);
  test_gelu(k, 1000);
  test_residual(k, 1);
  test_residual(k, 37);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_layers");
}
