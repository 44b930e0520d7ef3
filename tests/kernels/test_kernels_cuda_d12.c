/* The CUDA GPT-2 kernels at GPT-2 d12's real sizes against their CPU twins (fp32 reference), in
 * fp32 and bf16: B = 1 sequence of T = 1024 tokens (N = 1024 rows), C = 768, NH = 12 heads of 64,
 * the MLP's 4C = 3072, V = 50257 padded to Vp = 50304 for the tied LM head and the loss. Every
 * kernel of one block's forward and backward and of the head runs once per dtype on the same
 * inputs (rounded to the CUDA dtype) on both devices; gradients accumulate (+=) into the same
 * random starting values on both.
 *
 * Comparison: one relative error norm per output array (never a maximum over bf16 elements):
 *   |got - ref|_2  <=  tol * |ref - start|_2  +  u * |ref|_2
 * where start is the accumulator's starting value (0 for a written output), |ref|_2 runs over the
 * elements the kernel changed (an accumulator row it does not touch, e.g. most of dwte, keeps
 * its exact bf16 value), and u is the storage rounding of the CUDA output: 2^-8 for bf16 (twice
 * the largest relative rounding of a stored bf16, 2^-9: an array's rounding error is at most
 * 2^-9 of its norm), 0 for fp32. tol:
 *  - fp32: the twins add the same products in another order (cuBLASLt tiles vs OpenBLAS,
 *    warp trees vs sequential loops). A sum of K terms in another order differs by ~sqrt(K) *
 *    2^-24 relative: 1.7e-6 at K = 768, 3.3e-6 at 3072, 1.3e-5 at V = 50304. Bounds: 2e-5 for
 *    K <= 4C (about 6x), 5e-5 for the head's backward and the loss over V (about 4x); 1e-5 for
 *    elementwise kernels and the encoder (exact sums in the CPU's order: bit for bit by design).
 *  - bf16: inputs are the same bf16 values on both sides and the CUDA kernels compute in fp32,
 *    so beyond the output's rounding (the u term) only the fp32 order differs, plus any bf16
 *    intermediate a kernel stores (attention's tensor-core path rounds P and dS to bf16 for its
 *    products; in a norm these add ~2^-9 / sqrt(terms), a tile-level emulation measured 0.29 of
 *    the bound at these sizes): tol 1e-2 covers both with a wide margin while a wrong index, a
 *    missing term or a wrong scale is off by O(1e-1) or more. fp32
 *    outputs of bf16 inputs (layernorm mean/rstd, attention lse, the losses) keep fp32 bounds.
 * Every check prints its measured ratio so the margins can be read off a GPU run. Without a GPU:
 * prints "SKIP: no CUDA device" and passes. */
#include "test_kernels_cuda_util.h"

#define B_ 1
#define T_ 1024
#define C_ 768
#define NH_ 12
#define V_ 50257
#define VP_ 50304
#define N_ (B_ * T_)

static zs_kernels *kc, *kg; /* CPU reference, CUDA under test */

/* The comparison above; start NULL: a written output. */
static void check(const char *what, const void *dev, zs_dtype dt, const float *ref,
                  const float *start, size_t n, double tol) {
  float *got = malloc(n * sizeof *got);
  if (!got) exit(1);
  kt_download(got, dev, n, dt);
  double e2 = 0, d2 = 0, r2 = 0;
  size_t nonfinite = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(got[i]) && isfinite(ref[i])) nonfinite++;
    const double e = (double)got[i] - ref[i], d = (double)ref[i] - (start ? start[i] : 0.0f);
    e2 += e * e;
    d2 += d * d;
    if (d != 0.0) r2 += (double)ref[i] * ref[i]; /* untouched accumulator elements: no rounding */
  }
  const double u = dt == ZS_BF16 ? 1.0 / 256.0 : 0.0;
  const double err = sqrt(e2), bound = tol * sqrt(d2) + u * sqrt(r2);
  const int ok = nonfinite == 0 && err <= bound && isfinite(err);
  printf("%s %-5s %-26s |err| / |ref - start| = %.3g, err / bound = %.3g\n", ok ? "ok  " : "FAIL",
         dt == ZS_BF16 ? "bf16" : "fp32", what, d2 > 0 ? err / sqrt(d2) : err,
         bound > 0 ? err / bound : err);
  ZS_EXPECT(ok, "%s (%s): |got - ref| = %.6g > bound %.6g (tol %.3g, %zu non-finite)", what,
            dt == ZS_BF16 ? "bf16" : "fp32", err, bound, tol, nonfinite);
  free(got);
}

