/* Adafactor on the CUDA device (adafactor_cuda.h): adafactor.c's operations with the
   round-to-nearest intrinsics. The sums in double over a tensor (alpha's, the scale's) and over
   R (den's) are dsum_cuda.cuh's, over many blocks in fixed trees; a row's is one block per row; a
   column's is one thread per column, the rows in order, in fixed chunks of rows on a large matrix
   whose chunk sums then add in order. The scalars between kernels live in the channels' own
   floats once those are read: alpha in ch[1][0] (the master is read only for it), den and scale
   in ch[2] (the old state is read only for R, C or V). The sums' partials use the scratch no step
   uses: past R and C for a matrix (where a vector's V goes), where R and C go for a vector. */
#include "optim/adafactor/adafactor_cuda.h"
#include "optim/codec_cuda.cuh"
#include "optim/dsum_cuda.cuh"

#define AF_THREADS 256

/* The gather's element: adafactor.c's gather. */
template <typename TG, typename TS>
__global__ void af_gather(zs_adafactor_coef k, const float *master, const TS *state, const TG *grad,
                          float *g, float *th, float *s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    g[i] = __fmul_rn(zs_ld(&grad[i]), k.gscale);
    th[i] = master[i];
    if (state) s[i] = zs_ld(&state[i]);
  }
}

template <typename TG>
static void gather_launch(const zs_adafactor_coef *c, const float *master, const void *state,
                          int s_bf16, const void *grad, float *const *in, size_t n,
                          cudaStream_t st) {
  const unsigned b = zs_grid(n, AF_THREADS);
  if (s_bf16)
    af_gather<TG, zs_bf16><<<b, AF_THREADS, 0, st>>>(*c, master, (const zs_bf16 *)state,
                                                     (const TG *)grad, in[0], in[1], in[2], n);
  else
    af_gather<TG, float><<<b, AF_THREADS, 0, st>>>(*c, master, (const float *)state,
                                                   (const TG *)grad, in[0], in[1], in[2], n);
}

extern "C" zs_status zs_adafactor_cuda_gather(const zs_adafactor_coef *c, const float *master,
                                              const void *state, int s_bf16, const void *grad,
                                              zs_dtype gdt, float *const *in, size_t n,
                                              void *stream) {
  if (!c || !in || !zs_dt_ok(gdt))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_adafactor_cuda_gather: arguments");
  if (!n) return ZS_OK;
  if (!master || !grad)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_adafactor_cuda_gather: Adafactor reads an fp32 master and the gradient");
  if (gdt == ZS_BF16)
    gather_launch<zs_bf16>(c, master, state, s_bf16, grad, in, n, (cudaStream_t)stream);
  else
    gather_launch<float>(c, master, state, s_bf16, grad, in, n, (cudaStream_t)stream);
  return zs_cu_launched("zs_adafactor_cuda_gather");
}

/* alpha's terms th[i]^2, and alpha = max(eps2, RMS(th)) * rho into th[0] (th is read only for
   it; every read is before the write, in an earlier kernel). */
struct af_sq_th {
  const float *th;
  __device__ double operator()(size_t i) const { return __dmul_rn((double)th[i], (double)th[i]); }
};
struct af_alpha_set {
  zs_adafactor_coef k;
  float *th;
  size_t n;
  __device__ void operator()(double sq) const {
    th[0] = __fmul_rn((float)fmax((double)k.eps2, sqrt(sq / (double)n)), k.rho);
  }
};

/* R_i from row i's mean of G^2 (one block per row). */
__global__ void af_rows(zs_adafactor_coef k, const float *G, const float *S, float *R,
                        int64_t cols) {
  __shared__ double part[AF_THREADS];
  const int64_t i = blockIdx.x;
  double s = 0;
  for (int64_t j = threadIdx.x; j < cols; j += AF_THREADS) {
    const double g = (double)G[i * cols + j];
    s = __dadd_rn(s, __dmul_rn(g, g));
  }
  const double t = zs_dsum_tree<AF_THREADS>(part, s);
  if (threadIdx.x == 0) R[i] = __fmaf_rn(k.w, __fsub_rn((float)(t / (double)cols), S[i]), S[i]);
}

/* C_j from column j's mean of G^2 (one thread per column, the rows in order): a matrix of few
   rows or elements (af_col_chunks 0). */
__global__ void af_cols(zs_adafactor_coef k, const float *G, const float *S, float *C, int64_t rows,
                        int64_t cols) {
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= cols) return;
  double s = 0;
  for (int64_t i = 0; i < rows; i++) {
    const double g = (double)G[i * cols + j];
    s = __dadd_rn(s, __dmul_rn(g, g));
  }
  C[j] = __fmaf_rn(k.w, __fsub_rn((float)(s / (double)rows), S[rows + j]), S[rows + j]);
}

