/* Muon (muon.h). One step of a tensor viewed as rows x cols (its first dim by the rest), in this
 * float order (fmaf: one rounding):
 *
 *   g  = grad * gscale                                   (each element: gather)
 *   m' = fmaf(mu, m, omm * g)                            (omm = 1 - momentum)
 *   d  = nesterov ? fmaf(mu, m', omm * g) : m'
 *   O  = NS(D) * adjust                                  (the whole tensor D of d: whole)
 *   p  = fmaf(neg_lr_wd, p, p)                           (each element: the kernel;
 *   p  = fmaf(neg_lr, O, p)                               neg_lr_wd = -lr * wd)
 *
 * with m in the state dtype (bf16: rounded to nearest even on store, and m' as stored is what d
 * uses). NS is torch.optim.Muon's Newton-Schulz iteration in fp32 (torch runs it in bf16): X = D,
 * transposed when rows > cols (X is s x l, s <= l), X /= max(||X||_F, 1e-7) (the norm summed in
 * double, in element order), then ns_steps times A = X X^T, B = b A + c A A, X = a X + B X with
 * (a, b, c) = (3.4445, -4.7750, 2.0315), through OpenBLAS's sgemm; X transposed back. adjust is
 * sqrt(max(1, rows / cols)) (ZS_MUON_LR_ORIGINAL) or 0.2 sqrt(max(rows, cols))
 * (ZS_MUON_LR_MATCH_ADAMW); the weight decay uses the unadjusted lr, as torch does. */
#include "optim/muon/muon.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "base/bf16.h"
#include "base/error.h"
#include "optim/codec.h"
#include "optim/muon/muon_coef.h"
#ifdef ZS_HAVE_CUDA
#include "optim/muon/muon_cuda.h"
#endif

typedef zs_muon_coef muon_coef;

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n);

static void prepare(void *coef, const zs_config *c, int64_t t, double gscale, int decay) {
  muon_coef *k = coef;
  k->head.kernel = kernel;
  k->gscale = (float)gscale;
  k->momentum = c->muon.momentum;
  k->omm = (float)(1.0 - (double)c->muon.momentum);
  k->neg_lr = -c->optim.lr;
  k->neg_lr_wd = decay ? (float)(-(double)c->optim.lr * (double)c->optim.weight_decay) : 0.0f;
  k->nesterov = c->muon.nesterov != 0;
  k->ns_steps = c->muon.ns_steps;
  k->adjust_lr = c->muon.adjust_lr;
  (void)t;
}

/* The direction (channel 0), the momentum updated on the way. */
static void gather(const void *coef, const zs_opt_state *st, zs_dtype sdt, const void *grad,
                   zs_dtype gdt, float *const *in, size_t n) {
  const muon_coef *k = coef;
  float *m32 = st->state[0], *dir = in[0];
  uint16_t *m16 = st->state[0];
  const float *g32 = grad;
  const uint16_t *g16 = grad;
  for (size_t i = 0; i < n; i++) {
    const float g = (gdt == ZS_BF16 ? zs_bf16_to_f32(g16[i]) : g32[i]) * k->gscale;
    float m = fmaf(k->momentum, sdt == ZS_BF16 ? zs_bf16_to_f32(m16[i]) : m32[i], k->omm * g);
    if (sdt == ZS_BF16) {
      m16[i] = zs_f32_to_bf16(m);
      m = zs_bf16_to_f32(m16[i]);
    } else {
      m32[i] = m;
    }
    dir[i] = k->nesterov ? fmaf(k->momentum, m, k->omm * g) : m;
  }
}

static size_t work_floats(int64_t rows, int64_t cols) {
  const size_t s = (size_t)(rows < cols ? rows : cols), l = (size_t)(rows < cols ? cols : rows);
  return 2 * s * l + 2 * s * s; /* X, Y (s x l), A, B (s x s) */
}

