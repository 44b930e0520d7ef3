/* Times every CUDA kernel at GPT-2 d12 sizes (B=8, T=1024, C=768, NH=12, V=50257, Vp=50304, bf16
 * by default) and prints a table: ms per call, and TFLOP/s (matmuls, attention) or GB/s (memory-
 * bound kernels, bytes that must move at least once). The GPT-2 layers go through the public
 * zs_k_* API; the engine kernels (AdamW, sq_bins, convert) run on 124M parameters, GPT-2 small.
 *
 *   bench_kernels_cuda [-B 8] [-T 1024] [--f32] [--csv PATH]
 *
 * Each kernel: one warm-up call, then the best of 3 timed batches (CUDA events) of enough calls
 * to last ~30 ms. Backward kernels accumulate into their gradients across calls, which does not
 * change their cost. The last line starts with "headline:". Without a GPU: "SKIP: no CUDA device".
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/engine_cuda.h"
#include "optim/adamw/cuda/adamw_cuda.h"
#include "zshard_kernels.h"

#include "bench_util.h"

/* Shapes and every buffer (device). */
typedef struct {
  int B, T, C, NH, V, Vp, N;
  zs_dtype dt;
  size_t es; /* element size */
  zs_kernels *k;
  int *tok, *tgt;
  void *wte, *wpe, *act, *act2, *dact, *dact2, *fc, *fc2, *dfc, *qkv, *dqkv;
  void *wqkv, *bqkv, *wfc, *bfc, *wproj, *dwqkv, *dbqkv, *dwfc, *dbfc, *dwproj, *dwte, *dwpe;
  void *lnw, *lnb, *dlnw, *dlnb, *logits;
  float *mean, *rstd, *lse, *losses;
  size_t np; /* engine benchmark: parameters */
  float *master, *m, *v;
  void *grad, *param;
  uint64_t *bins;
} bench;

static void *dev(size_t bytes) {
  void *p = NULL;
  CU_OK(cudaMalloc(&p, bytes));
  return p;
}

/* Fills n elements of dt at d with a repeating pattern of uniform values in [-0.5, 0.5). */
static void fill(void *d, zs_dtype dt, size_t n) {
  enum { CH = 1 << 20 };
  static float *h, *stage;
  if (!h) {
    h = malloc(CH * sizeof *h);
    if (!h) exit(1);
    for (size_t i = 0; i < CH; i++)
      h[i] = 0.5f * (2.0f * (float)rand() / (float)RAND_MAX - 1.0f);
    stage = dev(CH * sizeof *stage);
    CU_OK(cudaMemcpy(stage, h, CH * sizeof *h, cudaMemcpyHostToDevice));
  }
  size_t es = dt == ZS_BF16 ? 2 : 4;
  for (size_t off = 0; off < n; off += CH) {
    size_t len = n - off < CH ? n - off : CH;
    DIE(zs_cuda_convert((char *)d + off * es, dt, stage, ZS_F32, len, NULL));
  }
}

/* A device buffer of n elements of the benchmark dtype, random. */
static void *tensor(bench *b, size_t n) {
  void *d = dev(n * b->es);
  fill(d, b->dt, n);
  return d;
}

