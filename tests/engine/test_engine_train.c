/* Trains the synthetic model (tests/engine/engine_model.h) through the engine and checks the
 * result:
 *  - against an independent float64 AdamW + global-norm clipping written here (always), and
 *  - optionally against a file of final params from another run (--compare FILE): bit-exact by
 *    default (deterministic mode), or to --tol relative.
 * Rank r in micro-step m trains on batch step*(N*M) + m*N + r (the engine's global order), so
 * every split of a step's N*M micro-batches into ranks x micro-steps sees the same batches in the
 * same order.
 * Usage: test_engine_train [--stage S] [--micro M] [--steps K] [--det 0|1] [--bf16]
 *        [--clip X] [--wd X] [--lr X] [--prefetch P] [--group G] [--write F] [--compare F]
 *        [--tol X] [--reftol X] [--skip-nonfinite-at K] [--offload BITS] [--device cpu|cuda]
 *        [--bucket BYTES] [--reduce-bf16 0|1 (default: the params' dtype)]
 *        [--load DIR] [--save DIR] [--defaults 1] [--master 0|1|3 (zs_config.master; 3 lean:
 *        the reference rounds p to bf16 stochastically with the bits zshard.h defines)]
 *        [--moments-bf16 0|1 (zs_config.moment_dtype; the reference rounds m, v to bf16)]
 *        [--sgd MOMENTUM --dampening D --nesterov 0|1 (zs_config.optimizer = ZS_OPT_SGD; the
 *        reference is then torch.optim.SGD's update, written here in float64)]
 *        [--lion 1 (zs_config.optimizer = ZS_OPT_LION, betas 0.9, 0.99; the reference is the
 *        Lion paper's update with decoupled decay, written here in float64)]
 *        [--state 1 (after the last step every tensor's optimizer state by name,
 *        zs_unit_get_state, against the reference's m and v; then zs_unit_set_state of twice the
 *        values reads back exactly)]
 *        [--peek 1 (each step reads every tensor with zs_unit_get_param and zs_unit_get_grad
 *        between the backward and zs_engine_step: the values before the update and the mean
 *        gradient, checked against the reference)]
 *        [--set-grad 1 (with --peek: zs_unit_set_grad writes half of head.w's gradient, which
 *        zs_unit_get_grad then reads back, and the reference halves it before the norm)]
 *        [--meta 1 (--save stores a blob naming its step, zs_engine_set_user_meta; --load checks
 *        that zs_engine_user_meta gives it back)]
 *        [--empty 1 (unit tiny gets a zero-element tensor of shape 0 x 4 before its own: the
 *        same training, the empty tensor set, read and checkpointed as any other)]
 *        [--groups 1 (two parameter groups besides the configuration's, test_groups below, on
 *        some tensors and units; the reference takes each tensor's group's hyperparameters);
 *        --groups 2: the same with group 1 on Lion and group 2 on SGD (momentum 0.8), each
 *        group's optimizer its own (zs_param_group.optimizer)]
 *        [--muon 1|2 (the matrices embed.w and block.w in a group on Muon beside AdamW, against
 *        a float64 Muon written from the algorithm; 1: zshard.h's defaults, 2: momentum 0.9
 *        without nesterov, 3 Newton-Schulz steps, ZS_MUON_LR_MATCH_ADAMW)]
 *        [--wide 1 (embed.w is 5 x 7 instead of 7 x 5: a matrix with fewer rows than columns,
 *        which Muon orthogonalises untransposed, beside the tall block.w; the same elements)]
 *        [--adafactor 1 (two matrices and two vectors in a group on Adafactor beside AdamW,
 *        against a float64 Adafactor written from torch.optim.Adafactor's algorithm)]
 *        [--accum-fp32 1 (zs_config.grad_accum_fp32 with --bf16 1: the reference sums the
 *        backward's bf16 gradients of each micro-batch in float64) --statetol X (--state's
 *        tolerance; default --reftol)]
 *        [--ties-away 0|1 (the test hook: ZS_MASTER_FP32 rounds its bf16 compute copy ties away
 *        from zero, as ZS_MASTER_REMAINDER does; src/base/round_hook.h)]
 *        [--load DIR] [--save DIR] [--defaults 1] [--budget-frac F] [--budget-free 1]
 * --budget-frac F (0..1) sets an offload budget F of the way from the least budget the model fits
 * (every unit on the host) to the device bytes of no offload (zs_plan_model_units says both), and
 * checks that the engine places the units zs_plan_placement_units says (0 < F < 1 here: some units
 * on the host, some on the device).
 * --budget-free 1 sets offload_budget_bytes = ZS_BUDGET_FREE (the budget measured at commit) and
 * checks that zs_engine_info says so; on a machine with room, every unit stays on the device.
 * --defaults 1 leaves the AdamW fields as zs_config_default fills them and gives the reference the
 * defaults zshard.h documents (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01, no clip).
 * --load DIR resumes from a checkpoint (zs_engine_load) and trains from its step on to --steps;
 * --save DIR saves one (zs_engine_save) after the last step. The float64 reference replays the
 * steps before the checkpoint, so a resumed run is checked against the whole run.
 * With --device cuda the "backward" copies params to the host and grads back (cudaMemcpy on the
 * engine stream's device); without a GPU it prints one SKIP line and exits 0. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <unistd.h>

#ifdef ZS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "engine_model.h"
#include "base/bf16.h"
#include "base/round_hook.h"
#include "device/device.h"
#include "zs_test.h"

typedef struct {
  int stage, micro, steps, det, bf16, prefetch, group, nonfinite_at, offload, cuda, bucket;
  int reduce;   /* -1: as the params, 0: fp32, 1: bf16 */
  int shard[3]; /* zs_config.shard_params, shard_grads, shard_optimizer (ZS_SHARD_*) */
  int split;    /* the backward adds each gradient in two += (g - h, then h; h = 0.3 g) */
  int defaults; /* leave zs_config_default's AdamW values; the reference uses zshard.h's */
  int master;   /* zs_config.master (ZS_MASTER_FP32 / ZS_MASTER_PARAMS / ZS_MASTER_LEAN) */
  int m16;      /* zs_config.moment_dtype = ZS_BF16 */
  int sgd;      /* zs_config.optimizer = ZS_OPT_SGD, with momentum, dampening, nesterov */
  float momentum, dampening;
  int nesterov;
  int lion;      /* zs_config.optimizer = ZS_OPT_LION (betas 0.9, 0.99) */
  int groups;    /* --groups: test_groups on the tensors test_group_of says */
  int muon;      /* --muon: the matrices embed.w and block.w in a group on Muon (muon_group) */
  int adafactor; /* --adafactor: embed.w, block.w, block.c and head.w in a group on Adafactor */
  int empty;     /* --empty: a zero-element tensor first in unit tiny */
  int wide;      /* --wide: embed.w 5 x 7 */
  int meta;      /* --meta: a user blob saved with the checkpoint and checked after a load */
  int peek;      /* --peek: zs_unit_get_param inside each step, before the update */
  int setgrad;   /* --set-grad: zs_unit_set_grad halves head.w's gradient in every step */
  int state;     /* --state: zs_unit_get_state / zs_unit_set_state after the last step */
  int nograd;    /* --nograd: zs_unit_no_grad on the units nograd_unit says */
  int accum;     /* --accum-fp32: zs_config.grad_accum_fp32; the reference's gradient is the sum of
                    the backward's bf16 micro-batch gradients (from the bf16 compute copy) */
  float clip, wd, lr;
  double tol, reftol, statetol; /* statetol: --state's (default reftol) */
  double budget;                /* --budget-frac; < 0: no budget */
  int budget_free;              /* --budget-free: offload_budget_bytes = ZS_BUDGET_FREE */
  const char *write, *compare, *load, *save;
} opts;

