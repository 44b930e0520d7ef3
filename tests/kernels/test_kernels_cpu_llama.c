/* CPU kernels of the Llama family except attention (test_kernels_cpu_gqa.c): token embedding,
 * RMSNorm, the rotary tables (default and Llama-3 frequencies) and rotation, SwiGLU. Forwards
 * against float64 references written here from the Hugging Face definitions, backwards by
 * float64 central differences (method and tolerances in test_kernels_cpu_common.h). */
#include "test_kernels_cpu_common.h"

/* ---- embedding ---- */

/* out rows are exact copies; dwte += each dout row at its token (repeats included). */
static void test_embedding(zs_kernels *k) {
  enum { N = 7, C = 5, V = 4 };
  int tok[N] = {3, 0, 3, 1, 3, 2, 0};
  float *wte = kt_rand((size_t)V * C, -1, 1), *out = kt_floats((size_t)N * C);
  ZS_OK_OR_DIE(zs_k_embedding_fwd(k, out, tok, wte, N, C, V));
  for (int i = 0; i < N; i++)
    ZS_EXPECT(memcmp(out + i * C, wte + tok[i] * C, C * sizeof(float)) == 0,
              "embedding fwd: row %d is not wte[%d]", i, tok[i]);
  float *dout = kt_rand((size_t)N * C, -1, 1), *dw = kt_rand((size_t)V * C, -1, 1);
  float *pre = kt_copy(dw, (size_t)V * C);
  double *want = kt_doubles((size_t)V * C);
  for (int i = 0; i < N; i++)
    for (int c = 0; c < C; c++)
      want[tok[i] * C + c] += dout[i * C + c];
  ZS_OK_OR_DIE(zs_k_embedding_bwd(k, dw, dout, tok, N, C, V));
  kt_compare("embedding bwd dwte", dw, pre, want, (size_t)V * C, KT_FWD_RTOL, 0.1);
  free(wte), free(out), free(dout), free(dw), free(pre), free(want);
}

/* ---- RMSNorm ---- */

typedef struct {
  int N, C;
  double eps, *x, *w, *dout;
} rn_ctx;

/* float64 HF LlamaRMSNorm: out = w * x / sqrt(mean(x^2) + eps); returns sum(dout * out). */
static double rn_forward(const rn_ctx *a, double *out, double *rrms) {
  double L = 0.0;
  for (int i = 0; i < a->N; i++) {
    const double *x = a->x + (size_t)i * a->C;
    double ms = 0.0;
    for (int c = 0; c < a->C; c++)
      ms += x[c] * x[c];
    double r = 1.0 / sqrt(ms / a->C + a->eps);
    if (rrms) rrms[i] = r;
    for (int c = 0; c < a->C; c++) {
      double y = a->w[c] * x[c] * r;
      if (out) out[(size_t)i * a->C + c] = y;
      if (a->dout) L += a->dout[(size_t)i * a->C + c] * y;
    }
  }
  return L;
}
static double rn_loss(void *p) {
  return rn_forward(p, NULL, NULL);
}

