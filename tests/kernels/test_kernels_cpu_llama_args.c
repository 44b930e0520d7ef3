/* Public kernel API, Llama-family calls: argument validation of zs_k_embedding_*, _rmsnorm_*,
 * _rope_table/_fwd/_bwd, _swiglu_*, _gqa_attention_*. Bad arguments must come back as
 * ZS_ERR_INVALID_ARG with a message naming the problem, and must not touch the buffers. */
#include <math.h>
#include <string.h>

#include "zs_test.h"

#define INV ZS_ERR_INVALID_ARG
#define NBUF 4096

static float f[NBUF], g[NBUF], h[NBUF], o[NBUF], st[64];
static const float sentinel = 12345.0f;

/* The last error mentions `word` (the message names the argument or the rule). */
static void expect_msg(const char *word) {
  ZS_EXPECT(strstr(zs_last_error(), word) != NULL, "message should mention '%s': %s", word,
            zs_last_error());
}

/* No rejected call wrote into the buffers. */
static void expect_untouched(void) {
  for (int i = 0; i < NBUF; i++)
    if (f[i] != sentinel || g[i] != sentinel || h[i] != sentinel || o[i] != sentinel) {
      ZS_EXPECT(0, "a rejected call wrote into a buffer (element %d)", i);
      return;
    }
}

static void test_embedding(zs_kernels *k) {
  enum { N = 4, C = 3, V = 5 };
  int tok[N] = {0, 4, 2, 1}, bad[N] = {0, 5, 2, 1}, neg[N] = {0, 1, -1, 2};
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(NULL, f, tok, g, N, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, NULL, tok, g, N, C, V), INV);
  expect_msg("out");
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, f, NULL, g, N, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, f, tok, NULL, N, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, f, tok, g, 0, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, f, tok, g, N, -1, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, f, tok, g, N, C, 0), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, f, bad, g, N, C, V), INV);
  expect_msg("tok[1] = 5");
  ZS_EXPECT_STATUS(zs_k_embedding_fwd(k, f, neg, g, N, C, V), INV);
  expect_msg("tok[2] = -1");
  ZS_EXPECT_STATUS(zs_k_embedding_bwd(NULL, f, g, tok, N, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_bwd(k, NULL, g, tok, N, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_bwd(k, f, NULL, tok, N, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_bwd(k, f, g, NULL, N, C, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_bwd(k, f, g, tok, N, 0, V), INV);
  ZS_EXPECT_STATUS(zs_k_embedding_bwd(k, f, g, bad, N, C, V), INV);
  expect_msg("outside");
  expect_untouched();
}

static void test_rmsnorm(zs_kernels *k) {
  enum { N = 4, C = 8 };
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(NULL, f, st, g, h, 1e-5f, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, NULL, st, g, h, 1e-5f, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, f, NULL, g, h, 1e-5f, N, C), INV);
  expect_msg("rrms");
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, f, st, NULL, h, 1e-5f, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, f, st, g, NULL, 1e-5f, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, f, st, g, h, -1e-5f, N, C), INV);
  expect_msg("eps");
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, f, st, g, h, NAN, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, f, st, g, h, 1e-5f, 0, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_fwd(k, f, st, g, h, 1e-5f, N, 0), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(NULL, f, g, h, o, h, st, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, NULL, g, h, o, h, st, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, f, NULL, h, o, h, st, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, f, g, NULL, o, h, st, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, f, g, h, NULL, h, st, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, f, g, h, o, NULL, st, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, f, g, h, o, h, NULL, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, f, g, f, o, h, st, N, C), INV); /* dinp == dout */
  expect_msg("same buffer");
  ZS_EXPECT_STATUS(zs_k_rmsnorm_bwd(k, f, g, h, o, h, st, -2, C), INV);
  expect_untouched();
}