static void parse(int argc, char **argv, opts *o) {
  *o = (opts){.stage = 3,
              .micro = 1,
              .steps = 6,
              .det = 1,
              .prefetch = 1,
              .nonfinite_at = -1,
              .reduce = -1,
              .shard = {ZS_SHARD_AS_STAGE, ZS_SHARD_AS_STAGE, ZS_SHARD_AS_STAGE},
              .clip = 0.5f,
              .wd = 0.1f,
              .lr = 0.05f,
              .reftol = 2e-5,
              .statetol = -1,
              .budget = -1};
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--stage"))
      o->stage = atoi(v);
    else if (!strcmp(k, "--micro"))
      o->micro = atoi(v);
    else if (!strcmp(k, "--steps"))
      o->steps = atoi(v);
    else if (!strcmp(k, "--det"))
      o->det = atoi(v);
    else if (!strcmp(k, "--bf16"))
      o->bf16 = atoi(v);
    else if (!strcmp(k, "--prefetch"))
      o->prefetch = atoi(v);
    else if (!strcmp(k, "--group"))
      o->group = atoi(v);
    else if (!strcmp(k, "--offload"))
      o->offload = atoi(v);
    else if (!strcmp(k, "--budget-frac"))
      o->budget = atof(v);
    else if (!strcmp(k, "--budget-free"))
      o->budget_free = atoi(v);
    else if (!strcmp(k, "--bucket"))
      o->bucket = atoi(v);
    else if (!strcmp(k, "--reduce-bf16"))
      o->reduce = atoi(v);
    else if (!strcmp(k, "--device"))
      o->cuda = !strcmp(v, "cuda");
    else if (!strcmp(k, "--clip"))
      o->clip = (float)atof(v);
    else if (!strcmp(k, "--wd"))
      o->wd = (float)atof(v);
    else if (!strcmp(k, "--lr"))
      o->lr = (float)atof(v);
    else if (!strcmp(k, "--tol"))
      o->tol = atof(v);
    else if (!strcmp(k, "--reftol"))
      o->reftol = atof(v);
    else if (!strcmp(k, "--statetol"))
      o->statetol = atof(v);
    else if (!strcmp(k, "--accum-fp32"))
      o->accum = atoi(v);
    else if (!strcmp(k, "--nograd"))
      o->nograd = atoi(v);
    else if (!strcmp(k, "--write"))
      o->write = v;
    else if (!strcmp(k, "--load"))
      o->load = v;
    else if (!strcmp(k, "--save"))
      o->save = v;
    else if (!strcmp(k, "--compare"))
      o->compare = v;
    else if (!strcmp(k, "--defaults"))
      o->defaults = atoi(v);
    else if (!strcmp(k, "--split-adds"))
      o->split = atoi(v);
    else if (!strcmp(k, "--moments-bf16"))
      o->m16 = atoi(v);
    else if (!strcmp(k, "--sgd"))
      o->sgd = 1, o->momentum = (float)atof(v);
    else if (!strcmp(k, "--lion"))
      o->lion = atoi(v);
    else if (!strcmp(k, "--groups"))
      o->groups = atoi(v);
    else if (!strcmp(k, "--muon"))
      o->muon = atoi(v);
    else if (!strcmp(k, "--adafactor"))
      o->adafactor = atoi(v);
    else if (!strcmp(k, "--empty"))
      o->empty = atoi(v);
    else if (!strcmp(k, "--wide"))
      o->wide = atoi(v);
    else if (!strcmp(k, "--meta"))
      o->meta = atoi(v);
    else if (!strcmp(k, "--peek"))
      o->peek = atoi(v);
    else if (!strcmp(k, "--set-grad"))
      o->setgrad = atoi(v);
    else if (!strcmp(k, "--state"))
      o->state = atoi(v);
    else if (!strcmp(k, "--dampening"))
      o->dampening = (float)atof(v);
    else if (!strcmp(k, "--nesterov"))
      o->nesterov = atoi(v);
    else if (!strcmp(k, "--master"))
      o->master = atoi(v);
    else if (!strcmp(k, "--ties-away"))
      zs_test_hook_fp32_ties_away(atoi(v));
    else if (!strcmp(k, "--shard-params"))
      o->shard[0] = atoi(v);
    else if (!strcmp(k, "--shard-grads"))
      o->shard[1] = atoi(v);
    else if (!strcmp(k, "--shard-optimizer"))
      o->shard[2] = atoi(v);
    else if (!strcmp(k, "--skip-nonfinite-at"))
      o->nonfinite_at = atoi(v);
    else {
      fprintf(stderr, "unknown option %s\n", k);
      exit(2);
    }
  }
}

/* ---- float64 reference: textbook AdamW with decoupled decay and global-norm clipping ---- */
typedef struct {
  double *p, *m, *v;
  double *g;             /* the last step's mean gradient (before clipping) */
  int64_t t;             /* completed steps */
  int64_t ut[TM_NUNITS]; /* each unit's own (--nograd: a unit without a gradient stays behind) */
} ref_state;

/* The tensor (*u, *k) that global element gi belongs to. */
static void ref_tensor(int64_t gi, int *u, int *k) {
  for (*u = 0; *u < TM_NUNITS; (*u)++)
    for (*k = 0; *k < tm_units[*u].ntensors; (*k)++) {
      int64_t b = tm_base(*u, *k);
      if (gi >= b && gi < b + tm_numel(*u, *k)) return;
    }
}

/* --groups: two groups besides the configuration's (their momentum is used only with SGD, and
   is 0 there when the configuration's is: a plain SGD keeps no buffer), and each tensor's group:
   embed.w and the whole head in group 1, block.w and block.ln in group 2 (the unit put there
   whole, then block.c back in group 0), the rest in group 0. */
static const zs_param_group test_groups[2] = {
    {sizeof(zs_param_group), 0.5f, 0.0f, 0.8f, 0.99f, 1e-6f, 0.5f, 0},
    {sizeof(zs_param_group), 2.0f, 0.3f, 0.95f, 0.98f, 1e-7f, 0.8f, 0}};
static int test_group_of(int u, int k) {
  if ((u == 0 && k == 0) || u == 3) return 1;
  if (u == 2 && k < 2) return 2;
  return 0;
}

/* The reference's optimizers (ref_opt_of). */
enum { REF_ADAMW, REF_SGD, REF_LION, REF_MUON, REF_ADAFACTOR };

/* --muon: its group (lr 4 times the engine's, weight decay 0.05) and its tensors. */
static const float muon_lr_scale = 4.0f, muon_wd = 0.05f;
static int is_muon_tensor(int u, int k) {
  return (u == 0 || u == 2) && k == 0;
}
/* --adafactor: its group (lr 0.2 times the engine's: 0.01, torch's default; decay 0.02) and its
   tensors (embed.w 7 x 5, block.w 13 x 3 factored; block.c and head.w vectors). */
static const float af_lr_scale = 0.2f, af_wd = 0.02f;
static int is_af_tensor(int u, int k) {
  return ((u == 0 || u == 2) && k == 0) || (u == 2 && k == 2) || u == 3;
}

/* Element gi's optimizer: the configuration's; with --groups 2 group 1's is Lion and group 2's
   SGD (their momentum 0.8), beside the configuration's AdamW. */
static int ref_opt_of(const opts *o, int64_t gi) {
  const int cfg = o->sgd ? REF_SGD : o->lion ? REF_LION : REF_ADAMW;
  int u, k;
  ref_tensor(gi, &u, &k);
  if (o->muon) return is_muon_tensor(u, k) ? REF_MUON : cfg;
  if (o->adafactor) return is_af_tensor(u, k) ? REF_ADAFACTOR : cfg;
  if (o->groups != 2) return cfg;
  const int g = test_group_of(u, k);
  return g == 1 ? REF_LION : g == 2 ? REF_SGD : cfg;
}

