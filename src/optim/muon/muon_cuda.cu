/* Muon on the CUDA device (muon_cuda.h): muon.c's steps, operation for operation, with the
   round-to-nearest intrinsics (nothing contracted). Newton-Schulz's matrices are row-major as on
   the CPU; gemm_rm turns a row-major product into cuBLAS's column-major call (C^T = B^T A^T). */
#include <cublas_v2.h>

#include "optim/codec_cuda.cuh"
#include "optim/dsum_cuda.cuh"
#include "optim/muon/muon_cuda.h"

#define MUON_THREADS 256

/* The gather's element (muon.c's gather): the momentum as stored is what the direction uses. */
template <typename TG, typename TM>
__global__ void muon_gather_kernel(zs_muon_coef k, TM *m, const TG *grad, float *dir, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const float g = __fmul_rn(zs_ld(&grad[i]), k.gscale);
    zs_st(&m[i], __fmaf_rn(k.momentum, zs_ld(&m[i]), __fmul_rn(k.omm, g)));
    const float ms = zs_ld(&m[i]);
    dir[i] = k.nesterov ? __fmaf_rn(k.momentum, ms, __fmul_rn(k.omm, g)) : ms;
  }
}

template <typename TG>
static void gather_launch(const zs_muon_coef *c, void *m, int m_bf16, const void *grad, float *dir,
                          size_t n, cudaStream_t s) {
  const unsigned b = zs_grid(n, MUON_THREADS);
  if (m_bf16)
    muon_gather_kernel<TG, zs_bf16>
        <<<b, MUON_THREADS, 0, s>>>(*c, (zs_bf16 *)m, (const TG *)grad, dir, n);
  else
    muon_gather_kernel<TG, float>
        <<<b, MUON_THREADS, 0, s>>>(*c, (float *)m, (const TG *)grad, dir, n);
}

extern "C" zs_status zs_muon_cuda_gather(const zs_muon_coef *c, void *m, int m_bf16,
                                         const void *grad, zs_dtype gdt, float *dir, size_t n,
                                         void *stream) {
  if (!c || !zs_dt_ok(gdt)) return zs_err(ZS_ERR_INVALID_ARG, "zs_muon_cuda_gather: arguments");
  if (!n) return ZS_OK;
  if (!m || !grad || !dir)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_muon_cuda_gather: NULL array with n = %zu", n);
  if (gdt == ZS_BF16)
    gather_launch<zs_bf16>(c, m, m_bf16, grad, dir, n, (cudaStream_t)stream);
  else
    gather_launch<float>(c, m, m_bf16, grad, dir, n, (cudaStream_t)stream);
  return zs_cu_launched("zs_muon_cuda_gather");
}

/* dst (cols x rows) = src (rows x cols)^T, times scale (1: a copy) plus +0 when plus0 (-0 made
   +0, after the scale, as the CPU's caller adds it). */
__global__ void muon_transpose(const float *src, float *dst, int64_t rows, int64_t cols,
                               float scale, int plus0) {
  const size_t n = (size_t)rows * (size_t)cols;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const size_t r = i / (size_t)cols, q = i % (size_t)cols;
    float v = scale == 1.0f ? src[i] : __fmul_rn(src[i], scale);
    if (plus0) v = __fadd_rn(v, 0.0f);
    dst[q * (size_t)rows + r] = v;
  }
}

/* y[i] = x[i] * scale (+0 when plus0), elementwise; in place allowed. */
__global__ void muon_scale(const float *x, float *y, size_t n, float scale, int plus0) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float v = __fmul_rn(x[i], scale);
    y[i] = plus0 ? __fadd_rn(v, 0.0f) : v;
  }
}

/* The norm's terms x_i^2 (as the CPU: no fma), and inv = (float)(1 / max(||X||_F, 1e-7)) into
   *out: summed in double by dsum_cuda.cuh in fixed trees (the same bits every run; the CPU sums
   in element order, so the last bits of the double may differ). */
struct muon_sq {
  const float *x;
  __device__ double operator()(size_t i) const { return __dmul_rn((double)x[i], (double)x[i]); }
};
struct muon_inv_set {
  float *out;
  __device__ void operator()(double sq) const { *out = (float)(1.0 / fmax(sqrt(sq), 1e-7)); }
};

/* x[i] *= *inv. */
__global__ void muon_scale_by(float *x, size_t n, const float *inv) {
  const float f = *inv;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    x[i] = __fmul_rn(x[i], f);
}

/* Row-major C (m x n) = alpha op(A) op(B) + beta C, as cblas_sgemm(CblasRowMajor, ...). */
static cublasStatus_t gemm_rm(cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
                              const float *A, int lda, const float *B, int ldb, float beta,
                              float *C, int ldc) {
  return cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                     &alpha, B, ldb, A, lda, &beta, C, ldc);
}

