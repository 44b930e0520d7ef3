/* CUDA Llama-family kernels against the CPU reference, through the public zs_k_* API, as
 * test_kernels_cuda.c does for GPT-2: one CPU (fp32) and one CUDA (fp32, then bf16) context get
 * the same inputs (rounded to the CUDA dtype), written outputs are NaN-poisoned on the device
 * first, accumulated gradients start from the same random values on both sides. Shapes include
 * odd sizes, every head-dim class of the attention (D 16 .. 128, both of its paths, T ragged
 * against its 64-row tiles), GQA groups of 1, 2, 4, 6 and 8 (multi-query), and a Llama-3-8B-like
 * layer (32 query / 8 kv heads of 128), and one rank's part of the vocabulary-parallel embedding
 * and cross-entropy (the other ranks' parts from the CPU), up to Llama-3's vocabulary over 8. The
 * process runs under ZS_CUDA_ATTN=tc, so a bf16 call with D % 16 == 0 that does not take the tensor
 * cores fails instead of passing on SIMT; the bf16 shapes then run again under simt.
 *
 * Tolerances: fp32 as the GPT-2 twins (different summation orders only). bf16 (kt_tol: 1e-2 of
 * |ref| + rms(ref)): inputs are identical, so the differences are the output's rounding (2^-9
 * relative) plus the one intermediate rounding HF also does (RMSNorm's normalised row, SwiGLU's
 * silu: another 2^-9) and bf16 accumulators read back and rounded once per call (gradients);
 * attention's bf16 bound is 2e-2 (at_tol: its tensor-core path rounds P and dS to bf16).
 * Without a GPU: prints "SKIP: no CUDA device" and passes. */
#include "test_kernels_cuda_util.h"

static zs_kernels *kc, *kg; /* CPU reference, CUDA under test */

#define UP(h, n) kt_upload((h), (n), dt)

/* Random token ids in [0, V), on the host and the device. */
static int *rand_tokens(int N, int V, int **dev) {
  int *tok = malloc((size_t)N * sizeof *tok);
  if (!tok) exit(1);
  for (int i = 0; i < N; i++)
    tok[i] = (int)(kt_u01() * V) % V;
  CU_OK(cudaMalloc((void **)dev, (size_t)N * sizeof **dev));
  CU_OK(cudaMemcpy(*dev, tok, (size_t)N * sizeof *tok, cudaMemcpyHostToDevice));
  return tok;
}

static void test_embedding(zs_dtype dt, int N, int C, int V) {
  size_t n = (size_t)N * C, nw = (size_t)V * C;
  int *dtok, *tok = rand_tokens(N, V, &dtok);
  float *wte = kt_rand(nw, -1, 1, dt), *out = malloc(n * 4), *dout = kt_rand(n, -1, 1, dt);
  float *dwte = kt_rand(nw, -1, 1, dt);
  void *d_wte = UP(wte, nw), *d_out = kt_dev_nan(n, dt), *d_dout = UP(dout, n);
  void *d_dwte = UP(dwte, nw);
  ZS_OK_OR_DIE(zs_k_embedding_fwd(kc, out, tok, wte, N, C, V));
  ZS_OK_OR_DIE(zs_k_embedding_fwd(kg, d_out, dtok, d_wte, N, C, V));
  ZS_OK_OR_DIE(zs_k_embedding_bwd(kc, dwte, dout, tok, N, C, V));
  ZS_OK_OR_DIE(zs_k_embedding_bwd(kg, d_dwte, d_dout, dtok, N, C, V));
  kt_compare("embedding out", d_out, dt, out, n, kt_tol(dt, 1e-6));
  kt_compare("embedding dwte", d_dwte, dt, dwte, nw, kt_tol(dt, 1e-6));
  cudaFree(dtok), cudaFree(d_wte), cudaFree(d_out), cudaFree(d_dout), cudaFree(d_dwte);
  free(tok), free(wte), free(out), free(dout), free(dwte);
}

/* One rank's part of the vocabulary-parallel embedding and cross-entropy (rank r of P, Vl rows
   each): embedding out and dwte, the part, and with the CPU's parts of all P ranks (the gathered
   buffer) the finish's losses and dlogits, out of place and in place. */
