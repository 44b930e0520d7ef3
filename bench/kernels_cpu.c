/* Times every CPU GPT-2 kernel, and the Llama family's (embedding, RMSNorm, RoPE, SwiGLU, GQA
 * attention with NH / 2 kv heads), through the public zs_k_* API at a small-GPT size and prints a
 * table (ms per call, and GFLOP/s for the matmuls and attention). Optional: --csv PATH also writes
 * the rows as CSV; -B -T -C -NH -V change the shape.
 *
 *   bench_kernels_cpu [-B 4] [-T 64] [-C 128] [-NH 4] [-V 256] [--csv out.csv]
 *
 * Each kernel is run in batches until a batch takes at least 20 ms; the best of 5 batches is kept
 * (the minimum is the least noisy estimate on a shared machine). Backward kernels accumulate into
 * their gradient buffers across repetitions, which does not change their cost.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zshard_kernels.h"

#include "bench_util.h"

/* Every buffer the kernels need at one shape, filled with small random values. */
typedef struct {
  int B, T, C, NH, V, Vp, N;
  zs_kernels *k;
  int *tok, *tgt;
  float *wte, *wpe, *act, *act2, *act4, *qkv, *w, *bias, *lnw, *lnb, *mean, *rstd, *lse;
  float *logits, *losses, *g1, *g2, *g3, *g4;
  int NKV;        /* Llama rows: kv heads (NH / 2 when NH is even, else NH) */
  float *cs, *sn; /* Llama rows: rotary tables [T, hs / 2] */
} bench;

/* One timed call: returns the status of the kernel (a failure stops the benchmark). */
typedef zs_status (*bench_fn)(bench *b);

static float *rnd(size_t n, float scale) {
  float *p = malloc(n * sizeof(float));
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++)
    p[i] = scale * ((float)rand() / (float)RAND_MAX - 0.5f);
  return p;
}

/* Best seconds per call of fn over 5 batches of at least 20 ms each. */
static double time_kernel(bench *b, bench_fn fn) {
  if (fn(b) != ZS_OK) { /* warm-up, and the one place a failure is reported */
    fprintf(stderr, "kernel failed: %s\n", zs_last_error());
    exit(1);
  }
  int reps = 1;
  for (;;) {
    double t0 = bench_now();
    for (int r = 0; r < reps; r++)
      fn(b);
    if (bench_now() - t0 >= 0.02 || reps >= (1 << 20)) break;
    reps *= 2;
  }
  double best = 1e30;
  for (int s = 0; s < 5; s++) {
    double t0 = bench_now();
    for (int r = 0; r < reps; r++)
      fn(b);
    double dt = (bench_now() - t0) / reps;
    best = dt < best ? dt : best;
  }
  return best;
}