/* A copy of n host floats (the accumulators' starting values). */
static float *fdup(const float *h, size_t n) {
  float *c = malloc(n * sizeof *c);
  if (!c) exit(1);
  memcpy(c, h, n * sizeof *c);
  return c;
}

static double ftol(zs_dtype dt, double f32) {
  return dt == ZS_BF16 ? 1e-2 : f32;
}

static void d12_encoder(zs_dtype dt) {
  const size_t n = (size_t)N_ * C_, nw = (size_t)VP_ * C_, np = (size_t)T_ * C_;
  int *tok = malloc(N_ * sizeof *tok), *dtok;
  for (int i = 0; i < N_; i++)
    tok[i] = (int)(kt_u01() * V_) % V_;
  tok[1] = tok[0]; /* repeated tokens: the backward sums their rows */
  tok[N_ - 1] = tok[0];
  float *wte = kt_rand(nw, -1, 1, dt), *wpe = kt_rand(np, -1, 1, dt), *out = malloc(n * 4);
  float *dout = kt_rand(n, -1, 1, dt), *dwte = kt_rand(nw, -1, 1, dt);
  float *dwpe = kt_rand(np, -1, 1, dt), *dwte0 = fdup(dwte, nw), *dwpe0 = fdup(dwpe, np);
  CU_OK(cudaMalloc((void **)&dtok, N_ * sizeof *dtok));
  CU_OK(cudaMemcpy(dtok, tok, N_ * sizeof *tok, cudaMemcpyHostToDevice));
  void *d_wte = kt_upload(wte, nw, dt), *d_wpe = kt_upload(wpe, np, dt), *d_out = kt_dev_nan(n, dt);
  void *d_dout = kt_upload(dout, n, dt), *d_dwte = kt_upload(dwte, nw, dt);
  void *d_dwpe = kt_upload(dwpe, np, dt);
  ZS_OK_OR_DIE(zs_k_encoder_fwd(kc, out, tok, wte, wpe, B_, T_, C_));
  ZS_OK_OR_DIE(zs_k_encoder_fwd(kg, d_out, dtok, d_wte, d_wpe, B_, T_, C_));
  check("encoder out", d_out, dt, out, NULL, n, ftol(dt, 1e-5));
  ZS_OK_OR_DIE(zs_k_encoder_bwd(kc, dwte, dwpe, dout, tok, B_, T_, C_));
  ZS_OK_OR_DIE(zs_k_encoder_bwd(kg, d_dwte, d_dwpe, d_dout, dtok, B_, T_, C_));
  check("encoder dwte", d_dwte, dt, dwte, dwte0, nw, ftol(dt, 1e-5));
  check("encoder dwpe", d_dwpe, dt, dwpe, dwpe0, np, ftol(dt, 1e-5));
  cudaFree(dtok), cudaFree(d_wte), cudaFree(d_wpe), cudaFree(d_out), cudaFree(d_dout);
  cudaFree(d_dwte), cudaFree(d_dwpe);
  free(tok), free(wte), free(wpe), free(out), free(dout), free(dwte), free(dwpe), free(dwte0);
  free(dwpe0);
}