static void test_rmsnorm(zs_kernels *k, int N, int C, float eps) {
  size_t n = (size_t)N * C;
  float *x = kt_rand(n, -2, 2), *w = kt_rand((size_t)C, 0.5f, 1.5f), *out = kt_floats(n);
  float *rrms = kt_floats((size_t)N);
  ZS_OK_OR_DIE(zs_k_rmsnorm_fwd(k, out, rrms, x, w, eps, N, C));
  rn_ctx a = {N, C, eps, kt_widen(x, n), kt_widen(w, (size_t)C), NULL};
  double *wo = kt_doubles(n), *wr = kt_doubles((size_t)N);
  rn_forward(&a, wo, wr);
  char what[80];
  snprintf(what, sizeof what, "rmsnorm fwd out N=%d C=%d", N, C);
  kt_check_fwd(what, out, wo, n);
  snprintf(what, sizeof what, "rmsnorm fwd rrms N=%d C=%d", N, C);
  kt_check_fwd(what, rrms, wr, (size_t)N);
  /* In place (out == inp) gives the same bits. */
  float *xi = kt_copy(x, n);
  ZS_OK_OR_DIE(zs_k_rmsnorm_fwd(k, xi, rrms, xi, w, eps, N, C));
  ZS_EXPECT(memcmp(xi, out, n * sizeof(float)) == 0, "rmsnorm in place differs");

  float *dout = kt_rand(n, -1, 1), *dx = kt_rand(n, -1, 1), *dw = kt_rand((size_t)C, -1, 1);
  float *px = kt_copy(dx, n), *pw = kt_copy(dw, (size_t)C);
  ZS_OK_OR_DIE(zs_k_rmsnorm_bwd(k, dx, dw, dout, x, w, rrms, N, C));
  a.dout = kt_widen(dout, n);
  snprintf(what, sizeof what, "rmsnorm dinp N=%d C=%d", N, C);
  kt_check_grad(what, rn_loss, &a, a.x, n, dx, px, NULL, 0);
  snprintf(what, sizeof what, "rmsnorm dw N=%d C=%d", N, C);
  kt_check_grad(what, rn_loss, &a, a.w, (size_t)C, dw, pw, NULL, 0);
  free(x), free(w), free(out), free(rrms), free(a.x), free(a.w), free(a.dout), free(wo), free(wr);
  free(xi), free(dout), free(dx), free(dw), free(px), free(pw);
}

/* ---- rotary tables ---- */

#define TWO_PI 6.283185307179586

/* float64 inverse frequencies: theta^(-2i/D), then (llama3 != NULL) HF's Llama-3 rule from its
   description: wavelength 2 pi / f; longer than original / low_freq_factor -> f / factor;
   shorter than original / high_freq_factor -> f; in between (1 - s) f / factor + s f with
   s = (original / wavelength - low) / (high - low). */
static double ref_inv_freq(int i, int D, double theta, const zs_k_rope_llama3 *l3) {
  double f = pow(theta, -2.0 * i / D);
  if (!l3) return f;
  double wl = TWO_PI / f, old = l3->original_max_position_embeddings;
  if (wl > old / l3->low_freq_factor) return f / l3->factor;
  if (wl < old / l3->high_freq_factor) return f;
  double s = (old / wl - l3->low_freq_factor) / (l3->high_freq_factor - l3->low_freq_factor);
  return (1.0 - s) * f / l3->factor + s * f;
}

/* The tables against float64 cos/sin of t * inv_freq. Tolerance, argued: the kernel computes as
   HF does in fp32 (the exponent 2i/D rounded: a relative error of inv_freq up to ln(theta) 2^-24;
   powf, the reciprocal and the product t * f: ~3 more roundings of 2^-24), so the angle is off by
   at most (ln(theta) + 4) 2^-24 |angle|; cos and sin are 1-Lipschitz and rounded once more. */
static void check_table(const char *what, int T, int D, double theta, const zs_k_rope_llama3 *l3) {
  int half = D / 2;
  float *c = kt_floats((size_t)T * half), *s = kt_floats((size_t)T * half);
  ZS_OK_OR_DIE(zs_k_rope_table(c, s, T, D, theta, l3));
  double worst = 0.0;
  int ok = 1;
  for (int t = 0; t < T; t++)
    for (int i = 0; i < half; i++) {
      double ang = t * ref_inv_freq(i, D, theta, l3);
      double tol = (log(theta) + 4.0) * 0x1p-24 * ang + 0x1p-24;
      double e = fmax(fabs(c[t * half + i] - cos(ang)), fabs(s[t * half + i] - sin(ang))) / tol;
      if (!(e <= 1.0)) ok = 0;
      worst = fmax(worst, e);
    }
  ZS_EXPECT(ok, "%s: worst error / tolerance %.3g > 1", what, worst);
  free(c), free(s);
}