/* The fixed chunks of rows a column's sum goes over on a large matrix (0: one thread per column
   over all rows, af_cols): at most 64, of at least 32 rows; a function of the shape alone. Their
   sums (doubles) take chunks * cols of the scratch, which holds rows * cols floats. */
static int af_col_chunks(int64_t rows, int64_t cols) {
  if ((size_t)rows * (size_t)cols < ZS_DSUM_MIN_TERMS || rows < 64) return 0;
  return rows / 32 < 64 ? (int)(rows / 32) : 64;
}

/* Column j's sum of G^2 over the rows of chunk blockIdx.y, in order, into part[y * cols + j]. */
__global__ void af_cols_part(const float *G, double *part, int64_t rows, int64_t cols,
                             int64_t chunk) {
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= cols) return;
  const int64_t lo = blockIdx.y * chunk, hi = lo + chunk < rows ? lo + chunk : rows;
  double s = 0;
  for (int64_t i = lo; i < hi; i++) {
    const double g = (double)G[i * cols + j];
    s = __dadd_rn(s, __dmul_rn(g, g));
  }
  part[blockIdx.y * cols + j] = s;
}

/* C_j from column j's chunk sums, added in chunk order. */
__global__ void af_cols_fin(zs_adafactor_coef k, const double *part, int chunks, const float *S,
                            float *C, int64_t rows, int64_t cols) {
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= cols) return;
  double s = 0;
  for (int c = 0; c < chunks; c++)
    s = __dadd_rn(s, part[c * cols + j]);
  C[j] = __fmaf_rn(k.w, __fsub_rn((float)(s / (double)rows), S[rows + j]), S[rows + j]);
}

/* den's terms R_i, and den = max(mean(R), eps1) into *den (S, whose floats hold it, is read
   already). */
struct af_r {
  const float *R;
  __device__ double operator()(size_t i) const { return (double)R[i]; }
};
struct af_den_set {
  zs_adafactor_coef k;
  float *den;
  int64_t rows;
  __device__ void operator()(double t) const { *den = fmaxf((float)(t / (double)rows), k.eps1); }
};

/* A vector's V_i = fmaf(w, G_i^2 - S_i, S_i). */
__global__ void af_vec(zs_adafactor_coef k, const float *G, const float *S, float *V, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    V[i] = __fmaf_rn(k.w, __fsub_rn(__fmul_rn(G[i], G[i]), S[i]), S[i]);
}

/* u_ij = G_ij / sqrt(max(var_ij, eps1^2)). */
__device__ __forceinline__ float af_u(const float *G, const float *V, const float *R,
                                      const float *C, float den, int64_t cols, size_t e,
                                      float floor) {
  const float var = V ? V[e] : __fdiv_rn(__fmul_rn(R[e / (size_t)cols], C[e % (size_t)cols]), den);
  return __fdiv_rn(G[e], __fsqrt_rn(fmaxf(var, floor)));
}

/* The scale's terms u_e^2, and scale = alpha / max(1, RMS(U) / d) into *scale (alpha from
 *alpha). */
struct af_sq_u {
  zs_adafactor_coef k;
  const float *G, *V, *R, *C, *den;
  int64_t cols;
  __device__ double operator()(size_t e) const {
    const float floor = __fmul_rn(k.eps1, k.eps1), dn = V ? 1.0f : *den;
    const float u = af_u(G, V, R, C, dn, cols, e, floor);
    return __dmul_rn((double)u, (double)u);
  }
};
struct af_scale_set {
  zs_adafactor_coef k;
  const float *alpha;
  float *scale;
  size_t n;
  __device__ void operator()(double us) const {
    *scale = __fdiv_rn(*alpha, (float)fmax(1.0, sqrt(us / (double)n) / (double)k.d));
  }
};

/* G = G / sqrt(max(var, eps1^2)) * scale, -0 made +0 (the update). */
__global__ void af_out(zs_adafactor_coef k, float *G, const float *V, const float *R,
                       const float *C, const float *den, const float *scale, size_t n,
                       int64_t cols) {
  const float floor = __fmul_rn(k.eps1, k.eps1), dn = V ? 1.0f : *den, sc = *scale;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
       e += (size_t)gridDim.x * blockDim.x)
    G[e] = __fadd_rn(__fmul_rn(af_u(G, V, R, C, dn, cols, e, floor), sc), 0.0f);
}

