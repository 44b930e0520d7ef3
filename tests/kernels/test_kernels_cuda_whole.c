/* The whole-tensor optimizers' CUDA steps (optimizer.h's dev_gather, dev_whole, dev_store) against
 * their CPU twins (gather, whole, store) on the same inputs, for Muon and Adafactor: the gather and
 * the store bit for bit (their header's promise), the whole step within a bound (cuBLAS's and the
 * fixed trees' sums against OpenBLAS's and the element-order ones), on tall, wide, square and
 * vector shapes, small and over many thread blocks, with fp32 and bf16 gradients and state. The
 * CPU's whole step is checked against float64 references by the engine tests (test_engine_train).
 * Without a GPU: prints "SKIP: no CUDA device" and passes. */
#include <cublas_v2.h>

#include "optim/optimizer.h"
#include "test_kernels_cuda_util.h"

/* Host array of n elements of dt from fp32 values (bf16: rounded to nearest even). */
static void *host_of(const float *x, size_t n, zs_dtype dt) {
  void *h = malloc((n ? n : 1) * kt_esize(dt));
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++) {
    if (dt == ZS_BF16)
      ((uint16_t *)h)[i] = zs_f32_to_bf16(x[i]);
    else
      ((float *)h)[i] = x[i];
  }
  return h;
}

/* Whether device bytes d equal host bytes h. */
static int same_bits(const void *d, const void *h, size_t bytes) {
  void *g = malloc(bytes ? bytes : 1);
  if (!g) exit(1);
  CU_OK(cudaDeviceSynchronize());
  CU_OK(cudaMemcpy(g, d, bytes, cudaMemcpyDeviceToHost));
  const int same = !memcmp(g, h, bytes);
  free(g);
  return same;
}

/* One step of optimizer name ("muon" or "adafactor") on a rows x cols tensor: the CPU's gather,
   whole and store against the device's, gradient in gdt, state in sdt. */
static void test_whole(cublasHandle_t blas, const char *name, int variant, int64_t rows,
                       int64_t cols, zs_dtype gdt, zs_dtype sdt) {
  zs_config c;
  zs_config_default(&c);
  ZS_OK_OR_DIE(zs_optimizer_id(name, &c.optimizer));
  const int muon = !strcmp(name, "muon");
  c.optim.lr = 0.02f;
  c.optim.weight_decay = 0.1f;
  if (muon && variant) /* the other settings: no Nesterov, 3 steps, AdamW's lr */
    c.muon.nesterov = 0, c.muon.ns_steps = 3, c.muon.adjust_lr = ZS_MUON_LR_MATCH_ADAMW;
  const zs_optimizer *m = zs_optimizer_for(&c);
  char what[160];
  snprintf(what, sizeof what, "%s%s %lld x %lld, grad %s, state %s", name,
           variant ? " (variant)" : "", (long long)rows, (long long)cols,
           gdt == ZS_BF16 ? "bf16" : "f32", sdt == ZS_BF16 ? "bf16" : "f32");
  _Alignas(16) unsigned char coef[ZS_OPT_COEF_BYTES];
  m->prepare(coef, &c, 3, 0.5, 1);
  const size_t n = (size_t)rows * (size_t)cols, ci = (size_t)m->whole_in;
  const size_t wn = m->work_floats(rows, cols);

  /* Inputs: the gradient, an fp32 master, the state (Muon's momentum in [-1, 1), Adafactor's
     second moments in [0, 1)). */
  float *g = kt_rand(n, -1.0f, 1.0f, gdt), *master = kt_rand(n, -1.0f, 1.0f, ZS_F32);
  float *s = kt_rand(n, muon ? -1.0f : 0.0f, 1.0f, sdt);
  void *hg = host_of(g, n, gdt), *hs = host_of(s, n, sdt);
  void *dg = kt_upload(g, n, gdt), *ds = kt_upload(s, n, sdt); /* the same bits as hg, hs */
  float *dmaster = kt_upload(master, n, ZS_F32);
  float *hch[ZS_OPT_MAX_CHANNELS] = {NULL}, *dch[ZS_OPT_MAX_CHANNELS] = {NULL};
  for (size_t k = 0; k < ci; k++) {
    hch[k] = calloc(n ? n : 1, sizeof(float));
    if (!hch[k]) exit(1);
    dch[k] = kt_dev_nan(n, ZS_F32);
  }

  /* The gather: the channels and the state it updates (Muon's momentum), bit for bit. */
  zs_opt_state hst = {.master = master, .state = {hs}}, dst = {.master = dmaster, .state = {ds}};
  m->gather(coef, &hst, sdt, hg, gdt, hch, n);
  ZS_OK_OR_DIE(m->dev_gather(coef, &dst, sdt, dg, gdt, dch, n, NULL));
  for (size_t k = 0; k < ci; k++)
    ZS_EXPECT(same_bits(dch[k], hch[k], n * 4), "%s: gather channel %zu differs", what, k);
  ZS_EXPECT(same_bits(ds, hs, n * kt_esize(sdt)), "%s: the gather's state differs", what);

  /* The whole step, from the same channels on both (the CPU's gather), within a bound. */
  for (size_t k = 0; k < ci; k++)
    CU_OK(cudaMemcpy(dch[k], hch[k], n * 4, cudaMemcpyHostToDevice));
  float *hw = calloc(wn ? wn : 1, sizeof *hw), *dw = kt_dev_nan(wn, ZS_F32);
  if (!hw) exit(1);
  m->whole(coef, hch, rows, cols, hw);
  ZS_OK_OR_DIE(m->dev_whole(coef, dch, rows, cols, dw, m->dev_blas ? blas : NULL, NULL));
  /* Muon: five Newton-Schulz steps' GEMMs summed in other orders; Adafactor: double sums */
  const double tol = muon ? 1e-4 : 1e-6;
  for (int k = 0; k < m->whole_out; k++) {
    char w2[200];
    snprintf(w2, sizeof w2, "%s: whole output %d", what, k);
    kt_compare(w2, dch[k], ZS_F32, hch[k], n, tol);
  }

  /* The store (Adafactor's new state from channel 1), from the same outputs, bit for bit. */
  if (m->store) {
    for (int k = 0; k < m->whole_out; k++)
      CU_OK(cudaMemcpy(dch[k], hch[k], n * 4, cudaMemcpyHostToDevice));
    m->store(coef, (void *const *)hst.state, sdt, (const float *const *)hch, n);
    ZS_OK_OR_DIE(
        m->dev_store(coef, (void *const *)dst.state, sdt, (const float *const *)dch, n, NULL));
    ZS_EXPECT(same_bits(ds, hs, n * kt_esize(sdt)), "%s: the store's state differs", what);
  }

  for (size_t k = 0; k < ci; k++)
    free(hch[k]), cudaFree(dch[k]);
  free(hw), cudaFree(dw);
  free(g), free(master), free(s), free(hg), free(hs);
  cudaFree(dg), cudaFree(ds), cudaFree(dmaster);
}