/* Element gi's hyperparameters: the configuration's, or with --groups its tensor's group's. */
typedef struct {
  double lr, wd, b1, b2, eps, mom;
} ref_hp;
static ref_hp ref_hp_of(const opts *o, int64_t gi) {
  ref_hp h = {o->lr, o->wd, 0.9, o->lion ? 0.99 : 0.999, 1e-8, o->momentum};
  int u, k;
  ref_tensor(gi, &u, &k);
  if (o->muon && is_muon_tensor(u, k)) {
    h.lr = (float)(o->lr * muon_lr_scale);
    h.wd = muon_wd;
  }
  if (o->adafactor && is_af_tensor(u, k)) {
    h.lr = (float)(o->lr * af_lr_scale);
    h.wd = af_wd;
  }
  const int g = o->groups ? test_group_of(u, k) : 0;
  if (g > 0) {
    const zs_param_group *t = &test_groups[g - 1];
    h = (ref_hp){(float)(o->lr * t->lr_scale),
                 t->weight_decay,
                 t->beta1,
                 t->beta2,
                 t->eps,
                 o->momentum != 0 || o->groups == 2 ? t->momentum : 0.0f};
  }
  if (tm_units[u].t[k].no_weight_decay) h.wd = 0;
  return h;
}

/* The units as zs_plan_model_units sees them: each tensor's group's optimizer and momentum (the
   reference's), so a budget's placement counts the state arrays each unit keeps. */
static void plan_units_of(const opts *o, zs_plan_unit *pu, int (*opt)[TM_MAXT],
                          float (*mom)[TM_MAXT]) {
  static const char *const name[] = {"adamw", "sgd", "lion", "muon", "adafactor"};
  for (int u = 0; u < TM_NUNITS; u++) {
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      const int64_t gi = tm_base(u, k);
      ZS_OK_OR_DIE(zs_optimizer_id(name[ref_opt_of(o, gi)], &opt[u][k]));
      mom[u][k] = (float)ref_hp_of(o, gi).mom;
    }
    pu[u] = (zs_plan_unit){tm_units[u].ntensors, tm_units[u].t, opt[u], 0, mom[u]};
  }
}

/* Lean mode's rounding, from zshard.h's text: the 16 random bits of element `off` of unit `unit`
   at step t (seed 0), and p rounded to bf16 with them (up from the truncated magnitude when its
   low 16 bits plus r reach 2^16, never past bf16's largest finite). */
static uint64_t lean_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t lean_fmix32(uint32_t x) {
  x = (x ^ (x >> 16)) * 0x85ebca6bu;
  x = (x ^ (x >> 13)) * 0xc2b2ae35u;
  return x ^ (x >> 16);
}
static double lean_round(double p, int64_t t, int64_t gi) {
  int unit = 0;
  while (unit + 1 < TM_NUNITS && gi >= tm_base(unit + 1, 0))
    unit++;
  const uint64_t off = (uint64_t)(gi - tm_base(unit, 0));
  const uint64_t K =
      lean_mix64(lean_mix64(lean_mix64(0x9e3779b97f4a7c15ull) + (uint64_t)t) + (uint64_t)unit);
  const uint64_t q = off / 2; /* elements 2q, 2q + 1 share one hash (low, high half) */
  const uint32_t h = lean_fmix32((uint32_t)q ^ (uint32_t)K ^
                                 lean_fmix32((uint32_t)(q >> 32) ^ (uint32_t)(K >> 32)));
  const uint32_t r = off % 2 == 0 ? (h & 0xffffu) : (h >> 16);
  const float f = (float)p;
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t mag = ((u & 0x7fffffffu) >> 16) + (((u & 0xffffu) + r) >> 16);
  if (mag > 0x7f7fu) mag = 0x7f7fu;
  return zs_bf16_to_f32((uint16_t)(((u >> 16) & 0x8000u) | mag));
}

/* Muon's orthogonalisation in float64, from the algorithm (Newton-Schulz quintic,
   torch.optim.Muon's coefficients and norm floor): x (rows x cols, row-major) in place, times the
   lr adjustment. */
static void ref_newton_schulz(double *x, int64_t rows, int64_t cols, int steps, int match_adamw) {
  const int tr = rows > cols;
  const int64_t s = tr ? cols : rows, l = tr ? rows : cols;
  double *X = malloc((size_t)(s * l) * sizeof *X), *Y = malloc((size_t)(s * l) * sizeof *Y);
  double *A = malloc((size_t)(s * s) * sizeof *A), *B = malloc((size_t)(s * s) * sizeof *B);
  double nrm = 0;
  for (int64_t i = 0; i < s; i++)
    for (int64_t j = 0; j < l; j++) {
      X[i * l + j] = tr ? x[j * s + i] : x[i * l + j];
      nrm += X[i * l + j] * X[i * l + j];
    }
  nrm = fmax(sqrt(nrm), 1e-7);
  for (int64_t i = 0; i < s * l; i++)
    X[i] /= nrm;
  for (int it = 0; it < steps; it++) {
    for (int64_t i = 0; i < s; i++)
      for (int64_t j = 0; j < s; j++) {
        double a = 0;
        for (int64_t q = 0; q < l; q++)
          a += X[i * l + q] * X[j * l + q];
        A[i * s + j] = a;
      }
    for (int64_t i = 0; i < s; i++)
      for (int64_t j = 0; j < s; j++) {
        double aa = 0;
        for (int64_t q = 0; q < s; q++)
          aa += A[i * s + q] * A[q * s + j];
        B[i * s + j] = -4.7750 * A[i * s + j] + 2.0315 * aa;
      }
    for (int64_t i = 0; i < s; i++)
      for (int64_t j = 0; j < l; j++) {
        double bx = 0;
        for (int64_t q = 0; q < s; q++)
          bx += B[i * s + q] * X[q * l + j];
        Y[i * l + j] = 3.4445 * X[i * l + j] + bx;
      }
    memcpy(X, Y, (size_t)(s * l) * sizeof *X);
  }
  const double adj = match_adamw ? 0.2 * sqrt(fmax((double)rows, (double)cols))
                                 : sqrt(fmax(1.0, (double)rows / (double)cols));
  for (int64_t i = 0; i < s; i++)
    for (int64_t j = 0; j < l; j++)
      *(tr ? &x[j * s + i] : &x[i * l + j]) = X[i * l + j] * adj;
  free(X), free(Y), free(A), free(B);
}

/* --muon: Muon's momentum and each matrix's orthogonalised direction, into o_out (per element;
   the parameter update itself is the per-element loop's). */
static void ref_muon_dirs(ref_state *r, const opts *o, const double *g, double clip, int skip,
                          double *o_out) {
  const double mu = o->muon == 2 ? 0.9 : 0.95;
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      if (!is_muon_tensor(u, k) || u == skip) continue;
      const int64_t b = tm_base(u, k), n = tm_numel(u, k), rows = tm_units[u].t[k].shape[0];
      for (int64_t i = b; i < b + n; i++) {
        const double gi = g[i] * clip;
        r->m[i] = mu * r->m[i] + (1 - mu) * gi;
        if (o->m16) r->m[i] = zs_bf16_to_f32(zs_f32_to_bf16((float)r->m[i]));
        o_out[i] = o->muon == 2 ? r->m[i] : (1 - mu) * gi + mu * r->m[i];
      }
      ref_newton_schulz(o_out + b, rows, n / rows, o->muon == 2 ? 3 : 5, o->muon == 2);
    }
}

/* --adafactor: each tensor's update O (torch.optim.Adafactor's algorithm in float64: the relative
   step from the params before the step, factored second moments for a matrix with both
   dimensions above 1, the exact one otherwise, update clipping at d = 1) into o_out, the state
   (R then C, or V) kept in r->m over the tensor's elements. */