static void test_vocab(zs_dtype dt, int N, int C, int P, int Vl, int r) {
  const int V = P * Vl, v0 = r * Vl;
  size_t n = (size_t)N * C, nw = (size_t)Vl * C, nl = (size_t)N * Vl, np = (size_t)P * N * 3;
  int *dtok, *tok = rand_tokens(N, V, &dtok);
  float *wte = kt_rand(nw, -1, 1, dt), *out = malloc(n * 4), *dout = kt_rand(n, -1, 1, dt);
  float *dwte = kt_rand(nw, -1, 1, dt), *logits = kt_rand(nl, -6, 6, dt);
  float *parts = malloc(np * 4), *losses = malloc((size_t)N * 4), *dl = malloc(nl * 4);
  if (!out || !parts || !losses || !dl) exit(1);
  void *d_wte = UP(wte, nw), *d_out = kt_dev_nan(n, dt), *d_dout = UP(dout, n);
  void *d_dwte = UP(dwte, nw), *d_logits = UP(logits, nl), *d_dl = kt_dev_nan(nl, dt);
  void *d_part = kt_dev_nan((size_t)N * 3, ZS_F32), *d_losses = kt_dev_nan(N, ZS_F32);
  ZS_OK_OR_DIE(zs_k_vocab_embedding_fwd(kc, out, tok, wte, N, C, v0, Vl, V));
  ZS_OK_OR_DIE(zs_k_vocab_embedding_fwd(kg, d_out, dtok, d_wte, N, C, v0, Vl, V));
  ZS_OK_OR_DIE(zs_k_vocab_embedding_bwd(kc, dwte, dout, tok, N, C, v0, Vl, V));
  ZS_OK_OR_DIE(zs_k_vocab_embedding_bwd(kg, d_dwte, d_dout, dtok, N, C, v0, Vl, V));
  kt_compare("vocab embedding out", d_out, dt, out, n, kt_tol(dt, 1e-6));
  kt_compare("vocab embedding dwte", d_dwte, dt, dwte, nw, kt_tol(dt, 1e-6));
  /* the other ranks' parts from random logits on the CPU; this rank's on both devices */
  for (int q = 0; q < P; q++) {
    float *lq = q == r ? logits : kt_rand(nl, -6, 6, dt);
    ZS_OK_OR_DIE(zs_k_vocab_xent_part(kc, parts + (size_t)q * N * 3, lq, tok, N, q * Vl, Vl, V));
    if (lq != logits) free(lq);
  }
  ZS_OK_OR_DIE(zs_k_vocab_xent_part(kg, d_part, d_logits, dtok, N, v0, Vl, V));
  { /* each field of the part on its own scale (the sum of exponentials dwarfs the max) */
    float *got = malloc((size_t)N * 3 * 4), *f[2] = {malloc((size_t)N * 4), malloc((size_t)N * 4)};
    if (!got || !f[0] || !f[1]) exit(1);
    kt_download(got, d_part, (size_t)N * 3, ZS_F32);
    static const char *name[3] = {"vocab xent part: row max", "vocab xent part: sum of exp",
                                  "vocab xent part: target logit"};
    for (int c = 0; c < 3; c++) {
      for (int i = 0; i < N; i++) {
        f[0][i] = got[3 * i + c];
        f[1][i] = parts[((size_t)r * N + i) * 3 + c];
      }
      void *d = kt_upload(f[0], (size_t)N, ZS_F32);
      kt_compare(name[c], d, ZS_F32, f[1], (size_t)N, 2e-5);
      cudaFree(d);
    }
    free(got), free(f[0]), free(f[1]);
  }
  void *d_parts = kt_upload(parts, np, ZS_F32);
  const float dloss = 1.0f / (float)N;
  ZS_OK_OR_DIE(zs_k_vocab_xent_finish(kc, losses, dl, logits, parts, P, tok, dloss, N, v0, Vl, V));
  ZS_OK_OR_DIE(
      zs_k_vocab_xent_finish(kg, d_losses, d_dl, d_logits, d_parts, P, dtok, dloss, N, v0, Vl, V));
  kt_compare("vocab xent losses", d_losses, ZS_F32, losses, N, 2e-5);
  kt_compare("vocab xent dlogits", d_dl, dt, dl, nl, kt_tol(dt, 2e-5));
  ZS_OK_OR_DIE(zs_k_vocab_xent_finish(kg, d_losses, d_logits, d_logits, d_parts, P, dtok, dloss, N,
                                      v0, Vl, V));
  kt_compare("vocab xent dlogits (in place)", d_logits, dt, dl, nl, kt_tol(dt, 2e-5));
  cudaFree(dtok), cudaFree(d_wte), cudaFree(d_out), cudaFree(d_dout), cudaFree(d_dwte);
  cudaFree(d_logits), cudaFree(d_dl), cudaFree(d_part), cudaFree(d_losses), cudaFree(d_parts);
  free(tok), free(wte), free(out), free(dout), free(dwte), free(logits), free(parts), free(losses);
  free(dl);
}

