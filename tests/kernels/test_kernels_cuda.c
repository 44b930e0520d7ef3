/* CUDA GPT-2 layer kernels against the CPU reference, through the public zs_k_* API: one CPU
 * (fp32) and one CUDA (fp32, then bf16) kernel context get the same inputs (rounded to the CUDA
 * dtype), written outputs are NaN-poisoned on the device first, and accumulated gradients start
 * from the same random values on both sides. Sizes include odd ones and every head-size class
 * (hs <= 32, 64, 96, 128; attention: both of its paths and ragged tiles). The process runs under
 * ZS_CUDA_ATTN=tc, so a bf16 attention with hs % 16 == 0 that does not take the tensor cores
 * fails instead of passing on SIMT; the bf16 attention shapes then run again under simt.
 * Without a GPU: prints "SKIP: no CUDA device" and passes. */
#include "test_kernels_cuda_util.h"

static zs_kernels *kc, *kg; /* CPU reference, CUDA under test */

/* Device copy of a host array (inputs and += gradients). */
#define UP(h, n) kt_upload((h), (n), dt)

static void test_encoder(zs_dtype dt, int B, int T, int C, int V) {
  size_t n = (size_t)B * T * C;
  int *tok = malloc((size_t)B * T * sizeof *tok);
  for (int i = 0; i < B * T; i++)
    tok[i] = (int)(kt_u01() * V) % V;
  float *wte = kt_rand((size_t)V * C, -1, 1, dt), *wpe = kt_rand((size_t)T * C, -1, 1, dt);
  float *out = malloc(n * sizeof *out), *dout = kt_rand(n, -1, 1, dt);
  float *dwte = kt_rand((size_t)V * C, -1, 1, dt), *dwpe = kt_rand((size_t)T * C, -1, 1, dt);
  int *dtok;
  CU_OK(cudaMalloc((void **)&dtok, (size_t)B * T * sizeof *dtok));
  CU_OK(cudaMemcpy(dtok, tok, (size_t)B * T * sizeof *tok, cudaMemcpyHostToDevice));
  void *d_wte = UP(wte, (size_t)V * C), *d_wpe = UP(wpe, (size_t)T * C), *d_out = kt_dev_nan(n, dt);
  void *d_dout = UP(dout, n), *d_dwte = UP(dwte, (size_t)V * C), *d_dwpe = UP(dwpe, (size_t)T * C);
  ZS_OK_OR_DIE(zs_k_encoder_fwd(kc, out, tok, wte, wpe, B, T, C));
  ZS_OK_OR_DIE(zs_k_encoder_fwd(kg, d_out, dtok, d_wte, d_wpe, B, T, C));
  ZS_OK_OR_DIE(zs_k_encoder_bwd(kc, dwte, dwpe, dout, tok, B, T, C));
  ZS_OK_OR_DIE(zs_k_encoder_bwd(kg, d_dwte, d_dwpe, d_dout, dtok, B, T, C));
  kt_compare("encoder out", d_out, dt, out, n, kt_tol(dt, 1e-6));
  kt_compare("encoder dwte", d_dwte, dt, dwte, (size_t)V * C, kt_tol(dt, 1e-6));
  kt_compare("encoder dwpe", d_dwpe, dt, dwpe, (size_t)T * C, kt_tol(dt, 1e-6));
  cudaFree(dtok), cudaFree(d_wte), cudaFree(d_wpe), cudaFree(d_out), cudaFree(d_dout);
  cudaFree(d_dwte), cudaFree(d_dwpe);
  free(tok), free(wte), free(wpe), free(out), free(dout), free(dwte), free(dwpe);
}