static void d12_layernorm(zs_dtype dt) {
  const size_t n = (size_t)N_ * C_;
  float *inp = kt_rand(n, -2, 3, dt), *w = kt_rand(C_, 0.5f, 1.5f, dt), *b = kt_rand(C_, -1, 1, dt);
  float *out = malloc(n * 4), *mean = malloc(N_ * 4), *rstd = malloc(N_ * 4);
  float *dout = kt_rand(n, -1, 1, dt), *dinp = kt_rand(n, -1, 1, dt);
  float *dw = kt_rand(C_, -1, 1, dt), *db = kt_rand(C_, -1, 1, dt);
  float *dinp0 = fdup(dinp, n), *dw0 = fdup(dw, C_), *db0 = fdup(db, C_);
  void *d_inp = kt_upload(inp, n, dt), *d_w = kt_upload(w, C_, dt), *d_b = kt_upload(b, C_, dt);
  void *d_out = kt_dev_nan(n, dt), *d_mean = kt_dev_nan(N_, ZS_F32),
       *d_rstd = kt_dev_nan(N_, ZS_F32);
  void *d_dout = kt_upload(dout, n, dt), *d_dinp = kt_upload(dinp, n, dt);
  void *d_dw = kt_upload(dw, C_, dt), *d_db = kt_upload(db, C_, dt);
  ZS_OK_OR_DIE(zs_k_layernorm_fwd(kc, out, mean, rstd, inp, w, b, N_, C_));
  ZS_OK_OR_DIE(zs_k_layernorm_fwd(kg, d_out, d_mean, d_rstd, d_inp, d_w, d_b, N_, C_));
  check("layernorm out", d_out, dt, out, NULL, n, ftol(dt, 1e-5));
  check("layernorm mean", d_mean, ZS_F32, mean, NULL, N_, 1e-5);
  check("layernorm rstd", d_rstd, ZS_F32, rstd, NULL, N_, 1e-5);
  /* The backward from the CPU's statistics on both sides: only the backward differs. */
  CU_OK(cudaMemcpy(d_mean, mean, N_ * 4, cudaMemcpyHostToDevice));
  CU_OK(cudaMemcpy(d_rstd, rstd, N_ * 4, cudaMemcpyHostToDevice));
  ZS_OK_OR_DIE(zs_k_layernorm_bwd(kc, dinp, dw, db, dout, inp, w, mean, rstd, N_, C_));
  ZS_OK_OR_DIE(
      zs_k_layernorm_bwd(kg, d_dinp, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, N_, C_));
  check("layernorm dinp", d_dinp, dt, dinp, dinp0, n, ftol(dt, 2e-5));
  check("layernorm dw", d_dw, dt, dw, dw0, C_, ftol(dt, 2e-5));
  check("layernorm db", d_db, dt, db, db0, C_, ftol(dt, 2e-5));
  cudaFree(d_inp), cudaFree(d_w), cudaFree(d_b), cudaFree(d_out), cudaFree(d_mean);
  cudaFree(d_rstd), cudaFree(d_dout), cudaFree(d_dinp), cudaFree(d_dw), cudaFree(d_db);
  free(inp), free(w), free(b), free(out), free(mean), free(rstd), free(dout), free(dinp);
  free(dw), free(db), free(dinp0), free(dw0), free(db0);
}

/* out[N, OC] = inp[N, C] w[OC, C]^T (+ bias) and its backward; tol is the fp32 bound. */
static void d12_matmul(zs_dtype dt, const char *name, int C, int OC, int with_bias, double tol) {
  const size_t ni = (size_t)N_ * C, no = (size_t)N_ * OC, nw = (size_t)OC * C;
  const float ws = 1.0f / sqrtf((float)C); /* GPT-2-like scale: outputs of order 1 */
  float *inp = kt_rand(ni, -1, 1, dt), *w = kt_rand(nw, -ws, ws, dt),
        *bias = kt_rand(OC, -1, 1, dt);
  float *out = malloc(no * 4), *dout = kt_rand(no, -1, 1, dt), *dinp = kt_rand(ni, -1, 1, dt);
  float *dw = kt_rand(nw, -1, 1, dt), *dbias = kt_rand(OC, -1, 1, dt);
  float *dinp0 = fdup(dinp, ni), *dw0 = fdup(dw, nw), *dbias0 = fdup(dbias, OC);
  if (!out) exit(1);
  void *d_inp = kt_upload(inp, ni, dt), *d_w = kt_upload(w, nw, dt),
       *d_bias = kt_upload(bias, OC, dt);
  void *d_out = kt_dev_nan(no, dt), *d_dout = kt_upload(dout, no, dt);
  void *d_dinp = kt_upload(dinp, ni, dt), *d_dw = kt_upload(dw, nw, dt);
  void *d_dbias = kt_upload(dbias, OC, dt);
  char what[64];
  ZS_OK_OR_DIE(zs_k_matmul_fwd(kc, out, inp, w, with_bias ? bias : NULL, N_, C, OC));
  ZS_OK_OR_DIE(zs_k_matmul_fwd(kg, d_out, d_inp, d_w, with_bias ? d_bias : NULL, N_, C, OC));
  snprintf(what, sizeof what, "%s out", name);
  check(what, d_out, dt, out, NULL, no, ftol(dt, tol));
  ZS_OK_OR_DIE(zs_k_matmul_bwd(kc, dinp, dw, with_bias ? dbias : NULL, dout, inp, w, N_, C, OC));
  ZS_OK_OR_DIE(
      zs_k_matmul_bwd(kg, d_dinp, d_dw, with_bias ? d_dbias : NULL, d_dout, d_inp, d_w, N_, C, OC));
  snprintf(what, sizeof what, "%s dinp", name);
  check(what, d_dinp, dt, dinp, dinp0, ni, ftol(dt, tol));
  snprintf(what, sizeof what, "%s dw", name);
  check(what, d_dw, dt, dw, dw0, nw, ftol(dt, tol));
  if (with_bias) {
    snprintf(what, sizeof what, "%s dbias", name);
    check(what, d_dbias, dt, dbias, dbias0, OC, ftol(dt, tol));
  }
  cudaFree(d_inp), cudaFree(d_w), cudaFree(d_bias), cudaFree(d_out), cudaFree(d_dout);
  cudaFree(d_dinp), cudaFree(d_dw), cudaFree(d_dbias);
  free(inp), free(w), free(bias), free(out), free(dout), free(dinp), free(dw), free(dbias);
  free(dinp0), free(dw0), free(dbias0);
}