static void test_rope(zs_kernels *k) {
  enum { B = 2, T = 3, H = 2, D = 4 };
  zs_k_rope_llama3 ok = {8.0, 1.0, 4.0, 8192};
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, 5, 10000.0, NULL), INV); /* odd head dim */
  expect_msg("odd");
  ZS_EXPECT_STATUS(zs_k_rope_table(NULL, g, T, D, 10000.0, NULL), INV);
  ZS_EXPECT_STATUS(zs_k_rope_table(f, NULL, T, D, 10000.0, NULL), INV);
  ZS_EXPECT_STATUS(zs_k_rope_table(f, f, T, D, 10000.0, NULL), INV);
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, 0, D, 10000.0, NULL), INV);
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, 0, 10000.0, NULL), INV);
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, D, 0.0, NULL), INV);
  expect_msg("theta");
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, D, INFINITY, NULL), INV);
  zs_k_rope_llama3 bad = ok;
  bad.factor = 0.0;
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, D, 10000.0, &bad), INV);
  expect_msg("factor");
  bad = ok;
  bad.high_freq_factor = 1.0; /* not above low_freq_factor */
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, D, 10000.0, &bad), INV);
  bad = ok;
  bad.low_freq_factor = 0.0;
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, D, 10000.0, &bad), INV);
  bad = ok;
  bad.original_max_position_embeddings = 0;
  ZS_EXPECT_STATUS(zs_k_rope_table(f, g, T, D, 10000.0, &bad), INV);
  expect_msg("original_max_position_embeddings");
  ZS_EXPECT_STATUS(zs_k_rope_fwd(NULL, f, g, h, o, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_fwd(k, NULL, g, h, o, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_fwd(k, f, NULL, h, o, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_fwd(k, f, g, NULL, o, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_fwd(k, f, g, h, NULL, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_fwd(k, f, g, h, o, B, T, H, 3), INV); /* odd head dim */
  expect_msg("odd");
  ZS_EXPECT_STATUS(zs_k_rope_fwd(k, f, g, h, o, 0, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_fwd(k, f, g, h, o, B, T, 0, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_bwd(NULL, f, g, h, o, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_bwd(k, NULL, g, h, o, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_bwd(k, f, NULL, h, o, B, T, H, D), INV);
  ZS_EXPECT_STATUS(zs_k_rope_bwd(k, f, f, h, o, B, T, H, D), INV); /* dinp == dout */
  ZS_EXPECT_STATUS(zs_k_rope_bwd(k, f, g, h, o, B, T, H, 7), INV);
  ZS_EXPECT_STATUS(zs_k_rope_bwd(k, f, g, h, o, B, -1, H, D), INV);
  expect_untouched();
}

static void test_swiglu(zs_kernels *k) {
  ZS_EXPECT_STATUS(zs_k_swiglu_fwd(NULL, f, g, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_fwd(k, NULL, g, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_fwd(k, f, NULL, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_fwd(k, f, g, NULL, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_fwd(k, f, g, h, 0), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(NULL, f, g, h, o, o, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, NULL, g, h, o, o, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, NULL, h, o, o, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, g, NULL, o, o, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, g, h, NULL, o, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, g, h, o, NULL, 8), INV);
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, f, h, o, o, 8), INV); /* dgate == dup */
  expect_msg("same buffer");
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, g, f, o, o, 8), INV); /* dgate == dout */
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, g, g, o, o, 8), INV); /* dup == dout */
  ZS_EXPECT_STATUS(zs_k_swiglu_bwd(k, f, g, h, o, o, 0), INV);
  expect_untouched();
}

static void test_gqa(zs_kernels *k) {
  enum { B = 1, T = 4, NH = 4, NKV = 2, D = 4 };
  float *q = f, *kk = g, *v = h;
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, q, kk, v, B, T, NH, 3, D), INV);
  expect_msg("do not divide");
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, q, kk, v, B, T, 2, 4, D), INV); /* NKV > NH */
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(NULL, o, st, q, kk, v, B, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, NULL, st, q, kk, v, B, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, NULL, q, kk, v, B, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, NULL, kk, v, B, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, q, NULL, v, B, T, NH, NKV, D), INV);
  expect_msg("key");
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, q, kk, NULL, B, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, q, st, q, kk, v, B, T, NH, NKV, D), INV); /* out = q */
  expect_msg("same buffer");
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, kk, st, q, kk, v, B, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, v, st, q, kk, v, B, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, q, kk, v, 0, T, NH, NKV, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, q, kk, v, B, T, NH, 0, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_fwd(k, o, st, q, kk, v, B, T, NH, NKV, 0), INV);
  /* backward: dq, dkey, dval and dout must be distinct; the same shape rules */
  static float dq[256], dk[256], dv[256];
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dk, dv, o, q, kk, v, o, st, B, T, NH, 3, D), INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(NULL, dq, dk, dv, o, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, NULL, dk, dv, o, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, NULL, dv, o, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dk, NULL, o, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dk, dv, NULL, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dk, dv, o, q, kk, v, o, NULL, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dk, dv, o, q, kk, v, NULL, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dq, dv, o, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  expect_msg("same buffer");
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dk, dk, o, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, dq, dk, dq, o, q, kk, v, o, st, B, T, NH, NKV, D),
                   INV);
  ZS_EXPECT_STATUS(zs_k_gqa_attention_bwd(k, o, dk, dv, o, q, kk, v, o, st, B, T, NH, NKV, D), INV);
  for (int i = 0; i < 256; i++)
    ZS_EXPECT(dq[i] == 0.0f && dk[i] == 0.0f && dv[i] == 0.0f, "a rejected backward wrote");
  expect_untouched();
}

int main(void) {
  zs_kernels *k = NULL;
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k));
  for (int i = 0; i < NBUF; i++)
    f[i] = g[i] = h[i] = o[i] = sentinel;
  test_embedding(k);
  test_rmsnorm(k);
  test_rope(k);
  test_swiglu(k);
  test_gqa(k);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_llama_args");
}