static void test_rmsnorm(zs_dtype dt, int N, int C) {
  size_t n = (size_t)N * C;
  const float eps = 1e-5f;
  float *inp = kt_rand(n, -2, 3, dt), *w = kt_rand(C, 0.5f, 1.5f, dt), *out = malloc(n * 4);
  float *rrms = malloc(N * 4), *dout = kt_rand(n, -1, 1, dt), *dinp = kt_rand(n, -1, 1, dt);
  float *dw = kt_rand(C, -1, 1, dt);
  void *d_inp = UP(inp, n), *d_w = UP(w, C), *d_out = kt_dev_nan(n, dt);
  void *d_rrms = kt_dev_nan(N, ZS_F32), *d_dout = UP(dout, n), *d_dinp = UP(dinp, n);
  void *d_dw = UP(dw, C);
  ZS_OK_OR_DIE(zs_k_rmsnorm_fwd(kc, out, rrms, inp, w, eps, N, C));
  ZS_OK_OR_DIE(zs_k_rmsnorm_fwd(kg, d_out, d_rrms, d_inp, d_w, eps, N, C));
  kt_compare("rmsnorm out", d_out, dt, out, n, kt_tol(dt, 2e-5));
  kt_compare("rmsnorm rrms", d_rrms, ZS_F32, rrms, N, 2e-5);
  /* Backward from the CPU's statistics on both sides, so only the backward itself differs. */
  CU_OK(cudaMemcpy(d_rrms, rrms, N * 4, cudaMemcpyHostToDevice));
  ZS_OK_OR_DIE(zs_k_rmsnorm_bwd(kc, dinp, dw, dout, inp, w, rrms, N, C));
  ZS_OK_OR_DIE(zs_k_rmsnorm_bwd(kg, d_dinp, d_dw, d_dout, d_inp, d_w, d_rrms, N, C));
  kt_compare("rmsnorm dinp", d_dinp, dt, dinp, n, kt_tol(dt, 2e-5));
  kt_compare("rmsnorm dw", d_dw, dt, dw, C, kt_tol(dt, 2e-5));
  cudaFree(d_inp), cudaFree(d_w), cudaFree(d_out), cudaFree(d_rrms), cudaFree(d_dout);
  cudaFree(d_dinp), cudaFree(d_dw);
  free(inp), free(w), free(out), free(rrms), free(dout), free(dinp), free(dw);
}

/* The rotation of q-like [B,T,H*D] activations with a Llama-3 table (built on the host, the same
   fp32 table uploaded), forward out of place and in place, backward. */