static void test_layernorm(zs_dtype dt, int N, int C) {
  size_t n = (size_t)N * C;
  float *inp = kt_rand(n, -2, 3, dt), *w = kt_rand(C, 0.5f, 1.5f, dt), *b = kt_rand(C, -1, 1, dt);
  float *out = malloc(n * 4), *mean = malloc(N * 4), *rstd = malloc(N * 4);
  float *dout = kt_rand(n, -1, 1, dt), *dinp = kt_rand(n, -1, 1, dt);
  float *dw = kt_rand(C, -1, 1, dt), *db = kt_rand(C, -1, 1, dt);
  void *d_inp = UP(inp, n), *d_w = UP(w, C), *d_b = UP(b, C), *d_out = kt_dev_nan(n, dt);
  void *d_mean = kt_dev_nan(N, ZS_F32), *d_rstd = kt_dev_nan(N, ZS_F32);
  void *d_dout = UP(dout, n), *d_dinp = UP(dinp, n), *d_dw = UP(dw, C), *d_db = UP(db, C);
  ZS_OK_OR_DIE(zs_k_layernorm_fwd(kc, out, mean, rstd, inp, w, b, N, C));
  ZS_OK_OR_DIE(zs_k_layernorm_fwd(kg, d_out, d_mean, d_rstd, d_inp, d_w, d_b, N, C));
  kt_compare("layernorm out", d_out, dt, out, n, kt_tol(dt, 2e-5));
  kt_compare("layernorm mean", d_mean, ZS_F32, mean, N, 2e-5);
  kt_compare("layernorm rstd", d_rstd, ZS_F32, rstd, N, 2e-5);
  /* Backward from the CPU's statistics on both sides, so only the backward itself differs. */
  CU_OK(cudaMemcpy(d_mean, mean, N * 4, cudaMemcpyHostToDevice));
  CU_OK(cudaMemcpy(d_rstd, rstd, N * 4, cudaMemcpyHostToDevice));
  ZS_OK_OR_DIE(zs_k_layernorm_bwd(kc, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
  ZS_OK_OR_DIE(
      zs_k_layernorm_bwd(kg, d_dinp, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, N, C));
  kt_compare("layernorm dinp", d_dinp, dt, dinp, n, kt_tol(dt, 2e-5));
  kt_compare("layernorm dw", d_dw, dt, dw, C, kt_tol(dt, 2e-5));
  kt_compare("layernorm db", d_db, dt, db, C, kt_tol(dt, 2e-5));
  cudaFree(d_inp), cudaFree(d_w), cudaFree(d_b), cudaFree(d_out), cudaFree(d_mean);
  cudaFree(d_rstd), cudaFree(d_dout), cudaFree(d_dinp), cudaFree(d_dw), cudaFree(d_db);
  free(inp), free(w), free(b), free(out), free(mean), free(rstd), free(dout), free(dinp), free(dw);
  free(db);
}

static void test_matmul(zs_dtype dt, int N, int C, int OC, int with_bias) {
  size_t ni = (size_t)N * C, no = (size_t)N * OC, nw = (size_t)OC * C;
  float *inp = kt_rand(ni, -1, 1, dt), *w = kt_rand(nw, -1, 1, dt), *bias = kt_rand(OC, -1, 1, dt);
  float *out = malloc(no * 4), *dout = kt_rand(no, -1, 1, dt), *dinp = kt_rand(ni, -1, 1, dt);
  float *dw = kt_rand(nw, -1, 1, dt), *dbias = kt_rand(OC, -1, 1, dt);
  void *d_inp = UP(inp, ni), *d_w = UP(w, nw), *d_bias = UP(bias, OC), *d_out = kt_dev_nan(no, dt);
  void *d_dout = UP(dout, no), *d_dinp = UP(dinp, ni), *d_dw = UP(dw, nw);
  void *d_dbias = UP(dbias, OC);
  ZS_OK_OR_DIE(zs_k_matmul_fwd(kc, out, inp, w, with_bias ? bias : NULL, N, C, OC));
  ZS_OK_OR_DIE(zs_k_matmul_fwd(kg, d_out, d_inp, d_w, with_bias ? d_bias : NULL, N, C, OC));
  ZS_OK_OR_DIE(zs_k_matmul_bwd(kc, dinp, dw, with_bias ? dbias : NULL, dout, inp, w, N, C, OC));
  ZS_OK_OR_DIE(
      zs_k_matmul_bwd(kg, d_dinp, d_dw, with_bias ? d_dbias : NULL, d_dout, d_inp, d_w, N, C, OC));
  kt_compare("matmul out", d_out, dt, out, no, kt_tol(dt, 2e-5));
  kt_compare("matmul dinp", d_dinp, dt, dinp, ni, kt_tol(dt, 2e-5));
  kt_compare("matmul dw", d_dw, dt, dw, nw, kt_tol(dt, 2e-5));
  kt_compare("matmul dbias", d_dbias, dt, dbias, OC, kt_tol(dt, 2e-5));
  cudaFree(d_inp), cudaFree(d_w), cudaFree(d_bias), cudaFree(d_out), cudaFree(d_dout);
  cudaFree(d_dinp), cudaFree(d_dw), cudaFree(d_dbias);
  free(inp), free(w), free(bias), free(out), free(dout), free(dinp), free(dw), free(dbias);
}

/* Attention's bf16 bound. The tensor-core path (bf16, hs a multiple of 16) rounds the softmax
   weights P and the score gradients dS to bf16 for its matrix products (2^-9 relative each), so
   an output element carries up to ~2^-9 max|v| of absolute error whatever its own size: for
   elements far below the array's rms (early rows of out, whose few weights do not average the
   values down; the last keys' dk, dv) that approaches 1e-2 of the rms floor. A tile-level
   emulation of the kernels measured worst ratios up to 0.94 of 1e-2 (Llama-3-8B heads, T 256;
   0.3 with fp32 P), so 2e-2 keeps a 2x margin; a wrong index, mask or scale is off by > 10%. */
static double at_tol(zs_dtype dt, double f32_tol) {
  return dt == ZS_BF16 ? 2e-2 : f32_tol;
}

/* Forward against the CPU, then the backward on identical inputs; the CUDA backward run twice
   from the same prefill must give the same bits (no atomics, a fixed order). */
static void test_attention(zs_dtype dt, int B, int T, int C, int NH) {
  size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
  float *qkv = kt_rand(nq, -2, 2, dt), *out = malloc(no * 4), *lse = malloc(nl * 4);
  float *dout = kt_rand(no, -1, 1, dt), *dqkv = kt_rand(nq, -1, 1, dt);
  void *d_qkv = UP(qkv, nq), *d_out = kt_dev_nan(no, dt), *d_lse = kt_dev_nan(nl, ZS_F32);
  ZS_OK_OR_DIE(zs_k_attention_fwd(kc, out, lse, qkv, B, T, C, NH));
  ZS_OK_OR_DIE(zs_k_attention_fwd(kg, d_out, d_lse, d_qkv, B, T, C, NH));
  char what[96];
  snprintf(what, sizeof what, "attention out B=%d T=%d C=%d NH=%d", B, T, C, NH);
  kt_compare(what, d_out, dt, out, no, at_tol(dt, 2e-5));
  snprintf(what, sizeof what, "attention lse B=%d T=%d C=%d NH=%d", B, T, C, NH);
  kt_compare(what, d_lse, ZS_F32, lse, nl, 2e-5);
  /* Backward on identical inputs: the CPU's out (rounded to dt) and lse on both sides. */
  for (size_t i = 0; i < no; i++)
    out[i] = kt_round(dt, out[i]);
  void *d_out2 = UP(out, no), *d_dout = UP(dout, no), *d_dqkv = UP(dqkv, nq);
  void *d_dqkv2 = UP(dqkv, nq);
  CU_OK(cudaMemcpy(d_lse, lse, nl * 4, cudaMemcpyHostToDevice));
  ZS_OK_OR_DIE(zs_k_attention_bwd(kc, dqkv, dout, qkv, out, lse, B, T, C, NH));
  ZS_OK_OR_DIE(zs_k_attention_bwd(kg, d_dqkv, d_dout, d_qkv, d_out2, d_lse, B, T, C, NH));
  ZS_OK_OR_DIE(zs_k_attention_bwd(kg, d_dqkv2, d_dout, d_qkv, d_out2, d_lse, B, T, C, NH));
  snprintf(what, sizeof what, "attention dqkv B=%d T=%d C=%d NH=%d", B, T, C, NH);
  kt_compare(what, d_dqkv, dt, dqkv, nq, at_tol(dt, 5e-5));
  size_t bytes = nq * kt_esize(dt);
  unsigned char *h1 = malloc(bytes), *h2 = malloc(bytes);
  if (!h1 || !h2) exit(1);
  CU_OK(cudaDeviceSynchronize());
  CU_OK(cudaMemcpy(h1, d_dqkv, bytes, cudaMemcpyDeviceToHost));
  CU_OK(cudaMemcpy(h2, d_dqkv2, bytes, cudaMemcpyDeviceToHost));
  ZS_EXPECT(memcmp(h1, h2, bytes) == 0, "%s differs between two identical runs", what);
  cudaFree(d_qkv), cudaFree(d_out), cudaFree(d_lse), cudaFree(d_out2), cudaFree(d_dout);
  cudaFree(d_dqkv), cudaFree(d_dqkv2);
  free(qkv), free(out), free(lse), free(dout), free(dqkv), free(h1), free(h2);
}

/* The inputs are O(1), so every comparison's floor is 1 (kt_compare_scaled): gelu(x) for x near -4
   is 1e-4 of its input, and a + 2 dout may cancel to near zero, while the device's rounding is of
   the terms (found with n = 1 on the first GPU run, where rms(ref) floors nothing). */
static void test_elementwise(zs_dtype dt, size_t n) {
  float *x = kt_rand(n, -4, 4, dt), *y = kt_rand(n, -1, 1, dt), *dout = kt_rand(n, -1, 1, dt);
  float *out = malloc(n * 4), *da = kt_rand(n, -1, 1, dt), *db = kt_rand(n, -1, 1, dt);
  void *d_x = UP(x, n), *d_y = UP(y, n), *d_dout = UP(dout, n), *d_out = kt_dev_nan(n, dt);
  void *d_da = UP(da, n), *d_db = UP(db, n);
  ZS_OK_OR_DIE(zs_k_gelu_fwd(kc, out, x, n));
  ZS_OK_OR_DIE(zs_k_gelu_fwd(kg, d_out, d_x, n));
  kt_compare_scaled("gelu out", d_out, dt, out, n, kt_tol(dt, 1e-5), 1.0);
  ZS_OK_OR_DIE(zs_k_gelu_bwd(kc, da, x, dout, n));
  ZS_OK_OR_DIE(zs_k_gelu_bwd(kg, d_da, d_x, d_dout, n));
  kt_compare_scaled("gelu dinp", d_da, dt, da, n, kt_tol(dt, 1e-5), 1.0);
  CU_OK(cudaMemset(d_out, 0xff, n * kt_esize(dt)));
  ZS_OK_OR_DIE(zs_k_residual_fwd(kc, out, x, y, n));
  ZS_OK_OR_DIE(zs_k_residual_fwd(kg, d_out, d_x, d_y, n));
  kt_compare_scaled("residual out", d_out, dt, out, n, kt_tol(dt, 1e-6), 1.0);
  ZS_OK_OR_DIE(zs_k_residual_bwd(kc, da, db, dout, n));
  ZS_OK_OR_DIE(zs_k_residual_bwd(kg, d_da, d_db, d_dout, n));
  kt_compare_scaled("residual da", d_da, dt, da, n, kt_tol(dt, 1e-6), 1.0);
  kt_compare_scaled("residual db", d_db, dt, db, n, kt_tol(dt, 1e-6), 1.0);
  ZS_OK_OR_DIE(zs_k_residual_bwd(kc, da, da, dout, n)); /* aliased: adds twice */
  ZS_OK_OR_DIE(zs_k_residual_bwd(kg, d_da, d_da, d_dout, n));
  kt_compare_scaled("residual da (aliased)", d_da, dt, da, n, kt_tol(dt, 1e-6), 1.0);
  cudaFree(d_x), cudaFree(d_y), cudaFree(d_dout), cudaFree(d_out), cudaFree(d_da), cudaFree(d_db);
  free(x), free(y), free(dout), free(out), free(da), free(db);
}

/* in_place: dlogits aliases logits on both sides. */
static void test_xent(zs_dtype dt, int N, int V, int Vp, int in_place) {
  size_t n = (size_t)N * Vp;
  float *logits = kt_rand(n, -6, 6, dt), *losses = malloc(N * 4), *dl = malloc(n * 4);
  int *tgt = malloc(N * sizeof *tgt);
  for (int i = 0; i < N; i++)
    tgt[i] = (int)(kt_u01() * V) % V;
  tgt[0] = V - 1; /* the last real column */
  int *d_tgt;
  CU_OK(cudaMalloc((void **)&d_tgt, N * sizeof *d_tgt));
  CU_OK(cudaMemcpy(d_tgt, tgt, N * sizeof *tgt, cudaMemcpyHostToDevice));
  void *d_logits = UP(logits, n), *d_losses = kt_dev_nan(N, ZS_F32);
  void *d_dl = in_place ? d_logits : kt_dev_nan(n, dt);
  const float dloss = 1.0f / (float)N;
  float *ref_logits = in_place ? dl : logits;
  if (in_place) memcpy(dl, logits, n * 4);
  ZS_OK_OR_DIE(zs_k_softmax_xent(kc, losses, dl, ref_logits, tgt, dloss, N, V, Vp));
  ZS_OK_OR_DIE(zs_k_softmax_xent(kg, d_losses, d_dl, d_logits, d_tgt, dloss, N, V, Vp));
  kt_compare("softmax_xent losses", d_losses, ZS_F32, losses, N, 2e-5);
  kt_compare(in_place ? "softmax_xent dlogits (in place)" : "softmax_xent dlogits", d_dl, dt, dl, n,
             kt_tol(dt, 2e-5));
  /* Losses only (dlogits NULL). */
  CU_OK(cudaMemset(d_losses, 0xff, N * 4));
  if (!in_place) {
    ZS_OK_OR_DIE(zs_k_softmax_xent(kg, d_losses, NULL, d_logits, d_tgt, dloss, N, V, Vp));
    kt_compare("softmax_xent losses (no dlogits)", d_losses, ZS_F32, losses, N, 2e-5);
    cudaFree(d_dl);
  }
  cudaFree(d_tgt), cudaFree(d_logits), cudaFree(d_losses);
  free(logits), free(losses), free(dl), free(tgt);
}

/* Every head-size class of both paths (bf16 with hs % 16 == 0 runs on the tensor cores, hs 24 on
   the SIMT kernels), T below, at and across the 64-row tiles, a d12-like launch of many blocks. */
static void attention_shapes(zs_dtype dt) {
  test_attention(dt, 2, 1, 64, 4);     /* T 1, hs 16 */
  test_attention(dt, 2, 37, 48, 3);    /* hs 16 */
  test_attention(dt, 1, 15, 64, 2);    /* hs 32 */
  test_attention(dt, 2, 63, 72, 3);    /* hs 24: the SIMT path in bf16 too */
  test_attention(dt, 3, 129, 192, 3);  /* hs 64 */
  test_attention(dt, 1, 65, 160, 2);   /* hs 80 */
  test_attention(dt, 1, 100, 96, 1);   /* hs 96 */
  test_attention(dt, 2, 64, 256, 2);   /* hs 128 */
  test_attention(dt, 4, 200, 768, 12); /* d12 heads: 48 (sequence, head) pairs x 4 tiles */
}

/* qkv 2 bytes past an allocation cannot take the tensor cores: under ZS_CUDA_ATTN=tc (kg) the
   bf16 call fails naming the alignment instead of falling back; a context created under auto
   runs it on the SIMT kernels, which match the CPU. A value other than auto/tc/simt fails
   zs_k_create. */
static void test_attention_modes(void) {
  const zs_dtype dt = ZS_BF16;
  const int B = 2, T = 20, C = 64, NH = 2;
  const size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
  float *buf = kt_rand(nq + 1, -2, 2, dt), *out = malloc(no * 4), *lse = malloc(nl * 4);
  if (!out || !lse) exit(1);
  void *d_buf = UP(buf, nq + 1), *d_out = kt_dev_nan(no, dt), *d_lse = kt_dev_nan(nl, ZS_F32);
  const void *d_qkv = (const char *)d_buf + 2; /* element 1: 2-byte aligned only */
  ZS_EXPECT_STATUS(zs_k_attention_fwd(kg, d_out, d_lse, d_qkv, B, T, C, NH), ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(strstr(zs_last_error(), "16-byte aligned") != NULL,
            "the tc refusal does not name the alignment: %s", zs_last_error());
  zs_kernels *ka = NULL, *kx = NULL;
  setenv("ZS_CUDA_ATTN", "bogus", 1);
  ZS_EXPECT_STATUS(zs_k_create(ZS_DEVICE_CUDA, dt, NULL, &kx), ZS_ERR_INVALID_ARG);
  setenv("ZS_CUDA_ATTN", "auto", 1);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, dt, NULL, &ka));
  setenv("ZS_CUDA_ATTN", "tc", 1);
  ZS_OK_OR_DIE(zs_k_attention_fwd(kc, out, lse, buf + 1, B, T, C, NH));
  ZS_OK_OR_DIE(zs_k_attention_fwd(ka, d_out, d_lse, d_qkv, B, T, C, NH));
  kt_compare("attention out, misaligned qkv under auto (SIMT)", d_out, dt, out, no,
             at_tol(dt, 2e-5));
  kt_compare("attention lse, misaligned qkv under auto (SIMT)", d_lse, ZS_F32, lse, nl, 2e-5);
  zs_k_destroy(ka);
  zs_k_destroy(kx); /* NULL unless the refusal failed */
  cudaFree(d_buf), cudaFree(d_out), cudaFree(d_lse);
  free(buf), free(out), free(lse);
}

/* Every kernel at several shapes in one dtype. */
static void run_all(zs_dtype dt) {
  printf("dtype %s\n", dt == ZS_BF16 ? "bf16" : "f32");
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, dt, NULL, &kg));
  test_encoder(dt, 2, 33, 40, 17);
  test_encoder(dt, 4, 1100, 8, 50); /* more positions than one sort chunk */
  test_layernorm(dt, 1, 7);
  test_layernorm(dt, 37, 768);
  test_layernorm(dt, 1000, 130);
  test_matmul(dt, 37, 29, 53, 1);
  test_matmul(dt, 64, 128, 96, 0);
  test_matmul(dt, 256, 768, 2304, 1);
  attention_shapes(dt);
  if (dt == ZS_BF16) test_attention_modes();
  test_elementwise(dt, 1);
  test_elementwise(dt, 100003);
  test_xent(dt, 5, 1000, 1024, 0);
  test_xent(dt, 3, 50257, 50304, 1);
  test_xent(dt, 4, 33, 33, 1);
  zs_k_destroy(kg);
  kg = NULL;
}