static void ref_adafactor(ref_state *r, const opts *o, const double *g, double clip, int skip,
                          double *o_out) {
  const double eps1 = 1.1920929e-07, eps2 = 1e-3;
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      if (!is_af_tensor(u, k) || u == skip) continue;
      const int64_t b = tm_base(u, k), n = tm_numel(u, k), rows = tm_units[u].t[k].shape[0];
      const int64_t cols = n / rows;
      const double t = (double)r->ut[u], w = pow(t, -0.8);
      const double rho = fmin(o->lr * af_lr_scale, 1 / sqrt(t));
      double sq = 0, us = 0;
      for (int64_t i = 0; i < n; i++)
        sq += r->p[b + i] * r->p[b + i];
      const double alpha = fmax(eps2, sqrt(sq / (double)n)) * rho;
      double *G = malloc((size_t)n * sizeof *G), *V = malloc((size_t)n * sizeof *V);
      for (int64_t i = 0; i < n; i++)
        G[i] = g[b + i] * clip;
      double *st = r->m + b;
      if (rows > 1 && cols > 1) {
        double *R = st, *C = st + rows, mr = 0;
        for (int64_t i = 0; i < rows; i++) {
          double s = 0;
          for (int64_t j = 0; j < cols; j++)
            s += G[i * cols + j] * G[i * cols + j];
          R[i] += w * (s / (double)cols - R[i]);
        }
        for (int64_t j = 0; j < cols; j++) {
          double s = 0;
          for (int64_t i = 0; i < rows; i++)
            s += G[i * cols + j] * G[i * cols + j];
          C[j] += w * (s / (double)rows - C[j]);
        }
        for (int64_t i = 0; i < rows; i++)
          mr += R[i] / (double)rows;
        for (int64_t i = 0; i < rows; i++)
          for (int64_t j = 0; j < cols; j++)
            V[i * cols + j] = R[i] * C[j] / fmax(mr, eps1);
      } else {
        for (int64_t i = 0; i < n; i++)
          V[i] = st[i] += w * (G[i] * G[i] - st[i]);
      }
      for (int64_t i = 0; i < n; i++) {
        o_out[b + i] = G[i] / sqrt(fmax(V[i], eps1 * eps1));
        us += o_out[b + i] * o_out[b + i];
      }
      const double den = fmax(1.0, sqrt(us / (double)n));
      for (int64_t i = 0; i < n; i++)
        o_out[b + i] *= alpha / den;
      if (o->m16)
        for (int64_t i = 0; i < n; i++)
          st[i] = zs_bf16_to_f32(zs_f32_to_bf16((float)st[i]));
      free(G);
      free(V);
    }
}

/* A group on optimizer `name` (lr_scale, weight decay wd) holding the tensors `in` says. */
static void group_on(zs_engine *e, zs_unit **units, const char *name, float lr_scale, float wd,
                     int (*in)(int u, int k)) {
  zs_param_group g;
  int id = -1;
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  g.optimizer = name, g.lr_scale = lr_scale, g.weight_decay = wd;
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++)
      if (in(u, k)) ZS_OK_OR_DIE(zs_unit_set_group(units[u], k, id));
}

/* --nograd: the unit that gets no gradient in step s (zs_unit_no_grad), or -1: in steps 1, 4, 7,
   ... unit s mod TM_NUNITS. */
static int nograd_unit(const opts *o, int s) {
  return o->nograd && s % 3 == 1 ? s % TM_NUNITS : -1;
}

/* One step of the reference; unit `skip` (-1: none) gets no gradient: it is out of the norm and
   keeps its values, state and step count, as torch.optim does with a parameter whose grad is None.
 */
static void ref_step(ref_state *r, const opts *o, int world, int64_t first_batch, int nonfinite,
                     int skip) {
  const int64_t n = tm_total(), nb = (int64_t)world * o->micro;
  double *g = calloc((size_t)n, sizeof *g);
  int *unit_of = malloc((size_t)n * sizeof *unit_of + 4);
  for (int64_t i = 0; i < n; i++) {
    int k;
    ref_tensor(i, &unit_of[i], &k);
  }
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < n; i++) {
      if (o->accum) { /* the backward's gradient: float, from bf16 params, stored in bf16 */
        const float pv = zs_bf16_to_f32(zs_f32_to_bf16((float)r->p[i]));
        const float gi = tm_a(first_batch + b, i) * (pv - tm_t(first_batch + b, i));
        g[i] += (double)zs_bf16_to_f32(zs_f32_to_bf16(gi));
        continue;
      }
      g[i] += (double)tm_a(first_batch + b, i) * (r->p[i] - (double)tm_t(first_batch + b, i));
    }
  double sq = 0;
  for (int64_t i = 0; i < n; i++) {
    g[i] /= (double)nb;
    r->g[i] = g[i];                                             /* zs_unit_get_grad's */
    if (o->setgrad && unit_of[i] == TM_NUNITS - 1) g[i] *= 0.5; /* zs_unit_set_grad's */
    if (unit_of[i] != skip) sq += g[i] * g[i];
  }
  if (nonfinite) {
    free(g);
    free(unit_of);
    return; /* the engine must skip the step entirely */
  }
  double norm = sqrt(sq), clip = (o->clip > 0 && norm > o->clip) ? o->clip / (norm + 1e-6) : 1.0;
  r->t++;
  for (int u = 0; u < TM_NUNITS; u++)
    if (u != skip) r->ut[u]++;
  double *mo = calloc((size_t)n, sizeof *mo); /* --muon: the orthogonalised directions */
  if (o->muon) ref_muon_dirs(r, o, g, clip, skip, mo);
  if (o->adafactor) ref_adafactor(r, o, g, clip, skip, mo);
  for (int64_t i = 0; i < n; i++) {
    if (unit_of[i] == skip) continue;
    const int64_t t = r->ut[unit_of[i]];
    const ref_hp h = ref_hp_of(o, i);
    const double gi = g[i] * clip;
    switch (ref_opt_of(o, i)) {
    case REF_SGD: { /* torch.optim.SGD: coupled decay, the first buffer is the gradient */
      double d = gi + h.wd * r->p[i];
      if (h.mom != 0) {
        r->m[i] = t == 1 ? d : h.mom * r->m[i] + (1 - (double)o->dampening) * d;
        if (o->m16) r->m[i] = zs_bf16_to_f32(zs_f32_to_bf16((float)r->m[i]));
        d = o->nesterov ? d + h.mom * r->m[i] : r->m[i];
      }
      r->p[i] -= h.lr * d;
      break;
    }
    case REF_LION: { /* Lion (Chen et al. 2023): the sign of an interpolation, decoupled decay */
      const double c = h.b1 * r->m[i] + (1 - h.b1) * gi;
      r->p[i] = r->p[i] * (1 - h.lr * h.wd) - h.lr * (c > 0 ? 1.0 : c < 0 ? -1.0 : 0.0);
      r->m[i] = h.b2 * r->m[i] + (1 - h.b2) * gi;
      if (o->m16) r->m[i] = zs_bf16_to_f32(zs_f32_to_bf16((float)r->m[i]));
      break;
    }
    case REF_MUON: /* decoupled decay with the unadjusted lr */
      r->p[i] = r->p[i] * (1 - h.lr * h.wd) - h.lr * mo[i];
      break;
    case REF_ADAFACTOR: /* decoupled decay with lr, then the relative step */
      r->p[i] = r->p[i] * (1 - h.lr * h.wd) - mo[i];
      break;
    default: { /* AdamW (Loshchilov & Hutter) */
      r->m[i] = h.b1 * r->m[i] + (1 - h.b1) * gi;
      r->v[i] = h.b2 * r->v[i] + (1 - h.b2) * gi * gi;
      const double mn = r->m[i], vn = r->v[i];
      if (o->m16) { /* bf16 moments: stored rounded, the update uses this step's unrounded ones */
        r->m[i] = zs_bf16_to_f32(zs_f32_to_bf16((float)r->m[i]));
        r->v[i] = zs_bf16_to_f32(zs_f32_to_bf16((float)r->v[i]));
      }
      double mh = mn / (1 - pow(h.b1, (double)t)), vh = vn / (1 - pow(h.b2, (double)t));
      r->p[i] -= h.lr * (mh / (sqrt(vh) + h.eps) + h.wd * r->p[i]);
    }
    }
    if (o->master == ZS_MASTER_LEAN) r->p[i] = lean_round(r->p[i], t, i);
  }
  free(mo);
  free(g);
  free(unit_of);
}