/* Default and Llama-3 tables; the Llama-3 case is chosen so that its 8 frequencies cover all
   three bands (original 64, wavelengths 6.3 | 32 | 167 .. : high, medium, low), and the bands'
   effect is checked directly too: high unchanged, low divided by factor. */
static void test_rope_table(void) {
  check_table("rope table theta 1e4 D 8", 40, 8, 10000.0, NULL);
  check_table("rope table theta 1e6 D 64", 33, 64, 1e6, NULL);
  zs_k_rope_llama3 l3 = {8.0, 1.0, 4.0, 64};
  check_table("rope table llama3 theta 5e5 D 16", 50, 16, 500000.0, &l3);
  int T = 3, D = 16, half = D / 2;
  float *c0 = kt_floats((size_t)T * half), *s0 = kt_floats((size_t)T * half);
  float *c1 = kt_floats((size_t)T * half), *s1 = kt_floats((size_t)T * half);
  ZS_OK_OR_DIE(zs_k_rope_table(c0, s0, T, D, 500000.0, NULL));
  ZS_OK_OR_DIE(zs_k_rope_table(c1, s1, T, D, 500000.0, &l3));
  /* position 1: the angle is the frequency itself */
  ZS_EXPECT(s1[half + 0] == s0[half + 0], "llama3: the highest frequency must be unchanged");
  double a0 = asin((double)s0[half + 7]), a1 = asin((double)s1[half + 7]);
  ZS_EXPECT(fabs(a1 * 8.0 - a0) <= 1e-6 * a0, "llama3: the lowest frequency must be / 8: %g vs %g",
            a1 * 8.0, a0);
  double m0 = asin((double)s0[half + 1]), m1 = asin((double)s1[half + 1]);
  ZS_EXPECT(m1 < m0 && m1 > m0 / 8.0, "llama3: a medium frequency must lie between f/8 and f");
  free(c0), free(s0), free(c1), free(s1);
}

/* ---- rotation ---- */

typedef struct {
  int B, T, H, D;
  const double *c, *s; /* the kernel's tables, widened */
  double *x, *dout;
} rp_ctx;

/* float64 HF apply_rotary_pos_emb: x * cos + rotate_half(x) * sin with cos/sin duplicated over
   both halves and rotate_half([x1, x2]) = [-x2, x1]. */
static double rp_forward(const rp_ctx *a, double *out) {
  int D = a->D, half = D / 2;
  double L = 0.0;
  for (int b = 0; b < a->B; b++)
    for (int t = 0; t < a->T; t++)
      for (int h = 0; h < a->H; h++) {
        size_t o = (((size_t)b * a->T + t) * a->H + h) * D;
        for (int d = 0; d < D; d++) {
          double cs = a->c[t * half + d % half], sn = a->s[t * half + d % half];
          double rot = d < half ? -a->x[o + d + half] : a->x[o + d - half];
          double y = a->x[o + d] * cs + rot * sn;
          if (out) out[o + d] = y;
          if (a->dout) L += a->dout[o + d] * y;
        }
      }
  return L;
}
static double rp_loss(void *p) {
  return rp_forward(p, NULL);
}