int main(void) {
  if (!kt_have_device()) return 0;
  kt_seed("test_kernels_cuda");
  /* Every bf16 attention with hs % 16 == 0 must run on the tensor cores (a silent fallback to
     SIMT would pass the same checks); fp32 and hs 24 still run SIMT. */
  setenv("ZS_CUDA_ATTN", "tc", 1);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &kc));
  run_all(ZS_F32);
  run_all(ZS_BF16);
  /* The bf16 shapes again on the SIMT kernels (what auto falls back to), against the CPU. */
  printf("bf16 attention, ZS_CUDA_ATTN=simt\n");
  setenv("ZS_CUDA_ATTN", "simt", 1);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, ZS_BF16, NULL, &kg));
  attention_shapes(ZS_BF16);
  zs_k_destroy(kg);
  setenv("ZS_CUDA_ATTN", "tc", 1);
  /* The fallback GEMM (taken where cuBLASLt has no algorithm), forced. */
  setenv("ZS_CUDA_GEMM", "simt", 1);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, ZS_F32, NULL, &kg));
  test_matmul(ZS_F32, 37, 29, 53, 1);
  test_matmul(ZS_F32, 130, 64, 70, 0);
  zs_k_destroy(kg);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, ZS_BF16, NULL, &kg));
  test_matmul(ZS_BF16, 37, 29, 53, 1);
  zs_k_destroy(kg);
  unsetenv("ZS_CUDA_GEMM");
  zs_k_destroy(kc);
  ZS_TEST_END("test_kernels_cuda");
}