extern "C" zs_status zs_muon_cuda_whole(const zs_muon_coef *c, float *x, int64_t rows, int64_t cols,
                                        float *work, void *blas, void *stream) {
  if (!c || !x || !work || !blas || rows < 1 || cols < 1)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_muon_cuda_whole: arguments");
  const int tr = rows > cols;
  const size_t s = (size_t)(tr ? cols : rows), l = (size_t)(tr ? rows : cols), n = s * l;
  if (s > (size_t)INT32_MAX || l > (size_t)INT32_MAX)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_muon_cuda_whole: a %lld x %lld matrix exceeds cuBLAS's "
                  "32-bit dimensions",
                  (long long)rows, (long long)cols);
  cudaStream_t st = (cudaStream_t)stream;
  cublasHandle_t h = (cublasHandle_t)blas;
  float *X = work, *Y = X + n, *A = Y + n, *B = A + s * s;
  const unsigned grid = zs_grid(n, MUON_THREADS);
  if (tr) /* x is l x s: X = x^T */
    muon_transpose<<<grid, MUON_THREADS, 0, st>>>(x, X, (int64_t)l, (int64_t)s, 1.0f, 0);
  else if (cudaMemcpyAsync(X, x, n * sizeof *X, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
    return zs_cu_launched("zs_muon_cuda_whole: the copy of the direction");
  /* Y (the sum's partials) and A (inv) are free until the first step. */
  zs_dsum(muon_sq{X}, n, Y, muon_inv_set{A}, st);
  muon_scale_by<<<grid, MUON_THREADS, 0, st>>>(X, n, A);
  ZS_CHECK(zs_cu_launched("zs_muon_cuda_whole: the normalisation"));
  const float a = 3.4445f, b = -4.7750f, cc = 2.0315f;
  const int S = (int)s, L = (int)l;
  cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
  for (int it = 0; it < c->ns_steps && bs == CUBLAS_STATUS_SUCCESS; it++) {
    bs = gemm_rm(h, 0, 1, S, S, L, 1.0f, X, L, X, L, 0.0f, A, S); /* A = X X^T */
    if (bs != CUBLAS_STATUS_SUCCESS) break;
    if (cudaMemcpyAsync(B, A, s * s * sizeof *B, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
      return zs_cu_launched("zs_muon_cuda_whole: a copy");
    bs = gemm_rm(h, 0, 0, S, S, S, cc, A, S, A, S, b, B, S); /* B = b A + c A A */
    if (bs != CUBLAS_STATUS_SUCCESS) break;
    if (cudaMemcpyAsync(Y, X, n * sizeof *Y, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
      return zs_cu_launched("zs_muon_cuda_whole: a copy");
    bs = gemm_rm(h, 0, 0, S, L, S, 1.0f, B, S, X, L, a, Y, L); /* Y = a X + B X */
    float *t = X;
    X = Y, Y = t;
  }
  if (bs != CUBLAS_STATUS_SUCCESS)
    return zs_err(ZS_ERR_DEVICE, "zs_muon_cuda_whole: cublasSgemm failed: %s",
                  cublasGetStatusString(bs));
  const double r = (double)rows, q = (double)cols;
  const float adj = c->adjust_lr == ZS_MUON_LR_MATCH_ADAMW ? (float)(0.2 * sqrt(fmax(r, q)))
                                                           : (float)sqrt(fmax(1.0, r / q));
  if (tr) /* X is s x l: x = X^T * adj */
    muon_transpose<<<grid, MUON_THREADS, 0, st>>>(X, x, (int64_t)s, (int64_t)l, adj, 1);
  else
    muon_scale<<<grid, MUON_THREADS, 0, st>>>(X, x, n, adj, 1);
  return zs_cu_launched("zs_muon_cuda_whole");
}

/* The update's element (muon.c's kernel): g is the whole step's direction. */
struct muon_op {
  zs_muon_coef k;
  template <typename TS>
  __device__ void operator()(float &p, TS *const *st, size_t i, float g) const {
    p = __fmaf_rn(k.neg_lr, g, __fmaf_rn(k.neg_lr_wd, p, p));
    (void)st, (void)i;
  }
};

extern "C" zs_status zs_muon_cuda_update(const void *coef, const zs_codec_dev *a) {
  const zs_muon_coef *c = (const zs_muon_coef *)coef;
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "zs_muon_cuda_update: coefficients are NULL");
  return zs_codec_cuda(muon_op{*c}, a, "zs_muon_cuda_update");
}
