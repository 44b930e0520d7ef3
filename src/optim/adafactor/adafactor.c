/* Adafactor (adafactor.h). Step t of a tensor viewed as rows x cols (a tensor of one dimension,
 * or a matrix with a dimension of 1, is a vector), with w = t^beta2_decay
 * (1 - torch's beta2_t), rho = min(lr, 1 / sqrt(t)), sums in double in element order:
 *
 *   G     = grad * gscale                                     (gather: channel 0)
 *   alpha = max(eps2, RMS(theta)) * rho                        (theta: the master before the step)
 *   matrix: R_i = fmaf(w, rowmean(G^2)_i - R_i, R_i), C_j = fmaf(w, colmean(G^2)_j - C_j, C_j),
 *           V_ij = R_i * C_j / max(mean(R), eps1)
 *   vector: V_i = fmaf(w, G_i^2 - V_i, V_i)
 *   U     = G / sqrt(max(V, eps1^2)),   O = U * (alpha / max(1, RMS(U) / d))
 *   p     = fmaf(-lr * wd, p, p);   p = p - O                  (the kernel)
 *
 * The state (one array, "variance") holds a matrix's R then C in its first rows + cols elements
 * (state_elems: the memory tiers keep no more; a whole range's reads say 0 for the rest), a
 * vector's V in every element; in bf16 with moment_dtype bf16. torch factors a
 * matrix with a dimension of 1 too; zshard keeps its exact second moment instead. */
#include "optim/adafactor/adafactor.h"

#include <math.h>
#include <string.h>

#include "base/bf16.h"
#include "base/error.h"
#include "optim/adafactor/adafactor_coef.h"
#include "optim/codec.h"
#ifdef ZS_HAVE_CUDA
#include "optim/adafactor/adafactor_cuda.h"
#endif

typedef zs_adafactor_coef adafactor_coef;

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n);

static void prepare(void *coef, const zs_config *c, int64_t t, double gscale, int decay) {
  adafactor_coef *k = coef;
  k->head.kernel = kernel;
  k->gscale = (float)gscale;
  k->w = (float)pow((double)t, (double)c->adafactor.beta2_decay);
  k->rho = (float)fmin((double)c->optim.lr, 1.0 / sqrt((double)t));
  k->eps1 = c->adafactor.eps1;
  k->eps2 = c->adafactor.eps2;
  k->d = c->adafactor.d;
  k->neg_lr_wd = decay ? (float)(-(double)c->optim.lr * (double)c->optim.weight_decay) : 0.0f;
}

static float state_at(const void *s, zs_dtype sdt, size_t i) {
  return sdt == ZS_BF16 ? zs_bf16_to_f32(((const uint16_t *)s)[i]) : ((const float *)s)[i];
}

/* Channels: 0 the scaled gradient, 1 the fp32 master, 2 the state. */
static void gather(const void *coef, const zs_opt_state *st, zs_dtype sdt, const void *grad,
                   zs_dtype gdt, float *const *in, size_t n) {
  const adafactor_coef *k = coef;
  for (size_t i = 0; i < n; i++) {
    const float g =
        gdt == ZS_BF16 ? zs_bf16_to_f32(((const uint16_t *)grad)[i]) : ((const float *)grad)[i];
    in[0][i] = g * k->gscale;
    in[1][i] = st->master[i];
    in[2][i] = state_at(st->state[0], sdt, i);
  }
}

static size_t work_floats(int64_t rows, int64_t cols) {
  return (size_t)(rows * cols + rows + cols);
}

/* The variance estimate of element (i, j): V[i * cols + j] for a vector (rows 1), else from the
   factors R, C and den. */
static float var_of(const float *V, const float *R, const float *C, float den, int64_t cols,
                    int64_t i, int64_t j) {
  return V ? V[i * cols + j] : R[i] * C[j] / den;
}

static void whole(const void *coef, float *const *ch, int64_t rows, int64_t cols, float *work) {
  const adafactor_coef *k = coef;
  const size_t n = (size_t)(rows * cols);
  float *G = ch[0], *th = ch[1];
  const float *S = ch[2];
  double sq = 0;
  for (size_t i = 0; i < n; i++)
    sq += (double)th[i] * (double)th[i];
  const float alpha = (float)fmax((double)k->eps2, sqrt(sq / (double)n)) * k->rho;
  const int factored = rows > 1 && cols > 1;
  float *R = work, *C = R + rows, *V = NULL, den = 1.0f;
  if (factored) {
    for (int64_t i = 0; i < rows; i++) {
      double s = 0;
      for (int64_t j = 0; j < cols; j++)
        s += (double)G[i * cols + j] * (double)G[i * cols + j];
      R[i] = fmaf(k->w, (float)(s / (double)cols) - S[i], S[i]);
    }
    for (int64_t j = 0; j < cols; j++) {
      double s = 0;
      for (int64_t i = 0; i < rows; i++)
        s += (double)G[i * cols + j] * (double)G[i * cols + j];
      C[j] = fmaf(k->w, (float)(s / (double)rows) - S[rows + j], S[rows + j]);
    }
    double rs = 0;
    for (int64_t i = 0; i < rows; i++)
      rs += (double)R[i];
    den = fmaxf((float)(rs / (double)rows), k->eps1);
  } else {
    V = C + cols;
    for (size_t i = 0; i < n; i++)
      V[i] = fmaf(k->w, G[i] * G[i] - S[i], S[i]);
  }
  const float floor = k->eps1 * k->eps1;
  double us = 0;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      const float u = G[i * cols + j] / sqrtf(fmaxf(var_of(V, R, C, den, cols, i, j), floor));
      us += (double)u * (double)u;
    }
  const float scale = alpha / (float)fmax(1.0, sqrt(us / (double)n) / (double)k->d);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      const size_t e = (size_t)(i * cols + j);
      G[e] = G[e] / sqrtf(fmaxf(var_of(V, R, C, den, cols, i, j), floor)) * scale;
    }
  if (factored) { /* the new state, over the master's channel (read above) */
    memset(th, 0, n * sizeof *th);
    memcpy(th, R, (size_t)rows * sizeof *th);
    memcpy(th + rows, C, (size_t)cols * sizeof *th);
  } else {
    memcpy(th, V, n * sizeof *th);
  }
}