static void setup(bench *b) {
  size_t N = (size_t)b->N, C = (size_t)b->C;
  b->es = b->dt == ZS_BF16 ? 2 : 4;
  DIE(zs_k_create(ZS_DEVICE_CUDA, b->dt, NULL, &b->k));
  int *h = malloc(N * sizeof *h);
  for (size_t i = 0; i < N; i++)
    h[i] = rand() % b->V;
  b->tok = dev(N * sizeof(int));
  b->tgt = dev(N * sizeof(int));
  CU_OK(cudaMemcpy(b->tok, h, N * sizeof *h, cudaMemcpyHostToDevice));
  CU_OK(cudaMemcpy(b->tgt, h, N * sizeof *h, cudaMemcpyHostToDevice));
  free(h);
  b->wte = tensor(b, (size_t)b->Vp * C), b->wpe = tensor(b, (size_t)b->T * C);
  b->dwte = tensor(b, (size_t)b->Vp * C), b->dwpe = tensor(b, (size_t)b->T * C);
  b->act = tensor(b, N * C), b->act2 = tensor(b, N * C);
  b->dact = tensor(b, N * C), b->dact2 = tensor(b, N * C);
  b->fc = tensor(b, N * 4 * C), b->fc2 = tensor(b, N * 4 * C), b->dfc = tensor(b, N * 4 * C);
  b->qkv = tensor(b, N * 3 * C), b->dqkv = tensor(b, N * 3 * C);
  b->wqkv = tensor(b, 3 * C * C), b->bqkv = tensor(b, 3 * C);
  b->dwqkv = tensor(b, 3 * C * C), b->dbqkv = tensor(b, 3 * C);
  b->wfc = tensor(b, 4 * C * C), b->bfc = tensor(b, 4 * C);
  b->dwfc = tensor(b, 4 * C * C), b->dbfc = tensor(b, 4 * C);
  b->wproj = tensor(b, 4 * C * C), b->dwproj = tensor(b, 4 * C * C);
  b->lnw = tensor(b, C), b->lnb = tensor(b, C), b->dlnw = tensor(b, C), b->dlnb = tensor(b, C);
  b->logits = tensor(b, N * (size_t)b->Vp);
  b->mean = dev(N * 4), b->rstd = dev(N * 4), b->losses = dev(N * 4);
  b->lse = dev((size_t)b->B * b->NH * b->T * 4);
  DIE(zs_k_layernorm_fwd(b->k, b->act2, b->mean, b->rstd, b->act, b->lnw, b->lnb, b->N, b->C));
  DIE(zs_k_attention_fwd(b->k, b->act2, b->lse, b->qkv, b->B, b->T, b->C, b->NH));
  b->np = 124439808; /* GPT-2 small */
  b->master = dev(b->np * 4), b->m = dev(b->np * 4), b->v = dev(b->np * 4);
  fill(b->master, ZS_F32, b->np);
  CU_OK(cudaMemset(b->m, 0, b->np * 4));
  CU_OK(cudaMemset(b->v, 0, b->np * 4));
  b->grad = tensor(b, b->np), b->param = tensor(b, b->np);
  b->bins = dev((ZS_SQ_NBINS + 1) * sizeof(uint64_t));
  CU_OK(cudaMemset(b->bins, 0, (ZS_SQ_NBINS + 1) * sizeof(uint64_t)));
  CU_OK(cudaDeviceSynchronize());
}

typedef zs_status (*bench_fn)(bench *b);