static void d12_attention(zs_dtype dt) {
  const size_t nq = (size_t)N_ * 3 * C_, no = (size_t)N_ * C_, nl = (size_t)B_ * NH_ * T_;
  float *qkv = kt_rand(nq, -2, 2, dt), *out = malloc(no * 4), *lse = malloc(nl * 4);
  float *dout = kt_rand(no, -1, 1, dt), *dqkv = kt_rand(nq, -1, 1, dt), *dqkv0 = fdup(dqkv, nq);
  void *d_qkv = kt_upload(qkv, nq, dt), *d_out = kt_dev_nan(no, dt),
       *d_lse = kt_dev_nan(nl, ZS_F32);
  ZS_OK_OR_DIE(zs_k_attention_fwd(kc, out, lse, qkv, B_, T_, C_, NH_));
  ZS_OK_OR_DIE(zs_k_attention_fwd(kg, d_out, d_lse, d_qkv, B_, T_, C_, NH_));
  check("attention out", d_out, dt, out, NULL, no, ftol(dt, 2e-5));
  check("attention lse", d_lse, ZS_F32, lse, NULL, nl, 2e-5);
  /* The backward on identical inputs: the CPU's out (rounded to dt) and lse on both sides. */
  for (size_t i = 0; i < no; i++)
    out[i] = kt_round(dt, out[i]);
  void *d_out2 = kt_upload(out, no, dt), *d_dout = kt_upload(dout, no, dt);
  void *d_dqkv = kt_upload(dqkv, nq, dt);
  CU_OK(cudaMemcpy(d_lse, lse, nl * 4, cudaMemcpyHostToDevice));
  ZS_OK_OR_DIE(zs_k_attention_bwd(kc, dqkv, dout, qkv, out, lse, B_, T_, C_, NH_));
  ZS_OK_OR_DIE(zs_k_attention_bwd(kg, d_dqkv, d_dout, d_qkv, d_out2, d_lse, B_, T_, C_, NH_));
  check("attention dqkv", d_dqkv, dt, dqkv, dqkv0, nq, ftol(dt, 2e-5));
  cudaFree(d_qkv), cudaFree(d_out), cudaFree(d_lse), cudaFree(d_out2), cudaFree(d_dout);
  cudaFree(d_dqkv);
  free(qkv), free(out), free(lse), free(dout), free(dqkv), free(dqkv0);
}

/* GELU over the MLP's N x 4C activations, the residual adds over N x C. */
static void d12_elementwise(zs_dtype dt) {
  const size_t n4 = (size_t)N_ * 4 * C_, n = (size_t)N_ * C_;
  float *x = kt_rand(n4, -4, 4, dt), *dout = kt_rand(n4, -1, 1, dt), *out = malloc(n4 * 4);
  float *dx = kt_rand(n4, -1, 1, dt), *dx0 = fdup(dx, n4);
  void *d_x = kt_upload(x, n4, dt), *d_dout = kt_upload(dout, n4, dt), *d_out = kt_dev_nan(n4, dt);
  void *d_dx = kt_upload(dx, n4, dt);
  ZS_OK_OR_DIE(zs_k_gelu_fwd(kc, out, x, n4));
  ZS_OK_OR_DIE(zs_k_gelu_fwd(kg, d_out, d_x, n4));
  check("gelu out", d_out, dt, out, NULL, n4, ftol(dt, 1e-5));
  ZS_OK_OR_DIE(zs_k_gelu_bwd(kc, dx, x, dout, n4));
  ZS_OK_OR_DIE(zs_k_gelu_bwd(kg, d_dx, d_x, d_dout, n4));
  check("gelu dinp", d_dx, dt, dx, dx0, n4, ftol(dt, 1e-5));
  float *a = kt_rand(n, -1, 1, dt), *b = kt_rand(n, -1, 1, dt), *da = kt_rand(n, -1, 1, dt);
  float *db = kt_rand(n, -1, 1, dt), *da0 = fdup(da, n), *db0 = fdup(db, n);
  void *d_a = kt_upload(a, n, dt), *d_b = kt_upload(b, n, dt), *d_r = kt_dev_nan(n, dt);
  void *d_da = kt_upload(da, n, dt), *d_db = kt_upload(db, n, dt);
  ZS_OK_OR_DIE(zs_k_residual_fwd(kc, out, a, b, n));
  ZS_OK_OR_DIE(zs_k_residual_fwd(kg, d_r, d_a, d_b, n));
  check("residual out", d_r, dt, out, NULL, n, ftol(dt, 1e-5));
  ZS_OK_OR_DIE(zs_k_residual_bwd(kc, da, db, dout, n));
  ZS_OK_OR_DIE(zs_k_residual_bwd(kg, d_da, d_db, d_dout, n));
  check("residual da", d_da, dt, da, da0, n, ftol(dt, 1e-5));
  check("residual db", d_db, dt, db, db0, n, ftol(dt, 1e-5));
  cudaFree(d_x), cudaFree(d_dout), cudaFree(d_out), cudaFree(d_dx), cudaFree(d_a), cudaFree(d_b);
  cudaFree(d_r), cudaFree(d_da), cudaFree(d_db);
  free(x), free(dout), free(out), free(dx), free(dx0), free(a), free(b), free(da), free(db);
  free(da0), free(db0);
}