static void test_rope(zs_dtype dt, int B, int T, int H, int D) {
  size_t n = (size_t)B * T * H * D, nt = (size_t)T * (D / 2);
  zs_k_rope_llama3 l3 = {8.0, 1.0, 4.0, 64};
  float *cs = malloc(nt * 4), *sn = malloc(nt * 4);
  ZS_OK_OR_DIE(zs_k_rope_table(cs, sn, T, D, 500000.0, &l3));
  float *x = kt_rand(n, -2, 2, dt), *out = malloc(n * 4), *dout = kt_rand(n, -1, 1, dt);
  float *dx = kt_rand(n, -1, 1, dt);
  void *d_cs = kt_upload(cs, nt, ZS_F32), *d_sn = kt_upload(sn, nt, ZS_F32);
  void *d_x = UP(x, n), *d_out = kt_dev_nan(n, dt), *d_dout = UP(dout, n), *d_dx = UP(dx, n);
  ZS_OK_OR_DIE(zs_k_rope_fwd(kc, out, x, cs, sn, B, T, H, D));
  ZS_OK_OR_DIE(zs_k_rope_fwd(kg, d_out, d_x, d_cs, d_sn, B, T, H, D));
  kt_compare("rope out", d_out, dt, out, n, kt_tol(dt, 1e-6));
  ZS_OK_OR_DIE(zs_k_rope_fwd(kg, d_x, d_x, d_cs, d_sn, B, T, H, D)); /* in place */
  kt_compare("rope out (in place)", d_x, dt, out, n, kt_tol(dt, 1e-6));
  ZS_OK_OR_DIE(zs_k_rope_bwd(kc, dx, dout, cs, sn, B, T, H, D));
  ZS_OK_OR_DIE(zs_k_rope_bwd(kg, d_dx, d_dout, d_cs, d_sn, B, T, H, D));
  kt_compare("rope dinp", d_dx, dt, dx, n, kt_tol(dt, 1e-6));
  cudaFree(d_cs), cudaFree(d_sn), cudaFree(d_x), cudaFree(d_out), cudaFree(d_dout), cudaFree(d_dx);
  free(cs), free(sn), free(x), free(out), free(dout), free(dx);
}

static void test_swiglu(zs_dtype dt, size_t n) {
  float *g = kt_rand(n, -6, 6, dt), *u = kt_rand(n, -2, 2, dt), *out = malloc(n * 4);
  float *dout = kt_rand(n, -1, 1, dt), *dg = kt_rand(n, -1, 1, dt), *du = kt_rand(n, -1, 1, dt);
  void *d_g = UP(g, n), *d_u = UP(u, n), *d_out = kt_dev_nan(n, dt), *d_dout = UP(dout, n);
  void *d_dg = UP(dg, n), *d_du = UP(du, n);
  ZS_OK_OR_DIE(zs_k_swiglu_fwd(kc, out, g, u, n));
  ZS_OK_OR_DIE(zs_k_swiglu_fwd(kg, d_out, d_g, d_u, n));
  kt_compare("swiglu out", d_out, dt, out, n, kt_tol(dt, 1e-5));
  ZS_OK_OR_DIE(zs_k_swiglu_bwd(kc, dg, du, dout, g, u, n));
  ZS_OK_OR_DIE(zs_k_swiglu_bwd(kg, d_dg, d_du, d_dout, d_g, d_u, n));
  kt_compare("swiglu dgate", d_dg, dt, dg, n, kt_tol(dt, 1e-5));
  kt_compare("swiglu dup", d_du, dt, du, n, kt_tol(dt, 1e-5));
  cudaFree(d_g), cudaFree(d_u), cudaFree(d_out), cudaFree(d_dout), cudaFree(d_dg), cudaFree(d_du);
  free(g), free(u), free(out), free(dout), free(dg), free(du);
}

/* Attention's bf16 bound: 2e-2, not kt_tol's 1e-2, because the tensor-core path rounds P and dS
   to bf16 for its products (test_kernels_cuda.c's at_tol gives the measurement). */
static double at_tol(zs_dtype dt, double f32_tol) {
  return dt == ZS_BF16 ? 2e-2 : f32_tol;
}

/* Forward against the CPU, then the backward on identical inputs (the CPU's out rounded to dt and
   its lse on both sides); the CUDA backward run twice from the same prefill must give the same
   bits (the header promises a deterministic order). */