static void whole(const void *coef, float *const *ch, int64_t rows, int64_t cols, float *work) {
  const muon_coef *k = coef;
  float *x = ch[0];
  const int tr = rows > cols;
  const size_t s = (size_t)(tr ? cols : rows), l = (size_t)(tr ? rows : cols), n = s * l;
  float *X = work, *Y = X + n, *A = Y + n, *B = A + s * s;
  if (tr) { /* x is l x s: X = x^T */
    for (size_t i = 0; i < l; i++)
      for (size_t j = 0; j < s; j++)
        X[j * l + i] = x[i * s + j];
  } else {
    memcpy(X, x, n * sizeof *X);
  }
  double sq = 0;
  for (size_t i = 0; i < n; i++)
    sq += (double)X[i] * (double)X[i];
  const float inv = (float)(1.0 / fmax(sqrt(sq), 1e-7));
  for (size_t i = 0; i < n; i++)
    X[i] *= inv;
  const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
  const blasint S = (blasint)s, L = (blasint)l;
  for (int it = 0; it < k->ns_steps; it++) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, L, 1.0f, X, L, X, L, 0.0f, A, S);
    memcpy(B, A, s * s * sizeof *B);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, S, S, c, A, S, A, S, b, B, S);
    memcpy(Y, X, n * sizeof *Y);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, L, S, 1.0f, B, S, X, L, a, Y, L);
    float *t = X;
    X = Y, Y = t;
  }
  const double r = (double)rows, q = (double)cols;
  const float adj = k->adjust_lr == ZS_MUON_LR_MATCH_ADAMW ? (float)(0.2 * sqrt(fmax(r, q)))
                                                           : (float)sqrt(fmax(1.0, r / q));
  if (tr) {
    for (size_t i = 0; i < l; i++)
      for (size_t j = 0; j < s; j++)
        x[i * s + j] = X[j * l + i] * adj;
  } else {
    for (size_t i = 0; i < n; i++)
      x[i] = X[i] * adj;
  }
}

static void kernel(const void *coef, float *p, void *const *state, zs_dtype sdt, const float *g,
                   size_t n) {
  const muon_coef *k = coef;
  for (size_t i = 0; i < n; i++)
    p[i] = fmaf(k->neg_lr, g[i], fmaf(k->neg_lr_wd, p[i], p[i]));
  (void)state, (void)sdt;
}

_Static_assert(sizeof(muon_coef) <= ZS_OPT_COEF_BYTES, "the coefficients fit the driver's room");

#ifdef ZS_HAVE_CUDA
/* The CUDA device's steps (muon_cuda.cu): the gather and the update bit-identical to the CPU's,
   Newton-Schulz through cuBLAS. */
static zs_status dev_gather(const void *coef, const zs_opt_state *st, zs_dtype sdt,
                            const void *grad, zs_dtype gdt, float *const *in, size_t n,
                            void *stream) {
  return zs_muon_cuda_gather(coef, st->state[0], sdt == ZS_BF16, grad, gdt, in[0], n, stream);
}

static zs_status dev_whole(const void *coef, float *const *ch, int64_t rows, int64_t cols,
                           float *work, void *blas, void *stream) {
  return zs_muon_cuda_whole(coef, ch[0], rows, cols, work, blas, stream);
}

#endif

/* The host updates: the codec around the kernel, in every precision mode. */
static const zs_optimizer muon = {.prepare = prepare,
                                  .host_fn = zs_codec_host_fn,
                                  .dev_codec = ZS_OPT_CUDA(zs_muon_cuda_update),
                                  .whole_in = 1,
                                  .whole_out = 1,
                                  .gather = gather,
                                  .work_floats = work_floats,
                                  .whole = whole,
                                  .dev_blas = 1,
                                  .dev_gather = ZS_OPT_CUDA(dev_gather),
                                  .dev_whole = ZS_OPT_CUDA(dev_whole)};

static const zs_opt_shape muon_shape = {0, 1, 1, {"momentum_buffer"}, {"m"}};

static const zs_opt_shape *shape(const zs_config *c) {
  (void)c;
  return &muon_shape;
}

/* Its own fields of the configuration. */
static zs_status check(const zs_config *c) {
  if (!(c->muon.momentum >= 0 && c->muon.momentum < 1))
    return zs_err(ZS_ERR_INVALID_ARG, "muon.momentum %g must be in [0, 1)",
                  (double)c->muon.momentum);
  if (c->muon.ns_steps < 1 || c->muon.ns_steps > 100)
    return zs_err(ZS_ERR_INVALID_ARG, "muon.ns_steps %d must be in 1..100 (5 is usual)",
                  c->muon.ns_steps);
  if (c->muon.adjust_lr != ZS_MUON_LR_ORIGINAL && c->muon.adjust_lr != ZS_MUON_LR_MATCH_ADAMW)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "muon.adjust_lr %d: use ZS_MUON_LR_ORIGINAL (0) or ZS_MUON_LR_MATCH_ADAMW (1)",
                  c->muon.adjust_lr);
  return ZS_OK;
}

const zs_opt_entry zs_opt_muon = {"muon", shape, check, &muon};