/* With --groups or --adafactor and --save: the checkpoint's manifest lists the groups (their
   values) and each grouped tensor's group, and the segments of the head (all on Lion with
   --groups 2, on Adafactor with --adafactor: one state array) hold two arrays, not AdamW's three.
 */
static void check_manifest_groups(const char *dir, int one_array) {
  char pat[4200];
  snprintf(pat, sizeof pat, "%s/ckpt-*/manifest.json", dir);
  glob_t gl;
  ZS_EXPECT(glob(pat, 0, NULL, &gl) == 0 && gl.gl_pathc >= 1, "no manifest under %s", dir);
  if (gl.gl_pathc < 1) return;
  FILE *f = fopen(gl.gl_pathv[gl.gl_pathc - 1], "rb");
  char *text = calloc(1, 1 << 20);
  const size_t n = f && text ? fread(text, 1, (1 << 20) - 1, f) : 0;
  ZS_EXPECT(n > 0 && strstr(text, "\"groups\"") && strstr(text, "\"lr_scale\"") &&
                strstr(text, "\"group\""),
            "the manifest %s lists no parameter groups", gl.gl_pathv[gl.gl_pathc - 1]);
  ZS_EXPECT(!one_array || strstr(text, "\"narrays\":\t2"),
            "the manifest %s has no segment of two arrays", gl.gl_pathv[gl.gl_pathc - 1]);
  if (f) fclose(f);
  free(text);
  globfree(&gl);
}

/* The optimizer state names --state reads: AdamW's, SGD's buffer (with momentum), Lion's m. */
static void state_names(const opts *o, const char *names[2]) {
  names[0] = o->sgd ? (o->momentum == 0 ? NULL : "momentum_buffer") : "exp_avg";
  names[1] = o->sgd || o->lion ? NULL : "exp_avg_sq";
}

/* How many state arrays tensor k of unit u keeps: its group's optimizer's (AdamW 2; SGD with
   momentum, Lion, Muon, Adafactor 1). */
static int ref_keeps(const opts *o, int u, int k) {
  return ref_opt_of(o, tm_base(u, k)) == REF_ADAMW ? 2 : 1;
}

/* --state: each tensor's optimizer state by name against the reference (AdamW's m and v, SGD's
   buffer, Lion's m: the names checkpoints use; an array its group's optimizer does not keep reads
   as zeros); then twice the values written back read back exactly (doubling is exact in fp32 and
   bf16 alike), and writing an array the tensor's optimizer does not keep is refused, naming it.
   Collective where the state is sharded. */
static void check_state(zs_unit **units, const opts *o, const ref_state *r) {
  const char *names[2];
  state_names(o, names);
  const int64_t n = tm_total();
  float *v = malloc((size_t)n * sizeof *v + 4), *w = malloc((size_t)n * sizeof *w + 4);
  for (int j = 0; j < 2; j++) {
    if (!names[j]) continue;
    const double *want = j == 0 ? r->m : r->v;
    for (int u = 0; u < TM_NUNITS; u++)
      for (int k = 0; k < tm_units[u].ntensors; k++)
        ZS_OK_OR_DIE(zs_unit_get_state(units[u], k, names[j], v + tm_base(u, k)));
    for (int64_t i = 0; i < n; i++)
      ZS_EXPECT(fabs((double)v[i] - want[i]) <=
                    (o->statetol >= 0 ? o->statetol : o->reftol) * (1.0 + fabs(want[i])) + 1e-12,
                "%s at %lld: %.9g, the reference %.9g", names[j], (long long)i, (double)v[i],
                want[i]);
    for (int64_t i = 0; i < n; i++)
      w[i] = 2 * v[i];
    for (int u = 0; u < TM_NUNITS; u++)
      for (int k = 0; k < tm_units[u].ntensors; k++) {
        if (j < ref_keeps(o, u, k)) {
          ZS_OK_OR_DIE(zs_unit_set_state(units[u], k, names[j], w + tm_base(u, k)));
          continue;
        }
        for (int64_t i = 0; i < tm_numel(u, k); i++)
          ZS_EXPECT(v[tm_base(u, k) + i] == 0, "%s.%s's unkept %s reads %g, not 0",
                    tm_units[u].name, tm_units[u].t[k].name, names[j],
                    (double)v[tm_base(u, k) + i]);
        ZS_EXPECT_STATUS(zs_unit_set_state(units[u], k, names[j], w + tm_base(u, k)),
                         ZS_ERR_INVALID_ARG);
        ZS_EXPECT(strstr(zs_last_error(), "keeps 1 of the configuration's state arrays") &&
                      strstr(zs_last_error(), tm_units[u].t[k].name),
                  "the refusal names the tensor and why: %s", zs_last_error());
      }
    for (int u = 0; u < TM_NUNITS; u++)
      for (int k = 0; k < tm_units[u].ntensors; k++)
        ZS_OK_OR_DIE(zs_unit_get_state(units[u], k, names[j], v + tm_base(u, k)));
    ZS_EXPECT(!memcmp(v, w, (size_t)n * sizeof *v),
              "%s: zs_unit_set_state's values do not read back", names[j]);
  }
  ZS_EXPECT_STATUS(zs_unit_get_state(units[0], 0, "nonesuch", v), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_state(units[0], 0, "master", v), ZS_ERR_INVALID_ARG);
  free(v);
  free(w);
}

/* --meta: the blob a run saves at step s: text, a zero byte, all 256 byte values. */
static size_t meta_blob(int s, unsigned char *b) {
  size_t n = (size_t)snprintf((char *)b, 64, "zshard test meta, step %d", s) + 1;
  for (int i = 0; i < 256; i++)
    b[n++] = (unsigned char)(255 - i);
  return n;
}

/* ---- the engine run ---- */
static float load(const void *p, int bf16, int64_t i) {
  return bf16 ? zs_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static void add(void *p, int bf16, int64_t i, float v) {
  if (bf16)
    ((uint16_t *)p)[i] = zs_f32_to_bf16(zs_bf16_to_f32(((uint16_t *)p)[i]) + v);
  else
    ((float *)p)[i] += v;
}

/* --nograd: unit u's params and optimizer state (every tensor, then each state array), read
   back through the public calls (collective where sharded). */
static size_t unit_values_bytes(int u, const opts *o) {
  int64_t n = 0;
  for (int k = 0; k < tm_units[u].ntensors; k++)
    n += tm_numel(u, k);
  const char *names[2];
  state_names(o, names);
  return (size_t)n * sizeof(float) * (1 + (names[0] != NULL) + (names[1] != NULL));
}
static float *unit_values(zs_unit *unit, int u, const opts *o) {
  float *v = malloc(unit_values_bytes(u, o) + 4), *at = v;
  const char *names[2];
  state_names(o, names);
  for (int j = -1; j < 2; j++) {
    if (j >= 0 && !names[j]) continue;
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      ZS_OK_OR_DIE(j < 0 ? zs_unit_get_param(unit, k, at)
                         : zs_unit_get_state(unit, k, names[j], at));
      at += tm_numel(u, k);
    }
  }
  return v;
}

/* One micro-step of "forward + backward": gather every unit, read params, write grads; unit skip
   (-1: none) gets no gradient (zs_unit_no_grad: no zs_unit_grad, its grads_ready a no-op). */