static void test_gqa(zs_dtype dt, int B, int T, int NH, int NKV, int D) {
  size_t nq = (size_t)B * T * NH * D, nk = (size_t)B * T * NKV * D, nl = (size_t)B * NH * T;
  float *q = kt_rand(nq, -2, 2, dt), *key = kt_rand(nk, -2, 2, dt), *val = kt_rand(nk, -2, 2, dt);
  float *out = malloc(nq * 4), *lse = malloc(nl * 4), *dout = kt_rand(nq, -1, 1, dt);
  float *dq = kt_rand(nq, -1, 1, dt), *dk = kt_rand(nk, -1, 1, dt), *dv = kt_rand(nk, -1, 1, dt);
  void *d_q = UP(q, nq), *d_k = UP(key, nk), *d_v = UP(val, nk), *d_out = kt_dev_nan(nq, dt);
  void *d_lse = kt_dev_nan(nl, ZS_F32);
  char what[96];
  ZS_OK_OR_DIE(zs_k_gqa_attention_fwd(kc, out, lse, q, key, val, B, T, NH, NKV, D));
  ZS_OK_OR_DIE(zs_k_gqa_attention_fwd(kg, d_out, d_lse, d_q, d_k, d_v, B, T, NH, NKV, D));
  snprintf(what, sizeof what, "gqa out T=%d NH=%d NKV=%d D=%d", T, NH, NKV, D);
  kt_compare(what, d_out, dt, out, nq, at_tol(dt, 2e-5));
  snprintf(what, sizeof what, "gqa lse T=%d NH=%d NKV=%d D=%d", T, NH, NKV, D);
  kt_compare(what, d_lse, ZS_F32, lse, nl, 2e-5);
  for (size_t i = 0; i < nq; i++)
    out[i] = kt_round(dt, out[i]);
  void *d_out2 = UP(out, nq), *d_dout = UP(dout, nq);
  void *d_dq = UP(dq, nq), *d_dk = UP(dk, nk), *d_dv = UP(dv, nk);
  void *d_dq2 = UP(dq, nq), *d_dk2 = UP(dk, nk), *d_dv2 = UP(dv, nk);
  CU_OK(cudaMemcpy(d_lse, lse, nl * 4, cudaMemcpyHostToDevice));
  ZS_OK_OR_DIE(
      zs_k_gqa_attention_bwd(kc, dq, dk, dv, dout, q, key, val, out, lse, B, T, NH, NKV, D));
  ZS_OK_OR_DIE(zs_k_gqa_attention_bwd(kg, d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_out2, d_lse, B,
                                      T, NH, NKV, D));
  ZS_OK_OR_DIE(zs_k_gqa_attention_bwd(kg, d_dq2, d_dk2, d_dv2, d_dout, d_q, d_k, d_v, d_out2, d_lse,
                                      B, T, NH, NKV, D));
  snprintf(what, sizeof what, "gqa dq T=%d NH=%d NKV=%d D=%d", T, NH, NKV, D);
  kt_compare(what, d_dq, dt, dq, nq, at_tol(dt, 5e-5));
  snprintf(what, sizeof what, "gqa dkey T=%d NH=%d NKV=%d D=%d", T, NH, NKV, D);
  kt_compare(what, d_dk, dt, dk, nk, at_tol(dt, 5e-5));
  snprintf(what, sizeof what, "gqa dval T=%d NH=%d NKV=%d D=%d", T, NH, NKV, D);
  kt_compare(what, d_dv, dt, dv, nk, at_tol(dt, 5e-5));
  size_t bq = nq * kt_esize(dt), bk = nk * kt_esize(dt);
  unsigned char *h1 = malloc(bq), *h2 = malloc(bq);
  CU_OK(cudaDeviceSynchronize());
  CU_OK(cudaMemcpy(h1, d_dq, bq, cudaMemcpyDeviceToHost));
  CU_OK(cudaMemcpy(h2, d_dq2, bq, cudaMemcpyDeviceToHost));
  ZS_EXPECT(memcmp(h1, h2, bq) == 0, "gqa dq differs between two identical runs");
  CU_OK(cudaMemcpy(h1, d_dk, bk, cudaMemcpyDeviceToHost));
  CU_OK(cudaMemcpy(h2, d_dk2, bk, cudaMemcpyDeviceToHost));
  ZS_EXPECT(memcmp(h1, h2, bk) == 0, "gqa dkey differs between two identical runs");
  CU_OK(cudaMemcpy(h1, d_dv, bk, cudaMemcpyDeviceToHost));
  CU_OK(cudaMemcpy(h2, d_dv2, bk, cudaMemcpyDeviceToHost));
  ZS_EXPECT(memcmp(h1, h2, bk) == 0, "gqa dval differs between two identical runs");
  cudaFree(d_q), cudaFree(d_k), cudaFree(d_v), cudaFree(d_out), cudaFree(d_lse), cudaFree(d_out2);
  cudaFree(d_dout), cudaFree(d_dq), cudaFree(d_dk), cudaFree(d_dv), cudaFree(d_dq2);
  cudaFree(d_dk2), cudaFree(d_dv2);
  free(q), free(key), free(val), free(out), free(lse), free(dout), free(dq), free(dk), free(dv);
  free(h1), free(h2);
}

