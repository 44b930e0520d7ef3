/* Public kernel API: context creation rules and argument validation of every zs_k_* call.
 * Bad arguments must come back as ZS_ERR_INVALID_ARG with a non-empty message and must not touch
 * the buffers; unsupported combinations as ZS_ERR_UNSUPPORTED. */
#include <string.h>

#include "zs_test.h"

#define INV ZS_ERR_INVALID_ARG

/* Context creation: CPU fp32 works; bf16 on the CPU is unsupported; nonsense enums are invalid. */
static void test_create(void) {
  zs_kernels *k = (zs_kernels *)&k; /* must be reset to NULL on failure */
  ZS_EXPECT_STATUS(zs_k_create(ZS_DEVICE_CPU, ZS_BF16, NULL, &k), ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(k == NULL, "failed create left *out set");
  ZS_EXPECT(strstr(zs_last_error(), "fp32") != NULL, "message should say why: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_k_create((zs_device)7, ZS_F32, NULL, &k), INV);
  ZS_EXPECT_STATUS(zs_k_create(ZS_DEVICE_CPU, (zs_dtype)9, NULL, &k), INV);
  ZS_EXPECT_STATUS(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, NULL), INV);
#ifndef ZS_HAVE_CUDA
  ZS_EXPECT_STATUS(zs_k_create(ZS_DEVICE_CUDA, ZS_F32, NULL, &k), ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(strstr(zs_last_error(), "without CUDA") != NULL, "message: %s", zs_last_error());
#endif
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k));
  ZS_EXPECT(k != NULL, "create returned OK and NULL");
  zs_k_destroy(k);
  zs_k_destroy(NULL); /* no-op */
}

/* Every call with a NULL context, a NULL required pointer, and a non-positive dimension. Buffers
   are big enough for the valid shapes used (B=2, T=3, C=4, NH=2, V=5, Vp=8). */