static void micro_step(zs_unit **units, const opts *o, int64_t batch, int poison, void *stream,
                       int skip) {
  for (int u = 0; u < TM_NUNITS; u++)
    ZS_OK_OR_DIE(zs_unit_gather(units[u]));
  for (int u = 0; u < TM_NUNITS; u++)
    ZS_OK_OR_DIE(zs_unit_release(units[u]));
  for (int u = TM_NUNITS - 1; u >= 0; u--) {
    if (u == skip) {
      ZS_OK_OR_DIE(zs_unit_no_grad(units[u])); /* every micro-step: said again is a no-op */
      ZS_EXPECT(!zs_unit_grad(units[u], 0), "zs_unit_grad after zs_unit_no_grad");
      ZS_OK_OR_DIE(zs_unit_grads_ready(units[u])); /* a no-op, as for a frozen unit */
      continue;
    }
    ZS_OK_OR_DIE(zs_unit_gather(units[u]));
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      const void *dp = zs_unit_param(units[u], k);
      void *dg = zs_unit_grad(units[u], k);
      if (!dp || !dg) {
        fprintf(stderr, "FATAL: NULL param/grad pointer: %s\n", zs_last_error());
        exit(1);
      }
      int64_t base = tm_base(u, k);
      const size_t bytes = (size_t)tm_numel(u, k) * (o->bf16 ? 2 : 4);
      void *p = malloc(bytes + 4), *g = malloc(bytes + 4); /* an empty tensor's too */
#ifdef ZS_HAVE_CUDA
      if (o->cuda) cudaStreamSynchronize((cudaStream_t)stream);
#endif
      (void)stream;
      zs_test_copy(p, dp, bytes, o->cuda);
      zs_test_copy(g, dg, bytes, o->cuda);
      for (int64_t i = 0; i < tm_numel(u, k); i++) {
        float pv = load(p, o->bf16, i);
        const float gi = tm_a(batch, base + i) * (pv - tm_t(batch, base + i));
        if (!o->split) {
          add(g, o->bf16, i, gi);
          continue;
        }
        /* Two partial adds per micro-step, as a real backward makes (a tied weight, GEMM
           blocking): without the engine's staging they would regroup the sums across ranks. */
        const float h = 0.3f * gi;
        add(g, o->bf16, i, gi - h);
        add(g, o->bf16, i, h);
      }
      if (poison && u == 2 && k == 0) add(g, o->bf16, 0, NAN);
      zs_test_copy(dg, g, bytes, o->cuda);
      free(p);
      free(g);
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(units[u]));
    ZS_OK_OR_DIE(zs_unit_release(units[u]));
  }
}