/* The calls, at the shapes of one GPT-2 block and the head. */
#define BT (b->B * b->T)
static zs_status enc_f(bench *b) {
  return zs_k_encoder_fwd(b->k, b->act, b->tok, b->wte, b->wpe, b->B, b->T, b->C);
}
static zs_status enc_b(bench *b) {
  return zs_k_encoder_bwd(b->k, b->g1, b->g2, b->act, b->tok, b->B, b->T, b->C);
}
static zs_status ln_f(bench *b) {
  return zs_k_layernorm_fwd(b->k, b->act2, b->mean, b->rstd, b->act, b->lnw, b->lnb, BT, b->C);
}
static zs_status ln_b(bench *b) {
  return zs_k_layernorm_bwd(b->k, b->g1, b->g2, b->g3, b->act2, b->act, b->lnw, b->mean, b->rstd,
                            BT, b->C);
}
static zs_status qkv_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->qkv, b->act, b->w, b->bias, BT, b->C, 3 * b->C);
}
static zs_status qkv_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->g1, b->g2, b->g3, b->qkv, b->act, b->w, BT, b->C, 3 * b->C);
}
static zs_status fc_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->act4, b->act, b->w, b->bias, BT, b->C, 4 * b->C);
}
static zs_status fc_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->g1, b->g2, b->g3, b->act4, b->act, b->w, BT, b->C, 4 * b->C);
}
static zs_status proj_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->act, b->act4, b->w, b->bias, BT, 4 * b->C, b->C);
}
static zs_status proj_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->g4, b->g2, b->g3, b->act, b->act4, b->w, BT, 4 * b->C, b->C);
}
static zs_status head_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->logits, b->act, b->wte, NULL, BT, b->C, b->Vp);
}
static zs_status head_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->g1, b->g2, NULL, b->logits, b->act, b->wte, BT, b->C, b->Vp);
}
static zs_status att_f(bench *b) {
  return zs_k_attention_fwd(b->k, b->act2, b->lse, b->qkv, b->B, b->T, b->C, b->NH);
}
static zs_status att_b(bench *b) {
  return zs_k_attention_bwd(b->k, b->g4, b->act, b->qkv, b->act2, b->lse, b->B, b->T, b->C, b->NH);
}
static zs_status gelu_f(bench *b) {
  return zs_k_gelu_fwd(b->k, b->g4, b->act4, (size_t)BT * 4 * b->C);
}
static zs_status gelu_b(bench *b) {
  return zs_k_gelu_bwd(b->k, b->g4, b->act4, b->act4, (size_t)BT * 4 * b->C);
}
static zs_status res_f(bench *b) {
  return zs_k_residual_fwd(b->k, b->act2, b->act, b->act, (size_t)BT * b->C);
}
static zs_status res_b(bench *b) {
  return zs_k_residual_bwd(b->k, b->g1, b->g3, b->act, (size_t)BT * b->C);
}
/* Llama-family rows: q = the first N*C floats of qkv, key and val the next ones (NKV heads). */
static zs_status emb_f(bench *b) {
  return zs_k_embedding_fwd(b->k, b->act, b->tok, b->wte, BT, b->C, b->V);
}
static zs_status emb_b(bench *b) {
  return zs_k_embedding_bwd(b->k, b->g1, b->act, b->tok, BT, b->C, b->V);
}
static zs_status rms_f(bench *b) {
  return zs_k_rmsnorm_fwd(b->k, b->act2, b->rstd, b->act, b->lnw, 1e-5f, BT, b->C);
}
static zs_status rms_b(bench *b) {
  return zs_k_rmsnorm_bwd(b->k, b->g1, b->g2, b->act2, b->act, b->lnw, b->rstd, BT, b->C);
}
static zs_status rope_f(bench *b) {
  return zs_k_rope_fwd(b->k, b->act2, b->act, b->cs, b->sn, b->B, b->T, b->NH, b->C / b->NH);
}
static zs_status rope_b(bench *b) {
  return zs_k_rope_bwd(b->k, b->g1, b->act2, b->cs, b->sn, b->B, b->T, b->NH, b->C / b->NH);
}
static zs_status swiglu_f(bench *b) {
  return zs_k_swiglu_fwd(b->k, b->g4, b->act4, b->act4, (size_t)BT * 4 * b->C);
}
static zs_status swiglu_b(bench *b) {
  return zs_k_swiglu_bwd(b->k, b->g1, b->g2, b->g4, b->act4, b->act4, (size_t)BT * 4 * b->C);
}
static zs_status gqa_f(bench *b) {
  size_t nq = (size_t)BT * b->C, nk = nq / b->NH * b->NKV;
  return zs_k_gqa_attention_fwd(b->k, b->act2, b->lse, b->qkv, b->qkv + nq, b->qkv + nq + nk, b->B,
                                b->T, b->NH, b->NKV, b->C / b->NH);
}
static zs_status gqa_b(bench *b) {
  size_t nq = (size_t)BT * b->C, nk = nq / b->NH * b->NKV;
  return zs_k_gqa_attention_bwd(b->k, b->g1, b->g2, b->g3, b->act, b->qkv, b->qkv + nq,
                                b->qkv + nq + nk, b->act2, b->lse, b->B, b->T, b->NH, b->NKV,
                                b->C / b->NH);
}
static zs_status xent(bench *b) {
  return zs_k_softmax_xent(b->k, b->losses, b->g4, b->logits, b->tgt, 1.0f / BT, BT, b->V, b->Vp);
}