static void test_rope(zs_kernels *k, int B, int T, int H, int D) {
  int half = D / 2;
  size_t n = (size_t)B * T * H * D, nt = (size_t)T * half;
  float *c = kt_floats(nt), *s = kt_floats(nt);
  ZS_OK_OR_DIE(zs_k_rope_table(c, s, T, D, 10000.0, NULL));
  float *x = kt_rand(n, -2, 2), *out = kt_floats(n);
  ZS_OK_OR_DIE(zs_k_rope_fwd(k, out, x, c, s, B, T, H, D));
  double *wc = kt_widen(c, nt), *ws = kt_widen(s, nt);
  rp_ctx a = {B, T, H, D, wc, ws, kt_widen(x, n), NULL};
  double *wo = kt_doubles(n);
  rp_forward(&a, wo);
  char what[80];
  snprintf(what, sizeof what, "rope fwd B=%d T=%d H=%d D=%d", B, T, H, D);
  kt_check_fwd(what, out, wo, n);
  float *xi = kt_copy(x, n);
  ZS_OK_OR_DIE(zs_k_rope_fwd(k, xi, xi, c, s, B, T, H, D));
  ZS_EXPECT(memcmp(xi, out, n * sizeof(float)) == 0, "rope in place differs");

  float *dout = kt_rand(n, -1, 1), *dx = kt_rand(n, -1, 1), *px = kt_copy(dx, n);
  ZS_OK_OR_DIE(zs_k_rope_bwd(k, dx, dout, c, s, B, T, H, D));
  a.dout = kt_widen(dout, n);
  snprintf(what, sizeof what, "rope dinp B=%d T=%d H=%d D=%d", B, T, H, D);
  kt_check_grad(what, rp_loss, &a, a.x, n, dx, px, NULL, 0);
  free(c), free(s), free(x), free(out), free(wc), free(ws), free(a.x), free(a.dout), free(wo);
  free(xi), free(dout), free(dx), free(px);
}

/* ---- SwiGLU ---- */

typedef struct {
  size_t n;
  double *g, *u, *dout;
} sg_ctx;

/* float64 silu(g) * u = g / (1 + exp(-g)) * u. */
static double sg_forward(const sg_ctx *a, double *out) {
  double L = 0.0;
  for (size_t i = 0; i < a->n; i++) {
    double y = a->g[i] / (1.0 + exp(-a->g[i])) * a->u[i];
    if (out) out[i] = y;
    if (a->dout) L += a->dout[i] * y;
  }
  return L;
}
static double sg_loss(void *p) {
  return sg_forward(p, NULL);
}

static void test_swiglu(zs_kernels *k, size_t n) {
  float *g = kt_rand(n, -6, 6), *u = kt_rand(n, -2, 2), *out = kt_floats(n);
  ZS_OK_OR_DIE(zs_k_swiglu_fwd(k, out, g, u, n));
  sg_ctx a = {n, kt_widen(g, n), kt_widen(u, n), NULL};
  double *wo = kt_doubles(n);
  sg_forward(&a, wo);
  kt_check_fwd("swiglu fwd", out, wo, n);
  float *gi = kt_copy(g, n);
  ZS_OK_OR_DIE(zs_k_swiglu_fwd(k, gi, gi, u, n));
  ZS_EXPECT(memcmp(gi, out, n * sizeof(float)) == 0, "swiglu in place (out == gate) differs");

  float *dout = kt_rand(n, -1, 1), *dg = kt_rand(n, -1, 1), *du = kt_rand(n, -1, 1);
  float *pg = kt_copy(dg, n), *pu = kt_copy(du, n);
  ZS_OK_OR_DIE(zs_k_swiglu_bwd(k, dg, du, dout, g, u, n));
  a.dout = kt_widen(dout, n);
  kt_check_grad("swiglu dgate", sg_loss, &a, a.g, n, dg, pg, NULL, 0);
  kt_check_grad("swiglu dup", sg_loss, &a, a.u, n, du, pu, NULL, 0);
  free(g), free(u), free(out), free(a.g), free(a.u), free(a.dout), free(wo), free(gi), free(dout);
  free(dg), free(du), free(pg), free(pu);
}

int main(void) {
  zs_kernels *k = kt_cpu();
  test_embedding(k);
  test_rmsnorm(k, 5, 16, 1e-5f);
  test_rmsnorm(k, 3, 7, 1e-6f); /* odd C */
  test_rmsnorm(k, 2, 3, 1e-2f); /* large eps: its term in the gradient matters */
  test_rope_table();
  test_rope(k, 2, 5, 3, 8);
  test_rope(k, 1, 4, 2, 2);  /* D = 2: one pair */
  test_rope(k, 2, 3, 1, 12); /* one (kv) head */
  test_swiglu(k, 257);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_llama");
}