/* A factored matrix keeps R and C alone (the packing drops the rest: shard/opt_pack.h). */
static size_t state_elems(int64_t rows, int64_t cols) {
  return (size_t)(rows > 1 && cols > 1 ? rows + cols : rows * cols);
}

static void store(const void *coef, void *const *state, zs_dtype sdt, const float *const *out,
                  size_t n) {
  for (size_t i = 0; i < n; i++)
    if (sdt == ZS_BF16)
      ((uint16_t *)state[0])[i] = zs_f32_to_bf16(out[1][i]);
    else
      ((float *)state[0])[i] = out[1][i];
  (void)coef;
}

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n) {
  const adafactor_coef *k = coef;
  for (size_t i = 0; i < n; i++)
    p[i] = fmaf(k->neg_lr_wd, p[i], p[i]) - g[i];
  (void)state, (void)sdt;
}

_Static_assert(sizeof(adafactor_coef) <= ZS_OPT_COEF_BYTES,
               "the coefficients fit the driver's room");

/* The codec's host updates in the modes with an fp32 master (the relative step reads it). */
static zs_status host_fn(const zs_opt_mode *m, zs_opt_host_fn *out) {
  if (m->master == ZS_MASTER_REMAINDER || m->master == ZS_MASTER_LEAN)
    return zs_err(ZS_ERR_INVALID_ARG, "Adafactor reads an fp32 master (its relative step): use "
                                      "master fp32 or params, not remainder or lean");
  return zs_codec_host_fn(m, out);
}

#ifdef ZS_HAVE_CUDA
/* The CUDA device's steps (adafactor_cuda.cu). A piece past what a tensor keeps has NULL state:
   its gather leaves channel 2's zeros, its store drops the values. */
static zs_status dev_gather(const void *coef, const zs_opt_state *st, zs_dtype sdt,
                            const void *grad, zs_dtype gdt, float *const *in, size_t n,
                            void *stream) {
  return zs_adafactor_cuda_gather(coef, st->master, st->state[0], sdt == ZS_BF16, grad, gdt, in, n,
                                  stream);
}

static zs_status dev_whole(const void *coef, float *const *ch, int64_t rows, int64_t cols,
                           float *work, void *blas, void *stream) {
  (void)blas;
  return zs_adafactor_cuda_whole(coef, ch, rows, cols, work, stream);
}

static zs_status dev_store(const void *coef, void *const *state, zs_dtype sdt,
                           const float *const *out, size_t n, void *stream) {
  (void)coef;
  return zs_adafactor_cuda_store(state[0], sdt == ZS_BF16, out, n, stream);
}

#endif

static const zs_optimizer adafactor = {.prepare = prepare,
                                       .host_fn = host_fn,
                                       .dev_codec = ZS_OPT_CUDA(zs_adafactor_cuda_update),
                                       .whole_in = 3,
                                       .whole_out = 2,
                                       .whole_vectors = 1,
                                       .gather = gather,
                                       .work_floats = work_floats,
                                       .whole = whole,
                                       .store = store,
                                       .state_elems = state_elems,
                                       .dev_gather = ZS_OPT_CUDA(dev_gather),
                                       .dev_whole = ZS_OPT_CUDA(dev_whole),
                                       .dev_store = ZS_OPT_CUDA(dev_store)};

static const zs_opt_shape adafactor_shape = {0, 1, 1, {"variance"}, {"v"}};

static const zs_opt_shape *shape(const zs_config *c) {
  (void)c;
  return &adafactor_shape;
}

/* Its own fields of the configuration (torch.optim.Adafactor's ranges). */
static zs_status check(const zs_config *c) {
  const float b = c->adafactor.beta2_decay, e1 = c->adafactor.eps1, e2 = c->adafactor.eps2;
  if (!(b <= 0) || !(e1 >= 0) || !(e2 >= 0) || !(c->adafactor.d >= 1) || !isfinite(b) ||
      !isfinite(e1) || !isfinite(e2) || !isfinite(c->adafactor.d))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "adafactor: beta2_decay %g must be <= 0, eps1 %g and eps2 %g >= 0, d %g >= 1",
                  (double)b, (double)e1, (double)e2, (double)c->adafactor.d);
  return ZS_OK;
}

const zs_opt_entry zs_opt_adafactor = {"adafactor", shape, check, &adafactor};