/* bf16 with D % 16 == 0 runs on the tensor cores, D 24 and 40 on the SIMT kernels; T below, at
   and across the 64-row tiles; groups of 1, 2, 4, 6 and 8. */
static void gqa_shapes(zs_dtype dt) {
  test_gqa(dt, 1, 1, 8, 1, 32);     /* T 1, groups of 8 */
  test_gqa(dt, 2, 37, 4, 2, 16);    /* D 16 */
  test_gqa(dt, 2, 15, 4, 4, 24);    /* D 24: the SIMT path in bf16 too */
  test_gqa(dt, 2, 63, 6, 3, 40);    /* D 40 (SIMT), groups of 2 */
  test_gqa(dt, 1, 129, 6, 1, 64);   /* multi-query, D 64 */
  test_gqa(dt, 1, 65, 8, 1, 80);    /* groups of 8, D 80 */
  test_gqa(dt, 2, 100, 8, 2, 96);   /* groups of 4, D 96 */
  test_gqa(dt, 1, 200, 4, 2, 112);  /* D 112 */
  test_gqa(dt, 1, 64, 4, 4, 128);   /* NKV = NH */
  test_gqa(dt, 1, 256, 32, 8, 128); /* Llama-3-8B heads */
}

/* D > 128 is refused on CUDA with ZS_ERR_UNSUPPORTED (the CPU takes it); the buffers are
   separate, so the aliasing check (ZS_ERR_INVALID_ARG) does not answer first. */
static void test_gqa_unsupported(zs_dtype dt) {
  void *o = kt_dev_nan(4096, dt), *q = kt_dev_nan(4096, dt), *k = kt_dev_nan(4096, dt);
  void *v = kt_dev_nan(4096, dt), *l = kt_dev_nan(64, ZS_F32);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(kg, o, l, q, k, v, 1, 2, 2, 1, 160), ZS_ERR_UNSUPPORTED);
  cudaFree(o), cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(l);
}

static void run_all(zs_dtype dt) {
  printf("dtype %s\n", dt == ZS_BF16 ? "bf16" : "f32");
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, dt, NULL, &kg));
  test_embedding(dt, 66, 40, 17);
  test_embedding(dt, 5000, 8, 300); /* more tokens than one sort chunk */
  test_vocab(dt, 33, 24, 1, 50, 0);
  test_vocab(dt, 70, 16, 4, 129, 2);
  test_vocab(dt, 5000, 8, 2, 301, 1); /* more tokens than one sort chunk, half of them elsewhere */
  test_vocab(dt, 8, 64, 8, 16032, 7); /* Llama-3's 128256 rows over 8 ranks */
  test_rmsnorm(dt, 1, 7);
  test_rmsnorm(dt, 37, 896); /* Qwen2-0.5B width */
  test_rmsnorm(dt, 1000, 130);
  test_rope(dt, 2, 37, 3, 16);
  test_rope(dt, 1, 70, 8, 128);
  test_rope(dt, 3, 5, 1, 2);
  test_swiglu(dt, 1);
  test_swiglu(dt, 100003);
  gqa_shapes(dt);
  test_gqa_unsupported(dt);
  zs_k_destroy(kg);
  kg = NULL;
}

int main(void) {
  if (!kt_have_device()) return 0;
  kt_seed("test_kernels_cuda_llama");
  /* Every bf16 attention with D % 16 == 0 must run on the tensor cores (a silent fallback to SIMT
     would pass the same checks); fp32 and D 24, 40 still run SIMT. */
  setenv("ZS_CUDA_ATTN", "tc", 1);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &kc));
  run_all(ZS_F32);
  run_all(ZS_BF16);
  /* The bf16 shapes again on the SIMT kernels (what auto falls back to), against the CPU. */
  printf("bf16 gqa attention, ZS_CUDA_ATTN=simt\n");
  setenv("ZS_CUDA_ATTN", "simt", 1);
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CUDA, ZS_BF16, NULL, &kg));
  gqa_shapes(ZS_BF16);
  zs_k_destroy(kg);
  setenv("ZS_CUDA_ATTN", "tc", 1);
  zs_k_destroy(kc);
  ZS_TEST_END("test_kernels_cuda_llama");
}