/* The kernels, one function each. */
static zs_status k_enc_f(bench *b) {
  return zs_k_encoder_fwd(b->k, b->act, b->tok, b->wte, b->wpe, b->B, b->T, b->C);
}
static zs_status k_enc_b(bench *b) {
  return zs_k_encoder_bwd(b->k, b->dwte, b->dwpe, b->dact, b->tok, b->B, b->T, b->C);
}
static zs_status k_ln_f(bench *b) {
  return zs_k_layernorm_fwd(b->k, b->act2, b->mean, b->rstd, b->act, b->lnw, b->lnb, b->N, b->C);
}
static zs_status k_ln_b(bench *b) {
  return zs_k_layernorm_bwd(b->k, b->dact2, b->dlnw, b->dlnb, b->dact, b->act, b->lnw, b->mean,
                            b->rstd, b->N, b->C);
}
static zs_status k_qkv_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->qkv, b->act, b->wqkv, b->bqkv, b->N, b->C, 3 * b->C);
}
static zs_status k_qkv_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->dact, b->dwqkv, b->dbqkv, b->dqkv, b->act, b->wqkv, b->N, b->C,
                         3 * b->C);
}
static zs_status k_fc_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->fc, b->act, b->wfc, b->bfc, b->N, b->C, 4 * b->C);
}
static zs_status k_fc_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->dact, b->dwfc, b->dbfc, b->dfc, b->act, b->wfc, b->N, b->C,
                         4 * b->C);
}
static zs_status k_proj_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->act2, b->fc2, b->wproj, b->lnb, b->N, 4 * b->C, b->C);
}
static zs_status k_proj_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->dfc, b->dwproj, b->dlnb, b->dact, b->fc2, b->wproj, b->N,
                         4 * b->C, b->C);
}
static zs_status k_head_f(bench *b) {
  return zs_k_matmul_fwd(b->k, b->logits, b->act, b->wte, NULL, b->N, b->C, b->Vp);
}
static zs_status k_head_b(bench *b) {
  return zs_k_matmul_bwd(b->k, b->dact, b->dwte, NULL, b->logits, b->act, b->wte, b->N, b->C,
                         b->Vp);
}
static zs_status k_att_f(bench *b) {
  return zs_k_attention_fwd(b->k, b->act2, b->lse, b->qkv, b->B, b->T, b->C, b->NH);
}
static zs_status k_att_b(bench *b) {
  return zs_k_attention_bwd(b->k, b->dqkv, b->dact, b->qkv, b->act2, b->lse, b->B, b->T, b->C,
                            b->NH);
}
static zs_status k_gelu_f(bench *b) {
  return zs_k_gelu_fwd(b->k, b->fc2, b->fc, (size_t)b->N * 4 * b->C);
}
static zs_status k_gelu_b(bench *b) {
  return zs_k_gelu_bwd(b->k, b->dfc, b->fc, b->fc2, (size_t)b->N * 4 * b->C);
}
static zs_status k_res_f(bench *b) {
  return zs_k_residual_fwd(b->k, b->act2, b->act, b->dact, (size_t)b->N * b->C);
}
static zs_status k_res_b(bench *b) {
  return zs_k_residual_bwd(b->k, b->dact, b->dact2, b->act, (size_t)b->N * b->C);
}
static zs_status k_xent(bench *b) {
  return zs_k_softmax_xent(b->k, b->losses, b->logits, b->logits, b->tgt, 1.0f / b->N, b->N, b->V,
                           b->Vp);
}
static zs_status k_adamw(bench *b) {
  zs_adamw_coef c;
  zs_adamw_coef_make(&c, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, 1.0);
  return zs_cuda_adamw(&c, b->master, b->m, b->v, b->grad, b->dt, b->param, b->dt, b->np, NULL);
}
static zs_status k_sqbins(bench *b) {
  return zs_cuda_sq_bins(b->bins, b->grad, b->dt, b->np, NULL);
}
static zs_status k_convert(bench *b) {
  return zs_cuda_convert(b->param, b->dt, b->master, ZS_F32, b->np, NULL);
}

/* Best milliseconds per call over 3 batches of ~30 ms. */
static double time_ms(bench *b, bench_fn fn) {
  cudaEvent_t e0, e1;
  CU_OK(cudaEventCreate(&e0));
  CU_OK(cudaEventCreate(&e1));
  DIE(fn(b));
  CU_OK(cudaEventRecord(e0, NULL));
  DIE(fn(b));
  CU_OK(cudaEventRecord(e1, NULL));
  CU_OK(cudaEventSynchronize(e1));
  float one;
  CU_OK(cudaEventElapsedTime(&one, e0, e1));
  int reps = one > 0.0f ? (int)(30.0f / one) : 100;
  reps = reps < 1 ? 1 : reps > 200 ? 200 : reps;
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    CU_OK(cudaEventRecord(e0, NULL));
    for (int i = 0; i < reps; i++)
      DIE(fn(b));
    CU_OK(cudaEventRecord(e1, NULL));
    CU_OK(cudaEventSynchronize(e1));
    float ms;
    CU_OK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms / reps < best) best = ms / reps;
  }
  CU_OK(cudaEventDestroy(e0));
  CU_OK(cudaEventDestroy(e1));
  return best;
}