int main(void) {
  if (!kt_have_device()) return 0;
  kt_seed("test_kernels_cuda_whole");
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "FATAL: cublasCreate failed\n");
    return 1;
  }
  /* Tall (transposed by Muon), wide, square, thin; over 65536 elements (the sums over many blocks:
     optim/dsum_cuda.cuh) both ways; vectors (Adafactor's unfactored second moment: one dimension
     of 1). */
  const int64_t shapes[][2] = {{7, 5}, {5, 7}, {6, 6}, {64, 3}, {3, 64}, {300, 257}, {257, 300}};
  const zs_dtype dts[2] = {ZS_F32, ZS_BF16};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int a = 0; a < 2; a++) {
      test_whole(blas, "muon", 0, shapes[i][0], shapes[i][1], dts[a], dts[a]);
      test_whole(blas, "adafactor", 0, shapes[i][0], shapes[i][1], dts[a], dts[1 - a]);
    }
  test_whole(blas, "muon", 1, 5, 7, ZS_F32, ZS_BF16);
  test_whole(blas, "muon", 1, 300, 257, ZS_BF16, ZS_F32);
  const int64_t vectors[][2] = {{1, 9}, {9, 1}, {257, 1}, {70001, 1}};
  for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++)
    test_whole(blas, "adafactor", 0, vectors[i][0], vectors[i][1], ZS_F32, ZS_F32);
  /* Many rows: Adafactor's column sums in 64 chunks of rows (2049: the last chunk empty), its
     mean of R over many blocks (65600 rows). */
  test_whole(blas, "adafactor", 0, 5000, 96, ZS_BF16, ZS_F32);
  test_whole(blas, "adafactor", 0, 2049, 32, ZS_F32, ZS_F32);
  test_whole(blas, "adafactor", 0, 65600, 2, ZS_F32, ZS_BF16);
  cublasDestroy(blas);
  ZS_TEST_END("test_kernels_cuda_whole");
}