/* The loss over the padded vocabulary, dlogits in place (as train_gpt2 calls it). */
static void d12_xent(zs_dtype dt) {
  const size_t n = (size_t)N_ * VP_;
  float *logits = kt_rand(n, -6, 6, dt), *losses = malloc(N_ * 4), *dl = fdup(logits, n);
  int *tgt = malloc(N_ * sizeof *tgt), *d_tgt;
  for (int i = 0; i < N_; i++)
    tgt[i] = (int)(kt_u01() * V_) % V_;
  tgt[0] = V_ - 1; /* the last real column */
  CU_OK(cudaMalloc((void **)&d_tgt, N_ * sizeof *d_tgt));
  CU_OK(cudaMemcpy(d_tgt, tgt, N_ * sizeof *tgt, cudaMemcpyHostToDevice));
  void *d_logits = kt_upload(logits, n, dt), *d_losses = kt_dev_nan(N_, ZS_F32);
  const float dloss = 1.0f / (float)N_;
  ZS_OK_OR_DIE(zs_k_softmax_xent(kc, losses, dl, dl, tgt, dloss, N_, V_, VP_));
  ZS_OK_OR_DIE(zs_k_softmax_xent(kg, d_losses, d_logits, d_logits, d_tgt, dloss, N_, V_, VP_));
  check("softmax_xent losses", d_losses, ZS_F32, losses, NULL, N_, 5e-5);
  /* Whole rows: the padded columns' dlogits must be zero on both sides. */
  check("softmax_xent dlogits", d_logits, dt, dl, NULL, n, ftol(dt, 5e-5));
  cudaFree(d_tgt), cudaFree(d_logits), cudaFree(d_losses);
  free(logits), free(losses), free(dl), free(tgt);
}

static void run_all(zs_dtype dt) {
  printf("dtype %s: B=%d T=%d C=%d NH=%d V=%d (padded %d)\n", dt == ZS_BF16 ? "bf16" : "fp32", B_,
         T_, C_, NH_, V_, VP_);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, dt, NULL, &kg));
  d12_encoder(dt);
  d12_layernorm(dt);
  d12_matmul(dt, "qkv (C->3C)", C_, 3 * C_, 1, 2e-5);
  d12_matmul(dt, "attn proj (C->C)", C_, C_, 1, 2e-5);
  d12_matmul(dt, "fc (C->4C)", C_, 4 * C_, 1, 2e-5);
  d12_matmul(dt, "fc proj (4C->C)", 4 * C_, C_, 1, 2e-5);
  d12_matmul(dt, "lm head (C->Vp)", C_, VP_, 0, 5e-5);
  d12_attention(dt);
  d12_elementwise(dt);
  d12_xent(dt);
  zs_k_destroy(kg);
  kg = NULL;
}

int main(void) {
  if (!kt_have_device()) return 0;
  kt_seed("test_kernels_cuda_d12");
  setenv("ZS_CUDA_ATTN", "tc", 1); /* bf16 attention (hs 64) must take the tensor cores */
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &kc));
  run_all(ZS_F32);
  run_all(ZS_BF16);
  zs_k_destroy(kc);
  if (!zs_test_failures) printf("test_kernels_cuda_d12: OK\n");
  ZS_TEST_END("test_kernels_cuda_d12");
}