int main(int argc, char **argv) {
  int cnt = 0;
  if (cudaGetDeviceCount(&cnt) != cudaSuccess || cnt < 1) {
    printf("SKIP: no CUDA device\n");
    return 0;
  }
  bench b;
  memset(&b, 0, sizeof b);
  b.B = 8, b.T = 1024, b.C = 768, b.NH = 12, b.V = 50257, b.Vp = 50304, b.dt = ZS_BF16;
  const char *csv = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-B") && i + 1 < argc)
      b.B = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-T") && i + 1 < argc)
      b.T = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--f32"))
      b.dt = ZS_F32;
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else {
      fprintf(stderr, "usage: %s [-B 8] [-T 1024] [--f32] [--csv PATH]\n", argv[0]);
      return 2;
    }
  }
  b.N = b.B * b.T;
  struct cudaDeviceProp prop;
  CU_OK(cudaGetDeviceProperties(&prop, 0));
  setup(&b);
  const double N = b.N, C = b.C, es = (double)(b.dt == ZS_BF16 ? 2 : 4);
  const double hs = C / b.NH, att = 4.0 * b.B * b.NH * ((double)b.T * b.T / 2.0) * hs;
  const double np = (double)b.np;
  struct {
    const char *name;
    bench_fn fn;
    double flops, bytes;
  } rows[] = {
      {"encoder_fwd", k_enc_f, 0, 3 * N * C * es},
      {"encoder_bwd", k_enc_b, 0, 3 * N * C * es},
      {"layernorm_fwd", k_ln_f, 0, 2 * N * C * es},
      {"layernorm_bwd", k_ln_b, 0, 4 * N * C * es},
      {"matmul_fwd qkv", k_qkv_f, 2 * N * C * 3 * C, 0},
      {"matmul_bwd qkv", k_qkv_b, 4 * N * C * 3 * C, 0},
      {"matmul_fwd fc", k_fc_f, 2 * N * C * 4 * C, 0},
      {"matmul_bwd fc", k_fc_b, 4 * N * C * 4 * C, 0},
      {"matmul_fwd proj", k_proj_f, 2 * N * C * 4 * C, 0},
      {"matmul_bwd proj", k_proj_b, 4 * N * C * 4 * C, 0},
      {"matmul_fwd lm_head", k_head_f, 2 * N * C * b.Vp, 0},
      {"matmul_bwd lm_head", k_head_b, 4 * N * C * b.Vp, 0},
      {"attention_fwd", k_att_f, att, 0},
      {"attention_bwd", k_att_b, 2.5 * att, 0},
      {"gelu_fwd", k_gelu_f, 0, 2 * N * 4 * C * es},
      {"gelu_bwd", k_gelu_b, 0, 4 * N * 4 * C * es},
      {"residual_fwd", k_res_f, 0, 3 * N * C * es},
      {"residual_bwd", k_res_b, 0, 5 * N * C * es},
      {"softmax_xent", k_xent, 0, 2 * N * b.Vp * es},
      {"adamw (124M)", k_adamw, 0, np * (24 + 2 * es)},
      {"sq_bins (124M)", k_sqbins, 0, np * es},
      {"convert f32->dt (124M)", k_convert, 0, np * (4 + es)},
  };
  const int nrows = (int)(sizeof rows / sizeof rows[0]);
  FILE *f = csv ? fopen(csv, "w") : NULL;
  if (f) fprintf(f, "kernel,ms,tflops,gbps\n");
  printf("CUDA kernels on %s, %s, B=%d T=%d C=%d NH=%d V=%d Vp=%d\n", prop.name,
         b.dt == ZS_BF16 ? "bf16" : "f32", b.B, b.T, b.C, b.NH, b.V, b.Vp);
  printf("%-24s %10s %10s %10s\n", "kernel", "ms", "TFLOP/s", "GB/s");
  double total = 0.0, head_tf = 0.0, att_tf = 0.0;
  for (int i = 0; i < nrows; i++) {
    double ms = time_ms(&b, rows[i].fn);
    double tf = rows[i].flops ? rows[i].flops / (ms * 1e-3) / 1e12 : 0.0;
    double gb = rows[i].bytes ? rows[i].bytes / (ms * 1e-3) / 1e9 : 0.0;
    if (!strstr(rows[i].name, "(124M)")) total += ms; /* the layer kernels, not the engine's */
    if (!strcmp(rows[i].name, "matmul_fwd lm_head")) head_tf = tf;
    if (!strcmp(rows[i].name, "attention_fwd")) att_tf = tf;
    char tfs[16] = "-", gbs[16] = "-";
    if (tf) snprintf(tfs, sizeof tfs, "%.1f", tf);
    if (gb) snprintf(gbs, sizeof gbs, "%.1f", gb);
    printf("%-24s %10.3f %10s %10s\n", rows[i].name, ms, tfs, gbs);
    if (f) fprintf(f, "%s,%.4f,%.2f,%.1f\n", rows[i].name, ms, tf, gb);
  }
  if (f) fclose(f);
  printf("headline: lm_head fwd %.0f TFLOP/s, attention fwd %.1f TFLOP/s, layer kernels once each "
         "%.2f ms (%s)\n",
         head_tf, att_tf, total, b.dt == ZS_BF16 ? "bf16" : "f32");
  zs_k_destroy(b.k);
  return 0;
}