/* Releases every buffer of the benchmark (free(NULL) is fine for ones never allocated). */
static void bench_free(bench *b) {
  void *all[] = {b->tok,    b->tgt,  b->wte, b->wpe, b->act,  b->act2, b->act4, b->qkv,
                 b->w,      b->bias, b->lnw, b->lnb, b->mean, b->rstd, b->lse,  b->logits,
                 b->losses, b->g1,   b->g2,  b->g3,  b->g4,   b->cs,   b->sn};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]);
  zs_k_destroy(b->k);
}

/* Parses -B/-T/-C/-NH/-V/--csv; returns 0 on a bad argument. */
static int parse(int argc, char **argv, bench *b, const char **csv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    int v = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "-B"))
      b->B = v;
    else if (!strcmp(argv[i], "-T"))
      b->T = v;
    else if (!strcmp(argv[i], "-C"))
      b->C = v;
    else if (!strcmp(argv[i], "-NH"))
      b->NH = v;
    else if (!strcmp(argv[i], "-V"))
      b->V = v;
    else if (!strcmp(argv[i], "--csv"))
      *csv = argv[i + 1];
    else
      return 0;
  }
  return argc % 2 == 1 && b->B > 0 && b->T > 0 && b->C > 0 && b->NH > 0 && b->V > 0 &&
         b->C % b->NH == 0 && (b->C / b->NH) % 2 == 0; /* RoPE rotates pairs */
}