int main(int argc, char **argv) {
  opts o;
  parse(argc, argv, &o);
  if (o.empty) /* unit tiny: a 0 x 4 tensor, then its own; the global indices stay the same */
    tm_units[1] = (tm_unit_def){"tiny", 2, {{"e", 2, {0, 4, 0, 0}, 0}, {"s", 1, {1, 0, 0, 0}, 0}}};
  if (o.wide) /* embed.w 5 x 7: its 35 elements in the same places */
    tm_units[0].t[0].shape[0] = 5, tm_units[0].t[0].shape[1] = 7;
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  if (o.cuda) {
    if (zs_test_cuda_skip(zs_comm_rank(comm))) {
      zs_comm_destroy(comm);
      return 0;
    }
  }
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = o.stage;
  cfg.shard_params = o.shard[0];
  cfg.shard_grads = o.shard[1];
  cfg.shard_optimizer = o.shard[2];
  cfg.deterministic = o.det;
  cfg.prefetch_units = o.prefetch;
  cfg.shard_group_size = world > 1 ? o.group : 0; /* the 1-rank reference has no groups */
  cfg.param_dtype = cfg.reduce_dtype = o.bf16 ? ZS_BF16 : ZS_F32;
  if (o.reduce >= 0) cfg.reduce_dtype = o.reduce ? ZS_BF16 : ZS_F32;
  cfg.grad_accum_fp32 = o.accum;
  if (o.defaults) { /* the engine keeps its defaults; the reference takes the header's */
    o.lr = 1e-3f;
    o.wd = 0.01f;
    o.clip = 0.0f;
  } else {
    cfg.adamw.lr = o.lr;
    cfg.adamw.weight_decay = o.wd;
    cfg.adamw.max_grad_norm = o.clip;
  }
  cfg.comm_timeout_s = 60;
  cfg.offload = (unsigned)o.offload;
  cfg.bucket_bytes = (size_t)o.bucket;
  cfg.device = o.cuda ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  cfg.master = o.master;
  if (o.muon == 2) { /* zshard.h's defaults with --muon 1 */
    cfg.muon.momentum = 0.9f;
    cfg.muon.nesterov = 0;
    cfg.muon.ns_steps = 3;
    cfg.muon.adjust_lr = ZS_MUON_LR_MATCH_ADAMW;
  }
  if (o.lion) {
    cfg.optimizer = ZS_OPT_LION;
    cfg.optim.beta1 = 0.9f;
    cfg.optim.beta2 = 0.99f;
  }
  if (o.sgd) {
    cfg.optimizer = ZS_OPT_SGD;
    cfg.sgd.momentum = o.momentum;
    cfg.sgd.dampening = o.dampening;
    cfg.sgd.nesterov = o.nesterov;
  }
  cfg.moment_dtype = o.m16 ? ZS_BF16 : ZS_F32;
  zs_plan_unit pu[TM_NUNITS];
  int pu_opt[TM_NUNITS][TM_MAXT];
  float pu_mom[TM_NUNITS][TM_MAXT];
  plan_units_of(&o, pu, pu_opt, pu_mom);
  unsigned char host[TM_NUNITS] = {0};
  int nhost = 0;
  if (o.budget >= 0) { /* F of the way from the floor (all on the host) to no offload */
    zs_plan_report none, all;
    ZS_OK_OR_DIE(zs_plan_model_units(&cfg, world, pu, TM_NUNITS, 0, SIZE_MAX, SIZE_MAX, &none));
    cfg.offload_budget_bytes = 1;
    ZS_OK_OR_DIE(zs_plan_model_units(&cfg, world, pu, TM_NUNITS, 0, SIZE_MAX, SIZE_MAX, &all));
    ZS_EXPECT(!all.fits && all.budget_floor > 0, "a 1-byte budget fits (floor %zu)",
              all.budget_floor);
    cfg.offload_budget_bytes =
        all.budget_floor + (size_t)(o.budget * (double)(none.device_total - all.budget_floor));
    ZS_OK_OR_DIE(zs_plan_placement_units(&cfg, world, pu, TM_NUNITS, host));
    for (int u = 0; u < TM_NUNITS; u++)
      nhost += host[u];
    if (o.budget > 0 && o.budget < 1)
      ZS_EXPECT(nhost > 0 && nhost < TM_NUNITS, "budget %zu: %d of %d units on the host, not mixed",
                cfg.offload_budget_bytes, nhost, TM_NUNITS);
  }
  if (o.budget_free) cfg.offload_budget_bytes = ZS_BUDGET_FREE;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  zs_unit *units[TM_NUNITS];
  for (int u = 0; u < TM_NUNITS; u++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[u].name, tm_units[u].ntensors, tm_units[u].t, &units[u]));
  if (o.groups) { /* test_groups, put where test_group_of says (a whole unit, then one back) */
    for (int i = 0; i < 2; i++) {
      zs_param_group g = test_groups[i];
      if (o.sgd && o.momentum == 0) g.momentum = 0;
      if (o.groups == 2) g.optimizer = i == 0 ? "lion" : "sgd";
      int id = -1;
      ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
      ZS_EXPECT(id == i + 1, "group %d got id %d", i + 1, id);
    }
    ZS_OK_OR_DIE(zs_unit_set_group(units[0], 0, 1));
    ZS_OK_OR_DIE(zs_unit_set_group(units[3], -1, 1));
    ZS_OK_OR_DIE(zs_unit_set_group(units[2], -1, 2));
    ZS_OK_OR_DIE(zs_unit_set_group(units[2], 2, 0));
  }
  if (o.adafactor) /* two matrices and two vectors on Adafactor, the rest on AdamW */
    group_on(e, units, "adafactor", af_lr_scale, af_wd, is_af_tensor);
  if (o.muon) /* the matrices on Muon, the rest on the configuration's AdamW */
    group_on(e, units, "muon", muon_lr_scale, muon_wd, is_muon_tensor);
  ZS_OK_OR_DIE(zs_engine_commit(e));
  if (o.budget_free) {
    const zs_engine_facts f = zs_test_facts(e);
    ZS_EXPECT(f.budget_active && f.budget_free_ranks == world &&
                  f.budget_bytes == zs_engine_config(e)->offload_budget_bytes,
              "the budget is not the least free memory over %d ranks: %s", world,
              zs_engine_info(e));
  }

  const int64_t n = tm_total();
  ref_state ref = {calloc((size_t)n, 8),
                   calloc((size_t)n, 8),
                   calloc((size_t)n, 8),
                   calloc((size_t)n, 8),
                   0,
                   {0}};
  for (int64_t i = 0; i < n; i++)
    ref.p[i] = o.master == ZS_MASTER_LEAN
                   ? zs_bf16_to_f32(zs_f32_to_bf16(tm_init(i))) /* the master */
                   : (double)tm_init(i);
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      int64_t nk = tm_numel(u, k), b = tm_base(u, k);
      float *h = malloc((size_t)nk * sizeof *h + 4); /* not NULL for an empty tensor */
      for (int64_t i = 0; i < nk; i++)
        h[i] = tm_init(b + i);
      ZS_OK_OR_DIE(zs_unit_set_param(units[u], k, h));
      free(h);
    }

  int skipped = 0, start = 0;
  if (o.load) {
    if (o.meta) ZS_OK_OR_DIE(zs_engine_set_user_meta(e, "junk", 4)); /* the load replaces it */
    ZS_OK_OR_DIE(zs_engine_load(e, o.load));
    start = (int)zs_engine_steps_done(e);
    if (o.meta) { /* the saving run's blob, whatever this rank set before */
      unsigned char want[512];
      const size_t wn = meta_blob(start, want);
      const void *got = NULL;
      size_t gn = 0;
      ZS_OK_OR_DIE(zs_engine_user_meta(e, &got, &gn));
      ZS_EXPECT(gn == wn && got && !memcmp(got, want, wn),
                "the loaded user meta is not the saved one (%zu bytes, want %zu)", gn, wn);
    }
    ZS_EXPECT(start >= 0 && start <= o.steps, "the checkpoint is at step %d of %d", start, o.steps);
    skipped = start - (int)zs_engine_step_count(e);
    /* The reference replays what the checkpoint's run did, with the batches of that step: the
       global batch of a step (world x micro) is the same in both runs. */
    for (int s = 0; s < start; s++)
      ref_step(&ref, &o, world, (int64_t)s * world * o.micro, s == o.nonfinite_at,
               nograd_unit(&o, s));
  }
  for (int s = start; s < o.steps; s++) {
    const int64_t first = (int64_t)s * world * o.micro;
    const int poison_step = s == o.nonfinite_at;
    const int skip = nograd_unit(&o, s);
    float *before = skip >= 0 ? unit_values(units[skip], skip, &o) : NULL;
    ZS_OK_OR_DIE(zs_engine_begin_step(e, o.micro));
    for (int m = 0; m < o.micro; m++)
      micro_step(units, &o, first + (int64_t)m * world + rank,
                 poison_step && rank == world - 1 && m == 0, zs_engine_stream(e), skip);
    float *grads = NULL;
    if (o.peek) { /* inside the step, after the backward: the values before its update */
      float *v = malloc((size_t)tm_total() * sizeof *v + 4);
      grads = malloc((size_t)tm_total() * sizeof *grads + 4); /* checked after ref_step */
      for (int u = 0; u < TM_NUNITS; u++)
        for (int k = 0; k < tm_units[u].ntensors; k++) {
          ZS_OK_OR_DIE(zs_unit_get_param(units[u], k, v + tm_base(u, k)));
          if (u == skip)
            ZS_EXPECT_STATUS(zs_unit_get_grad(units[u], k, grads + tm_base(u, k)), ZS_ERR_STATE);
          else
            ZS_OK_OR_DIE(zs_unit_get_grad(units[u], k, grads + tm_base(u, k)));
        }
      if (o.setgrad && skip != TM_NUNITS - 1) { /* head.w's gradient halved, read back */
        const int64_t b = tm_base(TM_NUNITS - 1, 0), hn = tm_numel(TM_NUNITS - 1, 0);
        float *half = malloc((size_t)hn * sizeof *half), *back = malloc((size_t)hn * sizeof *back);
        for (int64_t i = 0; i < hn; i++)
          half[i] = 0.5f * grads[b + i];
        ZS_OK_OR_DIE(zs_unit_set_grad(units[TM_NUNITS - 1], 0, half));
        ZS_OK_OR_DIE(zs_unit_get_grad(units[TM_NUNITS - 1], 0, back));
        for (int64_t i = 0; i < hn; i++)
          ZS_EXPECT(fabsf(back[i] - half[i]) <= (o.bf16 ? 4e-3f : 1e-6f) * fabsf(half[i]) + 1e-30f,
                    "step %d: zs_unit_get_grad after zs_unit_set_grad gives %.9g at %lld, set "
                    "%.9g",
                    s, (double)back[i], (long long)i, (double)half[i]);
        free(half);
        free(back);
      }
      for (int64_t i = 0; i < tm_total(); i++)
        ZS_EXPECT(fabs((double)v[i] - ref.p[i]) <= o.reftol * (1.0 + fabs(ref.p[i])),
                  "step %d: zs_unit_get_param inside the step gives %.9g at %lld, the reference "
                  "before the update %.9g",
                  s, (double)v[i], (long long)i, ref.p[i]);
      free(v);
    }
    zs_step_stats st;
    ZS_OK_OR_DIE(zs_engine_step(e, &st));
    ref_step(&ref, &o, world, first, poison_step, skip);
    for (int64_t i = 0; grads && !poison_step && i < tm_total(); i++) {
      int u, k;
      ref_tensor(i, &u, &k);
      const double tol = o.statetol >= 0 ? o.statetol : o.reftol;
      ZS_EXPECT(u == skip || fabs((double)grads[i] - ref.g[i]) <= tol * (1.0 + fabs(ref.g[i])),
                "step %d: zs_unit_get_grad gives %.9g at %lld, the reference %.9g", s,
                (double)grads[i], (long long)i, ref.g[i]);
    }
    free(grads);
    if (before) { /* no gradient: the unit's params and state are exactly as before the step */
      float *after = unit_values(units[skip], skip, &o);
      ZS_EXPECT(!memcmp(before, after, unit_values_bytes(skip, &o)),
                "step %d: unit %d changed without a gradient (zs_unit_no_grad)", s, skip);
      free(after);
      free(before);
    }
    skipped += st.skipped_nonfinite;
    /* The divergence check is on by default on every backend: its time is part of the step. */
    const int checked = world > 1;
    ZS_EXPECT(st.struct_version == 5 && (checked ? st.check_seconds > 0 : st.check_seconds == 0) &&
                  st.check_seconds <= st.step_seconds,
              "step %d: check_seconds %g of step_seconds %g (version %u, checked %d)", s,
              st.check_seconds, st.step_seconds, st.struct_version, checked);
    /* Where the step's time went: disjoint parts of it (several ranks: some waiting). */
    ZS_EXPECT(st.comm_seconds >= 0 && st.update_seconds >= 0 && st.io_seconds == 0 &&
                  (world == 1 || st.comm_seconds > 0) &&
                  (st.skipped_nonfinite || st.update_seconds > 0) &&
                  st.check_seconds + st.comm_seconds + st.update_seconds <= st.step_seconds,
              "step %d: check %g + comm %g + update %g s (io %g, no NVMe tier) of a %g s step", s,
              st.check_seconds, st.comm_seconds, st.update_seconds, st.io_seconds, st.step_seconds);
    ZS_EXPECT(st.skipped_nonfinite == poison_step, "step %d: skipped=%d, poisoned=%d", s,
              st.skipped_nonfinite, poison_step);
    /* The GPU timing: nothing on the CPU; on CUDA with several ranks the step's collectives
       took GPU time and the compute stream's waits lie within the step (a pair still running
       when the step ended is left out and counted: printed, not required to be 0). */
    ZS_EXPECT(o.cuda
                  ? (world == 1 || st.gpu_comm_seconds > 0) && st.gpu_exposed_seconds >= 0 &&
                        st.gpu_exposed_seconds <= st.step_seconds
                  : st.gpu_comm_seconds == 0 && st.gpu_exposed_seconds == 0 && st.gpu_missed == 0,
              "step %d: GPU comm %g s, exposed %g s, %u pairs left out, of a %g s step (%s)", s,
              st.gpu_comm_seconds, st.gpu_exposed_seconds, st.gpu_missed, st.step_seconds,
              o.cuda ? "cuda" : "cpu");
  }
  ZS_EXPECT(zs_engine_step_count(e) == o.steps - skipped, "step count %lld",
            (long long)zs_engine_step_count(e));
  if (o.save && o.meta) {
    unsigned char b[512];
    ZS_OK_OR_DIE(zs_engine_set_user_meta(e, b, meta_blob(o.steps, b)));
  }
  if (o.save) ZS_OK_OR_DIE(zs_test_save(e, o.save));
  if (o.save && (o.groups || o.adafactor) && rank == 0)
    check_manifest_groups(o.save, o.groups == 2 || o.adafactor);

  if (o.state) check_state(units, &o, &ref);
  /* Read back every tensor (collective) and compare. */
  float *all = malloc((size_t)n * sizeof *all);
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++)
      ZS_OK_OR_DIE(zs_unit_get_param(units[u], k, all + tm_base(u, k)));
  double worst = 0;
  int64_t worst_i = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)all[i] - ref.p[i]) / (1.0 + fabs(ref.p[i]));
    if (!(d <= worst)) {
      worst = d;
      worst_i = i;
    }
  }
  ZS_EXPECT(worst <= o.reftol,
            "rank %d: vs float64 reference: worst rel diff %.3g at %lld "
            "(engine %.9g, ref %.9g)",
            rank, worst, (long long)worst_i, (double)all[worst_i], ref.p[worst_i]);
  if (rank == 0 && o.write) {
    FILE *f = fopen(o.write, "wb");
    ZS_EXPECT(f && fwrite(all, sizeof *all, (size_t)n, f) == (size_t)n, "cannot write %s", o.write);
    if (f) fclose(f);
  }
  if (o.compare) {
    float *want = malloc((size_t)n * sizeof *want);
    FILE *f = fopen(o.compare, "rb");
    ZS_EXPECT(f && fread(want, sizeof *want, (size_t)n, f) == (size_t)n, "cannot read %s",
              o.compare);
    if (f) fclose(f);
    int64_t ndiff = 0;
    double wd = 0;
    for (int64_t i = 0; i < n; i++) {
      if (o.tol == 0.0) {
        if (memcmp(&all[i], &want[i], sizeof(float)) != 0) {
          if (ndiff < 5)
            fprintf(stderr, "rank %d: element %lld: %.9g (bits %08x) != %.9g (bits %08x)\n", rank,
                    (long long)i, (double)all[i], *(uint32_t *)&all[i], (double)want[i],
                    *(uint32_t *)&want[i]);
          ndiff++;
        }
      } else {
        /* relative to max(|x|, 1): AdamW turns a rounding-level change of a near-zero gradient
           into a visible change of a near-zero parameter, so tiny values compare absolutely. */
        double d = fabs((double)all[i] - want[i]) / fmax(fabs((double)want[i]), 1.0);
        if (d > o.tol) ndiff++;
        if (d > wd) wd = d;
      }
    }
    ZS_EXPECT(ndiff == 0, "rank %d: %lld of %lld elements differ from %s (tol %g, worst %.3g)",
              rank, (long long)ndiff, (long long)n, o.compare, o.tol, wd);
    free(want);
  }
  zs_memory mem;
  ZS_OK_OR_DIE(zs_engine_memory(e, &mem));
  /* Offloaded optimizer state per element: m and v (4 or 2 bytes each) and the master: fp32,
     which ZS_MASTER_PARAMS drops only where the arena's params are it (with ZS_OFFLOAD_PARAMS);
     the 2-byte remainder of ZS_MASTER_REMAINDER; none in lean mode (the params are it). */
  const size_t master_per = o.master == ZS_MASTER_LEAN                                        ? 0
                            : o.master == ZS_MASTER_REMAINDER                                 ? 2
                            : o.master == ZS_MASTER_PARAMS && (o.offload & ZS_OFFLOAD_PARAMS) ? 0
                                                                                              : 4;
  const size_t host_per =
      (size_t)(o.m16 ? 4 : 8) + master_per + (o.offload & ZS_OFFLOAD_PARAMS ? (o.bf16 ? 2 : 4) : 0);
  /* ... and no more than that over this rank's shard with its padding (at most world - 1
     elements per unit), each array rounded up to whole pages in the arena: no state the mode
     does without. */
  const size_t narrays = 2 + (master_per > 0) + ((o.offload & ZS_OFFLOAD_PARAMS) != 0);
  const size_t host_max = host_per * ((size_t)(n / world) + (size_t)TM_NUNITS * (size_t)world) +
                          (size_t)TM_NUNITS * narrays * (size_t)sysconf(_SC_PAGESIZE);
  if (o.offload & ZS_OFFLOAD_OPTIMIZER)
    ZS_EXPECT(mem.optimizer.cur == 0 && mem.host_pinned.cur >= host_per * (size_t)(n / world) &&
                  mem.host_pinned.cur <= host_max,
              "offloaded optimizer: device %zu, host %zu (%zu bytes per element)",
              mem.optimizer.cur, mem.host_pinned.cur, host_per);
  if (o.offload & ZS_OFFLOAD_PARAMS)
    ZS_EXPECT(mem.params.cur == 0, "offloaded params: device params %zu", mem.params.cur);
  if (o.budget >= 0) { /* the engine placed what the planner said, and the ledger agrees */
    const zs_engine_facts f = zs_test_facts(e);
    int placed = 0; /* zs_unit_placed's count agrees with the facts' */
    for (int u = 0; u < TM_NUNITS; u++) {
      int h = -1;
      ZS_OK_OR_DIE(zs_unit_placed(units[u], &h, NULL));
      placed += h;
    }
    ZS_EXPECT(f.budget_active && f.units_on_host == nhost && f.units == TM_NUNITS &&
                  placed == nhost,
              "not %d of %d units on the host (facts %d of %d, zs_unit_placed %d): %s", nhost,
              TM_NUNITS, f.units_on_host, f.units, placed, zs_engine_info(e));
    ZS_EXPECT((nhost > 0) == (mem.host_pinned.cur > 0) &&
                  (nhost < TM_NUNITS) == (mem.optimizer.cur > 0),
              "%d units on the host: device optimizer %zu, host %zu bytes", nhost,
              mem.optimizer.cur, mem.host_pinned.cur);
  }
  if (rank == 0)
    printf("%s: stage %d world %d micro %d det %d%s: ref diff %.3g, %s\n", argv[0], o.stage, world,
           o.micro, o.det, o.bf16 ? " bf16" : "", worst, zs_engine_info(e));
  free(all);
  free(ref.p);
  free(ref.m);
  free(ref.g);
  free(ref.v);
  zs_engine_destroy(e);
  /* Every device buffer went back through an open device (on CUDA one freed after the device
     closed crashed destroy; now it would be left here). */
  ZS_EXPECT(zs_dev_live_buffers() == 0, "%ld device buffers outlive the engine",
            zs_dev_live_buffers());
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_train");
}