static void test_validation(zs_kernels *k) {
  enum { B = 2, T = 3, C = 4, NH = 2, N = B * T, V = 5, Vp = 8 };
  static float f[4096], g[4096], h[4096], st[64], st2[64];
  static int tok[N] = {0, 1, 2, 3, 4, 0};
  const float sentinel = 12345.0f;
  for (int i = 0; i < 4096; i++)
    f[i] = g[i] = h[i] = sentinel;

  /* encoder */
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(NULL, f, tok, g, h, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(k, NULL, tok, g, h, B, T, C), INV);
  ZS_EXPECT(strstr(zs_last_error(), "out") != NULL, "message should name the argument: %s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(k, f, NULL, g, h, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(k, f, tok, NULL, h, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(k, f, tok, g, NULL, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(k, f, tok, g, h, 0, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(k, f, tok, g, h, B, -1, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_fwd(k, f, tok, g, h, B, T, 0), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_bwd(k, NULL, g, h, tok, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_bwd(k, f, NULL, h, tok, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_bwd(k, f, g, NULL, tok, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_bwd(k, f, g, h, NULL, B, T, C), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_bwd(k, f, g, h, tok, B, T, -3), INV);
  ZS_EXPECT_STATUS(zs_k_encoder_bwd(NULL, f, g, h, tok, B, T, C), INV);

  /* layernorm */
  ZS_EXPECT_STATUS(zs_k_layernorm_fwd(NULL, f, st, st2, g, h, h, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_fwd(k, f, NULL, st2, g, h, h, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_fwd(k, f, st, NULL, g, h, h, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_fwd(k, f, st, st2, g, h, NULL, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_fwd(k, f, st, st2, g, h, h, 0, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_fwd(k, f, st, st2, g, h, h, N, 0), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_bwd(k, NULL, g, h, f, g, h, st, st2, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_bwd(k, f, g, h, f, g, h, NULL, st2, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_bwd(k, f, g, h, f, g, h, st, NULL, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_bwd(k, f, g, NULL, f, g, h, st, st2, N, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_bwd(k, f, g, h, f, g, h, st, st2, -1, C), INV);
  ZS_EXPECT_STATUS(zs_k_layernorm_bwd(NULL, f, g, h, f, g, h, st, st2, N, C), INV);

  /* matmul: bias, dbias and dinp (backward) may be NULL, nothing else */
  ZS_EXPECT_STATUS(zs_k_matmul_fwd(NULL, f, g, h, NULL, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_fwd(k, NULL, g, h, NULL, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_fwd(k, f, NULL, h, NULL, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_fwd(k, f, g, NULL, NULL, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_fwd(k, f, g, h, NULL, N, C, 0), INV);
  ZS_EXPECT(strstr(zs_last_error(), "OC") != NULL, "message should name OC: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_k_matmul_fwd(k, f, g, h, NULL, 0, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_bwd(k, NULL, NULL, NULL, h, f, g, N, C, 3), INV); /* dw required */
  ZS_EXPECT_STATUS(zs_k_matmul_bwd(k, f, NULL, NULL, h, f, g, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_bwd(k, f, g, NULL, NULL, f, g, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_bwd(k, f, g, NULL, h, NULL, g, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_bwd(k, f, g, NULL, h, f, NULL, N, C, 3), INV);
  ZS_EXPECT_STATUS(zs_k_matmul_bwd(k, f, g, NULL, h, f, g, N, -2, 3), INV);

  /* attention: C % NH */
  ZS_EXPECT_STATUS(zs_k_attention_fwd(NULL, f, st, g, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_fwd(k, NULL, st, g, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_fwd(k, f, NULL, g, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_fwd(k, f, st, NULL, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_fwd(k, f, st, g, B, T, C, 3), INV);
  ZS_EXPECT(strstr(zs_last_error(), "divisible") != NULL, "message: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_k_attention_fwd(k, f, st, g, B, T, C, 0), INV);
  ZS_EXPECT_STATUS(zs_k_attention_fwd(k, f, st, g, B, 0, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_bwd(k, NULL, f, g, h, st, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_bwd(k, f, NULL, g, h, st, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_bwd(k, f, f, NULL, h, st, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_bwd(k, f, f, g, NULL, st, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_bwd(k, f, f, g, h, NULL, B, T, C, NH), INV);
  ZS_EXPECT_STATUS(zs_k_attention_bwd(k, f, f, g, h, st, B, T, 6, 4), INV);
  ZS_EXPECT_STATUS(zs_k_attention_bwd(k, f, f, g, h, st, -1, T, C, NH), INV);

  /* pointwise */
  ZS_EXPECT_STATUS(zs_k_gelu_fwd(NULL, f, g, 8), INV);
  ZS_EXPECT_STATUS(zs_k_gelu_fwd(k, NULL, g, 8), INV);
  ZS_EXPECT_STATUS(zs_k_gelu_fwd(k, f, NULL, 8), INV);
  ZS_EXPECT_STATUS(zs_k_gelu_fwd(k, f, g, 0), INV);
  ZS_EXPECT_STATUS(zs_k_gelu_bwd(k, NULL, g, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_gelu_bwd(k, f, NULL, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_gelu_bwd(k, f, g, NULL, 8), INV);
  ZS_EXPECT_STATUS(zs_k_gelu_bwd(k, f, g, h, 0), INV);
  ZS_EXPECT_STATUS(zs_k_residual_fwd(NULL, f, g, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_residual_fwd(k, NULL, g, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_residual_fwd(k, f, NULL, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_residual_fwd(k, f, g, NULL, 8), INV);
  ZS_EXPECT_STATUS(zs_k_residual_fwd(k, f, g, h, 0), INV);
  ZS_EXPECT_STATUS(zs_k_residual_bwd(k, NULL, g, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_residual_bwd(k, f, NULL, h, 8), INV);
  ZS_EXPECT_STATUS(zs_k_residual_bwd(k, f, g, NULL, 8), INV);
  ZS_EXPECT_STATUS(zs_k_residual_bwd(k, f, g, h, 0), INV);

  /* cross-entropy: V <= Vp, targets in [0, V) (checked on the CPU) */
  int tg[N] = {0, 1, 2, 3, 4, 0};
  ZS_EXPECT_STATUS(zs_k_softmax_xent(NULL, st, f, g, tg, 1.0f, N, V, Vp), INV);
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, NULL, f, g, tg, 1.0f, N, V, Vp), INV);
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, NULL, tg, 1.0f, N, V, Vp), INV);
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, g, NULL, 1.0f, N, V, Vp), INV);
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, g, tg, 1.0f, 0, V, Vp), INV);
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, g, tg, 1.0f, N, 0, Vp), INV);
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, g, tg, 1.0f, N, V, 0), INV);
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, g, tg, 1.0f, N, 9, Vp), INV);
  ZS_EXPECT(strstr(zs_last_error(), "Vp") != NULL, "message should name Vp: %s", zs_last_error());
  tg[3] = V; /* a padded column is not a class */
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, g, tg, 1.0f, N, V, Vp), INV);
  ZS_EXPECT(strstr(zs_last_error(), "targets[3]") != NULL, "message: %s", zs_last_error());
  tg[3] = -1;
  ZS_EXPECT_STATUS(zs_k_softmax_xent(k, st, f, g, tg, 1.0f, N, V, Vp), INV);

  /* nothing above may have written a buffer */
  int untouched = 1;
  for (int i = 0; i < 4096; i++)
    untouched &= f[i] == sentinel && g[i] == sentinel;
  ZS_EXPECT(untouched, "a rejected call wrote into a buffer");

  /* and a valid call still works on the same context afterwards (bias NULL allowed) */
  ZS_EXPECT(zs_k_matmul_fwd(k, f, g, h, NULL, N, C, 3) == ZS_OK, "%s", zs_last_error());
  ZS_EXPECT(zs_k_matmul_bwd(k, f, g, NULL, h, f, g, N, C, 3) == ZS_OK, "%s", zs_last_error());
  /* dinp NULL: the input gradient is skipped, f (the would-be dinp) is not written */
  float keep[N * C];
  memcpy(keep, f, sizeof keep);
  ZS_EXPECT(zs_k_matmul_bwd(k, NULL, g, NULL, h, f, g, N, C, 3) == ZS_OK, "%s", zs_last_error());
  ZS_EXPECT(memcmp(keep, f, sizeof keep) == 0, "matmul bwd with dinp NULL wrote into inp");
}

int main(void) {
  test_create();
  zs_kernels *k = NULL;
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k));
  test_validation(k);
  zs_k_destroy(k);
  ZS_TEST_END("test_kernels_cpu_args");
}