int main(int argc, char **argv) {
  bench b = {.B = 4, .T = 64, .C = 128, .NH = 4, .V = 256};
  const char *csv = NULL;
  if (!parse(argc, argv, &b, &csv)) {
    fprintf(stderr, "usage: %s [-B n] [-T n] [-C n] [-NH n] [-V n] [--csv path]\n", argv[0]);
    return 2;
  }
  b.Vp = (b.V + 63) / 64 * 64;
  b.N = b.B * b.T;
  if (zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &b.k) != ZS_OK) {
    fprintf(stderr, "zs_k_create: %s\n", zs_last_error());
    return 1;
  }
  size_t N = (size_t)b.N, C = (size_t)b.C;
  size_t big = (N + C) * (size_t)(b.Vp > 4 * b.C ? b.Vp : 4 * b.C); /* dinp or dw of any layer */
  b.tok = malloc(N * sizeof(int));
  b.tgt = malloc(N * sizeof(int));
  for (size_t i = 0; i < N; i++)
    b.tok[i] = b.tgt[i] = rand() % b.V;
  b.wte = rnd((size_t)b.Vp * C, 0.1f), b.wpe = rnd((size_t)b.T * C, 0.1f);
  b.act = rnd(N * C * 4, 1.0f), b.act2 = rnd(N * C, 1.0f), b.act4 = rnd(N * 4 * C, 1.0f);
  b.qkv = rnd(N * 3 * C, 1.0f), b.w = rnd(16 * C * C, 0.1f), b.bias = rnd(4 * C, 0.1f);
  b.lnw = rnd(C, 1.0f), b.lnb = rnd(C, 1.0f), b.mean = rnd(N, 1), b.rstd = rnd(N, 1);
  b.lse = rnd((size_t)b.B * b.NH * b.T, 1), b.logits = rnd(N * (size_t)b.Vp, 1.0f);
  b.losses = rnd(N, 1), b.g1 = rnd(big, 0), b.g2 = rnd(big, 0), b.g3 = rnd(big, 0);
  b.g4 = rnd(big, 0);
  b.NKV = b.NH % 2 == 0 ? b.NH / 2 : b.NH;
  b.cs = rnd((size_t)b.T * b.C / b.NH / 2, 0), b.sn = rnd((size_t)b.T * b.C / b.NH / 2, 0);
  if (zs_k_rope_table(b.cs, b.sn, b.T, b.C / b.NH, 10000.0, NULL) != ZS_OK) {
    fprintf(stderr, "zs_k_rope_table: %s\n", zs_last_error());
    bench_free(&b);
    return 1;
  }

  double hs = (double)b.C / b.NH, pairs = (double)b.B * b.NH * b.T * (b.T + 1) / 2.0;
  double mm = 2.0 * b.N * (double)b.C * b.C; /* flops of an N x C x C GEMM */
  struct {
    const char *name;
    bench_fn fn;
    double flops; /* 0: not a compute-bound kernel, no GFLOP/s column */
  } rows[] = {
      {"encoder_fwd", enc_f, 0},
      {"encoder_bwd", enc_b, 0},
      {"layernorm_fwd", ln_f, 0},
      {"layernorm_bwd", ln_b, 0},
      {"matmul_fwd qkv C->3C", qkv_f, 3 * mm},
      {"matmul_bwd qkv C->3C", qkv_b, 6 * mm},
      {"matmul_fwd fc C->4C", fc_f, 4 * mm},
      {"matmul_bwd fc C->4C", fc_b, 8 * mm},
      {"matmul_fwd proj 4C->C", proj_f, 4 * mm},
      {"matmul_bwd proj 4C->C", proj_b, 8 * mm},
      {"matmul_fwd head C->Vp", head_f, mm * b.Vp / b.C},
      {"matmul_bwd head C->Vp", head_b, 2 * mm * b.Vp / b.C},
      {"attention_fwd", att_f, pairs * 4 * hs},  /* q.k and p*v per (query, key) pair */
      {"attention_bwd", att_b, pairs * 10 * hs}, /* q.k again, do.v, dq, dk, dv */
      {"gelu_fwd", gelu_f, 0},
      {"gelu_bwd", gelu_b, 0},
      {"residual_fwd", res_f, 0},
      {"residual_bwd", res_b, 0},
      {"softmax_xent", xent, 0},
      {"llama embedding_fwd", emb_f, 0},
      {"llama embedding_bwd", emb_b, 0},
      {"llama rmsnorm_fwd", rms_f, 0},
      {"llama rmsnorm_bwd", rms_b, 0},
      {"llama rope_fwd (q)", rope_f, 0},
      {"llama rope_bwd (q)", rope_b, 0},
      {"llama swiglu_fwd 4C", swiglu_f, 0},
      {"llama swiglu_bwd 4C", swiglu_b, 0},
      {"llama gqa_attention_fwd", gqa_f, pairs * 4 * hs},
      {"llama gqa_attention_bwd", gqa_b, pairs * 10 * hs},
  };
  FILE *f = csv ? fopen(csv, "w") : NULL;
  if (csv && !f) {
    fprintf(stderr, "cannot write %s\n", csv);
    bench_free(&b);
    return 1;
  }
  if (f) fprintf(f, "kernel,B,T,C,NH,V,Vp,ms,gflops\n");
  printf("CPU kernels, fp32, B=%d T=%d C=%d NH=%d V=%d Vp=%d (OpenBLAS threads %d)\n", b.B, b.T,
         b.C, b.NH, b.V, b.Vp, openblas_get_num_threads());
  printf("%-24s %10s %10s\n", "kernel", "ms", "GFLOP/s");
  double total = 0.0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    double s = time_kernel(&b, rows[i].fn);
    total += s;
    if (rows[i].flops > 0)
      printf("%-24s %10.4f %10.2f\n", rows[i].name, 1e3 * s, rows[i].flops / s * 1e-9);
    else
      printf("%-24s %10.4f %10s\n", rows[i].name, 1e3 * s, "-");
    if (f)
      fprintf(f, "%s,%d,%d,%d,%d,%d,%d,%.6f,%.3f\n", rows[i].name, b.B, b.T, b.C, b.NH, b.V, b.Vp,
              1e3 * s, rows[i].flops > 0 ? rows[i].flops / s * 1e-9 : 0.0);
  }
  printf("%-24s %10.4f\n", "sum of the rows", 1e3 * total);
  if (f) fclose(f);
  bench_free(&b);
  return 0;
}