/* The new state into th: R then C then zeros (factored), or V; -0 made +0. */
__global__ void af_state(float *th, const float *R, int64_t rows, int64_t cols, const float *V,
                         size_t n) {
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
       e += (size_t)gridDim.x * blockDim.x) {
    float v = V ? V[e] : e < (size_t)(rows + cols) ? R[e] : 0.0f; /* C follows R in work */
    th[e] = __fadd_rn(v, 0.0f);
  }
}

extern "C" zs_status zs_adafactor_cuda_whole(const zs_adafactor_coef *c, float *const *ch,
                                             int64_t rows, int64_t cols, float *work,
                                             void *stream) {
  if (!c || !ch || !work || rows < 1 || cols < 1)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_adafactor_cuda_whole: arguments");
  cudaStream_t st = (cudaStream_t)stream;
  const size_t n = (size_t)rows * (size_t)cols;
  float *G = ch[0], *th = ch[1], *S = ch[2];
  const int factored = rows > 1 && cols > 1;
  float *R = work, *C = R + rows, *V = factored ? NULL : C + cols;
  float *scr = factored ? C + cols : R; /* n floats (n + 1 for a vector) no step uses */
  const unsigned grid = zs_grid(n, AF_THREADS);
  zs_dsum(af_sq_th{th}, n, scr, af_alpha_set{*c, th, n}, st); /* th[0] = alpha */
  float *den = S, *scale = factored ? S + 1 : S; /* S is free once R, C or V are made */
  if (factored) {
    af_rows<<<(unsigned)rows, AF_THREADS, 0, st>>>(*c, G, S, R, cols);
    const unsigned cb = (unsigned)((cols + AF_THREADS - 1) / AF_THREADS);
    const int chunks = af_col_chunks(rows, cols);
    if (chunks) {
      double *part = zs_dsum_scratch(scr);
      af_cols_part<<<dim3(cb, (unsigned)chunks), AF_THREADS, 0, st>>>(G, part, rows, cols,
                                                                      (rows + chunks - 1) / chunks);
      af_cols_fin<<<cb, AF_THREADS, 0, st>>>(*c, part, chunks, S, C, rows, cols);
    } else {
      af_cols<<<cb, AF_THREADS, 0, st>>>(*c, G, S, C, rows, cols);
    }
    zs_dsum(af_r{R}, (size_t)rows, scr, af_den_set{*c, den, rows}, st);
  } else {
    af_vec<<<grid, AF_THREADS, 0, st>>>(*c, G, S, V, n);
  }
  zs_dsum(af_sq_u{*c, G, V, R, C, den, cols}, n, scr, af_scale_set{*c, th, scale, n}, st);
  af_out<<<grid, AF_THREADS, 0, st>>>(*c, G, V, R, C, den, scale, n, cols);
  af_state<<<grid, AF_THREADS, 0, st>>>(th, R, rows, cols, V, n);
  return zs_cu_launched("zs_adafactor_cuda_whole");
}

template <typename TS> __global__ void af_store(TS *state, const float *x, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    zs_st(&state[i], x[i]);
}

extern "C" zs_status zs_adafactor_cuda_store(void *state, int s_bf16, const float *const *out,
                                             size_t n, void *stream) {
  if (!state || !n) return ZS_OK;
  const unsigned b = zs_grid(n, AF_THREADS);
  if (s_bf16)
    af_store<zs_bf16><<<b, AF_THREADS, 0, (cudaStream_t)stream>>>((zs_bf16 *)state, out[1], n);
  else
    af_store<float><<<b, AF_THREADS, 0, (cudaStream_t)stream>>>((float *)state, out[1], n);
  return zs_cu_launched("zs_adafactor_cuda_store");
}

/* The update's element (adafactor.c's kernel): g is the whole step's update. */
struct af_op {
  zs_adafactor_coef k;
  template <typename TS>
  __device__ void operator()(float &p, TS *const *st, size_t i, float g) const {
    p = __fsub_rn(__fmaf_rn(k.neg_lr_wd, p, p), g);
    (void)st, (void)i;
  }
};

extern "C" zs_status zs_adafactor_cuda_update(const void *coef, const zs_codec_dev *a) {
  const zs_adafactor_coef *c = (const zs_adafactor_coef *)coef;
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "zs_adafactor_cuda_update: coefficients are NULL");
  if (a && (a->master == ZS_MASTER_REMAINDER || a->master == ZS_MASTER_LEAN))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_adafactor_cuda_update: Adafactor reads an fp32 master");
  return zs_codec_cuda(af_op{*c}, a, "zs_adafactor_cuda_update");
}
