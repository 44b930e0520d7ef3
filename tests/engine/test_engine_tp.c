/* Tensor parallelism on the mesh (docs/PARALLEL.md): a Megatron-style MLP block trained on a
 * tp x dp grid, written as a user would, with the engine's tp collectives:
 *
 *   x1 = x * s                    s [D]: replicated (its gradient needs the f conjugate's sum)
 *   h  = tanh(x1 W1^T + b1)       W1 [H, D], b1 [H]: column-parallel (split along dim 0)
 *   p  = h W2^T                   W2 [D, H]: row-parallel (split along dim 1): p is partial
 *   y  = reduce_scatter_rows(p)   sequence parallelism: each tp rank keeps B / T rows
 *   z  = (y + b2) * g             b2, g [D]: partial gradients (each rank sees its rows only)
 *   L  = sum over rows 0.5 * |z - t|^2 / B
 *
 * Every rank writes its slices' gradients; after --steps steps every rank reads its slices, the
 * full tensors are put together over the tp group (by hand, and by zs_unit_get_param_whole, which
 * must agree, and zs_engine_get_params; --whole 1 sets them with zs_unit_set_param_whole, --whole 2
 * with zs_engine_set_params), and rank 0 writes them (--write)
 * with the whole gradients of the last step (zs_unit_get_grad_whole, then set back through
 * zs_unit_set_grad_whole before the update, so that a wrong slice there shows in the weights) and
 * the whole first optimizer state after it (zs_unit_get_state_whole; set back through
 * zs_unit_set_state_whole, each rank's slices unchanged)
 * or compares them with a file (--compare, --tol: the largest difference over the largest
 * magnitude). The same global batch at any (tp, dp, micro-steps, stage) is the same training:
 * global micro-batch m * R + r goes to micro-step m of data-parallel rank r.
 *
 * Checkpoints: --save DIR --save-at K saves after step K and writes the full tensors beside it
 * (DIR.params); --load DIR loads at the start (at any tp size and layout), checks the full tensors
 * against DIR.params bit for bit, and trains the steps after the checkpoint's: its weights, losses
 * and norms are compared as above, over those steps. --export FILE exports safetensors right after
 * the save or the load: the same tensors make the same bytes at every tp size.
 *
 * --broadcast 1 scrambles every rank's tensors but those of data-parallel rank 0 and tp rank 0
 * after they are set, and zs_engine_broadcast_params(0) must restore them (stages 0-2; at stage 3
 * it must refuse).
 *
 * --bad 1 runs the refusals instead (needs 4 ranks): a tp size that does not divide the world, a
 * split of a missing dimension, layouts that differ across ranks.
 *
 * --muon 1 puts W1 and W2 on Muon, --ada 1 W1, b1 and W2 on Adafactor (whole_group): their steps
 * must be the tp 1 run's, and Adafactor's whole state (its factors) the tp 1 run's too.
 *
 * --bytes-out FILE writes every rank's tp bus bytes (zs_engine_facts_get) after the steps;
 * --bytes-base FILE (a run on AdamW with the same shape) checks that what a --muon or --ada run
 * moved on top of it is the whole step's joins and no more: at sharded state each split tensor
 * joined once a step, by its owner's tp group alone, which all-gathers its input channels and
 * reduce-scatters its output channels (T - 1 slices of each per rank of that group); and that an
 * --export after a --save moved each split tensor's master once, by rank 0's tp group alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll_impl.h"         /* --bad: a role hash changed by hand */
#include "engine/engine_internal.h" /* ... on the engine's tp group */
#include "zs_test.h"
#include "zshard.h"

enum { D = 8, H = 16, B = 8, NT = 5 };
enum { M_W1 = 0, M_B1, M_W2, M_B2, M_G }; /* unit "mlp"'s tensors; s is unit "scale"'s */

typedef struct {
  int stage, tp, micro, det, steps, offload, bad, whole, sgd, group, save_at, broadcast, muon, ada;
  const char *write, *compare, *save, *load, *export, *bytes_out, *bytes_base;
  double tol;
} opts;

static double hash01(uint64_t m, uint64_t i) { /* [0, 1) from (micro-batch, index) */
  uint64_t s = m * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xD1B54A32D192ED69ull;
  return (double)(zs_test_rand(&s) >> 11) * 0x1.0p-53;
}

/* The full initial tensors (the same on every rank). */
static void init_full(float *s, float *w1, float *b1, float *w2, float *b2, float *g) {
  for (int i = 0; i < D; i++) {
    s[i] = (float)(0.75 + 0.5 * hash01(1000, (uint64_t)i));
    b2[i] = (float)(0.2 * hash01(1001, (uint64_t)i) - 0.1);
    g[i] = (float)(0.75 + 0.5 * hash01(1002, (uint64_t)i));
  }
  for (int i = 0; i < H * D; i++) {
    w1[i] = (float)(0.6 * hash01(1003, (uint64_t)i) - 0.3);
    w2[i] = (float)(0.6 * hash01(1004, (uint64_t)i) - 0.3);
  }
  for (int i = 0; i < H; i++)
    b1[i] = (float)(0.2 * hash01(1005, (uint64_t)i) - 0.1);
}

typedef struct {
  zs_engine *e;
  zs_unit *scale, *mlp;
  int T, q;   /* tp size and rank */
  int R, r;   /* dp size and rank */
  int Hl, Bl; /* H / T, B / T */
} model;

static int add_units(model *m, int bad_layout) {
  const int Hl = m->Hl;
  zs_tensor_desc sd[1] = {{"s", 1, {D, 0, 0, 0}, 1}};
  zs_tensor_desc md[NT] = {{"w1", 2, {Hl, D, 0, 0}, 0},
                           {"b1", 1, {Hl, 0, 0, 0}, 1},
                           {"w2", 2, {D, Hl, 0, 0}, 0},
                           {"b2", 1, {D, 0, 0, 0}, 1},
                           {"g", 1, {D, 0, 0, 0}, 1}};
  ZS_OK_OR_DIE(zs_engine_add_unit(m->e, "scale", 1, sd, &m->scale));
  ZS_OK_OR_DIE(zs_engine_add_unit(m->e, "mlp", NT, md, &m->mlp));
  ZS_OK_OR_DIE(zs_unit_set_tp(m->scale, 0, ZS_TP_REPLICATED));
  ZS_OK_OR_DIE(zs_unit_set_tp(m->mlp, M_W1, ZS_TP_SPLIT_DIM0));
  ZS_OK_OR_DIE(zs_unit_set_tp(m->mlp, M_B1, ZS_TP_SPLIT_DIM0));
  ZS_OK_OR_DIE(zs_unit_set_tp(m->mlp, M_W2, ZS_TP_SPLIT_DIM1));
  ZS_OK_OR_DIE(zs_unit_set_tp(m->mlp, M_B2, bad_layout ? ZS_TP_REPLICATED : ZS_TP_PARTIAL_GRAD));
  ZS_OK_OR_DIE(zs_unit_set_tp(m->mlp, M_G, ZS_TP_PARTIAL_GRAD));
  return 0;
}

/* The whole tensors back to back (s, w1, b1, w2, b2, g: full_params' order), and where each one
   starts (unit scale's, then unit mlp's five). */
enum { NFULL = D + H * D + H + D * H + D + D };
static const int whole_off[1 + NT] = {
    0, D, D + H *D, D + H *D + H, D + H *D + H + D *H, D + H *D + H + D *H + D};
static const int whole_len[1 + NT] = {D, H *D, H, D *H, D, D};

/* zs_engine_set_params / get_params' callback over such an array (user: {model, array}): the
   numel it gets is the whole tensor's at every tp size. */
typedef struct {
  const model *m;
  float *w;
} whole_ctx;
static int locate_whole(void *user, const zs_unit *u, int ui, int t, const char *name,
                        int64_t numel, float **host) {
  const whole_ctx *c = user;
  const int k = u == c->m->scale ? 0 : 1 + t;
  ZS_EXPECT(numel == whole_len[k], "tensor %s: numel %lld, the whole tensor's is %d", name,
            (long long)numel, whole_len[k]);
  *host = c->w + whole_off[k];
  (void)ui;
  return 0;
}

/* The full tensors set into the engine: by the rank's slices (cut here), by the whole tensors
   (whole 1: zs_unit_set_param_whole cuts them; whole 2: zs_engine_set_params in one call). */
static void set_slices(model *m, int whole) {
  float s[D], w1[H * D], b1[H], w2[D * H], b2[D], g[D];
  init_full(s, w1, b1, w2, b2, g);
  if (whole == 2) {
    static float all[NFULL];
    const float *ts[1 + NT] = {s, w1, b1, w2, b2, g};
    for (int k = 0; k < 1 + NT; k++)
      memcpy(all + whole_off[k], ts[k], (size_t)whole_len[k] * sizeof(float));
    whole_ctx c = {m, all};
    ZS_OK_OR_DIE(zs_engine_set_params(m->e, locate_whole, &c));
    return;
  }
  if (whole) {
    const float *ts[NT] = {w1, b1, w2, b2, g};
    ZS_OK_OR_DIE(zs_unit_set_param_whole(m->scale, 0, s));
    for (int t = 0; t < NT; t++)
      ZS_OK_OR_DIE(zs_unit_set_param_whole(m->mlp, t, ts[t]));
    return;
  }
  const int Hl = m->Hl, o = m->q * Hl;
  float w2l[D * H];
  for (int i = 0; i < D; i++)
    for (int j = 0; j < Hl; j++)
      w2l[i * Hl + j] = w2[i * H + o + j];
  ZS_OK_OR_DIE(zs_unit_set_param(m->scale, 0, s));
  ZS_OK_OR_DIE(zs_unit_set_param(m->mlp, 0, w1 + (size_t)o * D));
  ZS_OK_OR_DIE(zs_unit_set_param(m->mlp, 1, b1 + o));
  ZS_OK_OR_DIE(zs_unit_set_param(m->mlp, 2, w2l));
  ZS_OK_OR_DIE(zs_unit_set_param(m->mlp, 3, b2));
  ZS_OK_OR_DIE(zs_unit_set_param(m->mlp, 4, g));
}

/* out[i * N + j] = (acc ? out[i * N + j] : 0) + the sum over k in order of
   a[i * ai + k * ak] * b[k * bk + j * bj], for an M x N out (every transpose by its strides). */
static void gemm(float *out, const float *a, int ai, int ak, const float *b, int bk, int bj, int M,
                 int N, int K, int acc) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < K; k++)
        s += a[i * ai + k * ak] * b[k * bk + j * bj];
      out[i * N + j] = acc ? out[i * N + j] + s : s;
    }
}

/* Every whole tensor's gradient (grad 1, inside a step) or optimizer state `name` into out
   (whole_off's places), or with set, from it. */
static void whole_io(model *m, int grad, const char *name, float *out, int set) {
  for (int k = 0; k < 1 + NT; k++) {
    zs_unit *u = k ? m->mlp : m->scale;
    const int t = k ? k - 1 : 0;
    float *w = out + whole_off[k];
    if (set)
      ZS_OK_OR_DIE(grad ? zs_unit_set_grad_whole(u, t, w) : zs_unit_set_state_whole(u, t, name, w));
    else
      ZS_OK_OR_DIE(grad ? zs_unit_get_grad_whole(u, t, w) : zs_unit_get_state_whole(u, t, name, w));
  }
}

/* This rank's slices of optimizer state `name`, back to back (numel: every tensor's slice). */
static void state_slices(model *m, const char *name, float *out) {
  ZS_OK_OR_DIE(zs_unit_get_state(m->scale, 0, name, out));
  out += D;
  const int n[NT] = {m->Hl * D, m->Hl, D * m->Hl, D, D};
  for (int t = 0; t < NT; out += n[t], t++)
    ZS_OK_OR_DIE(zs_unit_get_state(m->mlp, t, name, out));
}

/* Forward and backward of global micro-batch mb; adds this rank's gradients and returns its
   part of the loss (its rows). */
static double micro_step(model *m, uint64_t mb) {
  zs_engine *e = m->e;
  const int Hl = m->Hl, Bl = m->Bl, r0 = m->q * Bl;
  float x[B * D], t[B * D];
  for (int i = 0; i < B * D; i++) {
    x[i] = (float)(2 * hash01(mb, (uint64_t)i) - 1);
    t[i] = (float)(2 * hash01(mb + 7777, (uint64_t)i) - 1);
  }
  ZS_OK_OR_DIE(zs_unit_gather(m->scale));
  ZS_OK_OR_DIE(zs_unit_gather(m->mlp));
  const float *s = zs_unit_param(m->scale, 0);
  const float *w1 = zs_unit_param(m->mlp, 0), *b1 = zs_unit_param(m->mlp, 1);
  const float *w2 = zs_unit_param(m->mlp, 2), *b2 = zs_unit_param(m->mlp, 3);
  const float *g = zs_unit_param(m->mlp, 4);
  float *gs = zs_unit_grad(m->scale, 0);
  float *gw1 = zs_unit_grad(m->mlp, 0), *gb1 = zs_unit_grad(m->mlp, 1);
  float *gw2 = zs_unit_grad(m->mlp, 2), *gb2 = zs_unit_grad(m->mlp, 3);
  float *gg = zs_unit_grad(m->mlp, 4);
  ZS_EXPECT(s && w1 && b1 && w2 && b2 && g && gs && gw1 && gb1 && gw2 && gb2 && gg,
            "params and grads: %s", zs_last_error());
  static float x1[B * D], h[B * H], p[B * D], y[B * D], dz[B * D], dy[B * D], dp[B * D];
  static float da[B * H], dx1[B * D];
  for (int b = 0; b < B; b++)
    for (int i = 0; i < D; i++)
      x1[b * D + i] = x[b * D + i] * s[i];
  gemm(h, x1, D, 1, w1, 1, D, B, Hl, D, 0);
  for (int b = 0; b < B; b++)
    for (int j = 0; j < Hl; j++)
      h[b * Hl + j] = tanhf(h[b * Hl + j] + b1[j]);
  gemm(p, h, Hl, 1, w2, 1, Hl, B, D, Hl, 0); /* partial: this rank's columns of W2 */
  ZS_OK_OR_DIE(zs_engine_reduce_scatter(e, ZS_MESH_TP, p, y, (size_t)Bl * D, ZS_F32));
  double loss = 0;
  for (int b = 0; b < Bl; b++)
    for (int i = 0; i < D; i++) {
      const float yb = y[b * D + i] + b2[i], z = yb * g[i];
      const float d = z - t[(r0 + b) * D + i];
      loss += 0.5 * (double)d * d / B;
      dz[b * D + i] = d / B;
      gg[i] += dz[b * D + i] * yb; /* partial: these rows only */
      dy[b * D + i] = dz[b * D + i] * g[i];
      gb2[i] += dy[b * D + i];
    }
  ZS_OK_OR_DIE(zs_engine_all_gather(e, ZS_MESH_TP, dy, dp, (size_t)Bl * D, ZS_F32));
  gemm(gw2, dp, 1, D, h, Hl, 1, D, Hl, B, 1);
  gemm(da, dp, D, 1, w2, Hl, 1, B, Hl, D, 0);
  for (int b = 0; b < B; b++)
    for (int j = 0; j < Hl; j++)
      da[b * Hl + j] *= 1 - h[b * Hl + j] * h[b * Hl + j];
  for (int j = 0; j < Hl; j++) {
    float bs = 0;
    for (int b = 0; b < B; b++)
      bs += da[b * Hl + j];
    gb1[j] += bs;
  }
  gemm(gw1, da, 1, Hl, x1, D, 1, Hl, D, B, 1);
  gemm(dx1, da, Hl, 1, w1, D, 1, B, D, Hl, 0); /* partial: the f conjugate sums it */
  ZS_OK_OR_DIE(zs_engine_all_reduce(e, ZS_MESH_TP, dx1, (size_t)B * D, ZS_F32));
  for (int i = 0; i < D; i++) {
    float a = 0;
    for (int b = 0; b < B; b++)
      a += dx1[b * D + i] * x[b * D + i];
    gs[i] += a;
  }
  ZS_OK_OR_DIE(zs_unit_grads_ready(m->mlp));
  ZS_OK_OR_DIE(zs_unit_grads_ready(m->scale));
  ZS_OK_OR_DIE(zs_unit_release(m->mlp));
  ZS_OK_OR_DIE(zs_unit_release(m->scale));
  return loss;
}

/* The full tensors from every tp rank's slices: s, w1, b1, w2, b2, g back to back. */
static void full_params(model *m, float *out) {
  const int Hl = m->Hl, T = m->T;
  float sl[D], w1l[H * D], b1l[H], w2l[D * H], b2[D], g[D];
  float w1a[H * D], b1a[H], w2a[D * H];
  ZS_OK_OR_DIE(zs_unit_get_param(m->scale, 0, sl));
  ZS_OK_OR_DIE(zs_unit_get_param(m->mlp, 0, w1l));
  ZS_OK_OR_DIE(zs_unit_get_param(m->mlp, 1, b1l));
  ZS_OK_OR_DIE(zs_unit_get_param(m->mlp, 2, w2l));
  ZS_OK_OR_DIE(zs_unit_get_param(m->mlp, 3, b2));
  ZS_OK_OR_DIE(zs_unit_get_param(m->mlp, 4, g));
  ZS_OK_OR_DIE(zs_engine_all_gather(m->e, ZS_MESH_TP, w1l, w1a, (size_t)Hl * D, ZS_F32));
  ZS_OK_OR_DIE(zs_engine_all_gather(m->e, ZS_MESH_TP, b1l, b1a, (size_t)Hl, ZS_F32));
  ZS_OK_OR_DIE(zs_engine_all_gather(m->e, ZS_MESH_TP, w2l, w2a, (size_t)D * Hl, ZS_F32));
  float *o = out;
  memcpy(o, sl, sizeof sl);
  o += D;
  memcpy(o, w1a, sizeof w1a); /* dim-0 slices: back to back already */
  o += H * D;
  memcpy(o, b1a, sizeof b1a);
  o += H;
  for (int q = 0; q < T; q++) /* dim-1 slices: rank q's columns q * Hl .. of every row */
    for (int i = 0; i < D; i++)
      for (int j = 0; j < Hl; j++)
        o[i * H + q * Hl + j] = w2a[(size_t)q * D * Hl + (size_t)i * Hl + j];
  o += D * H;
  memcpy(o, b2, sizeof b2);
  o += D;
  memcpy(o, g, sizeof g);
}

/* --muon 1: the matrices W1 (split on dim 0) and W2 (on dim 1) in a Muon group at twice the lr;
   --ada 1: W1, b1 (a vector split on dim 0) and W2 on Adafactor. Each one's whole step must see
   the whole tensor, joined over the tp group (tier/whole.h), and each Adafactor slice keep its
   share of the whole matrix's factors. */
static void whole_group(model *m, const opts *o) {
  zs_param_group pg;
  int gid;
  ZS_OK_OR_DIE(zs_engine_group_default(m->e, &pg));
  pg.optimizer = o->muon ? "muon" : "adafactor";
  pg.lr_scale = 2.0f;
  ZS_OK_OR_DIE(zs_engine_add_group(m->e, &pg, &gid));
  ZS_OK_OR_DIE(zs_unit_set_group(m->mlp, M_W1, gid));
  ZS_OK_OR_DIE(zs_unit_set_group(m->mlp, M_W2, gid));
  if (o->ada) ZS_OK_OR_DIE(zs_unit_set_group(m->mlp, M_B1, gid));
}

static void fill_config(const opts *o, zs_config *cfg) {
  zs_config c;
  zs_config_default(&c);
  c.stage = o->stage;
  c.tp_size = o->tp;
  c.deterministic = o->det;
  c.offload = o->offload ? ZS_OFFLOAD_OPTIMIZER | (o->stage == 3 ? ZS_OFFLOAD_PARAMS : 0) : 0;
  c.optim.lr = 1e-2f;
  c.optim.weight_decay = 0.01f;
  c.optim.max_grad_norm = 0.05f; /* clipping every step: the norm over the tp slices decides it */
  c.shard_group_size = o->group;
  if (o->sgd) { /* not scale-invariant as Adam nearly is: a wrong clip shows in the weights */
    ZS_OK_OR_DIE(zs_optimizer_id("sgd", &c.optimizer));
    c.sgd.momentum = 0.9f;
    c.optim.lr = 0.2f;
  }
  *cfg = c;
}

/* --muon 1, --ada 1: zs_plan_model_units over every rank with the tensors' slices and tp layouts
   is the engine's plan on every rank (the whole steps joined over tp; without the layouts 128
   bytes short at tp 2; Adafactor's arrays sized by tp rank 0's share of the factors, the most),
   and the training's buffers (checked after it) stay within it. */
static void check_whole_plan(const model *m, const opts *o, zs_memory *plan) {
  zs_config c = *zs_engine_config(m->e); /* with what the environment set (the tier's runs) */
  int muon = -1, ada = -1;
  ZS_OK_OR_DIE(zs_optimizer_id("muon", &muon));
  ZS_OK_OR_DIE(zs_optimizer_id("adafactor", &ada));
  const int Hl = m->Hl;
  const zs_tensor_desc sd[1] = {{"s", 1, {D, 0, 0, 0}, 1}};
  const zs_tensor_desc md[NT] = {{"w1", 2, {Hl, D, 0, 0}, 0},
                                 {"b1", 1, {Hl, 0, 0, 0}, 1},
                                 {"w2", 2, {D, Hl, 0, 0}, 0},
                                 {"b2", 1, {D, 0, 0, 0}, 1},
                                 {"g", 1, {D, 0, 0, 0}, 1}};
  const int w = o->muon ? muon : ada, opt[NT] = {w, o->ada ? ada : -1, w, -1, -1};
  const int tp[NT] = {ZS_TP_SPLIT_DIM0, ZS_TP_SPLIT_DIM0, ZS_TP_SPLIT_DIM1, ZS_TP_PARTIAL_GRAD,
                      ZS_TP_PARTIAL_GRAD};
  const zs_plan_unit pu[2] = {{1, sd, NULL, 0, NULL}, {NT, md, opt, 0, NULL}};
  const int *const lays[2] = {NULL, tp};
  zs_plan_report r, bare;
  ZS_OK_OR_DIE(zs_engine_plan_memory(m->e, plan));
  ZS_OK_OR_DIE(zs_plan_model_units_tp(&c, m->R * m->T, pu, lays, 2, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_EXPECT(r.params == plan->params.cur && r.grads == plan->grads.cur &&
                r.optimizer == plan->optimizer.cur && r.buffers == plan->buffers.cur &&
                r.host_pinned == plan->host_pinned.cur,
            "zs_plan_model_units: params %zu grads %zu optimizer %zu buffers %zu host %zu; the "
            "engine's plan %zu %zu %zu %zu %zu",
            r.params, r.grads, r.optimizer, r.buffers, r.host_pinned, (size_t)plan->params.cur,
            (size_t)plan->grads.cur, (size_t)plan->optimizer.cur, (size_t)plan->buffers.cur,
            (size_t)plan->host_pinned.cur);
  /* The bare planner too shards over the data-parallel ranks of every rank's count, and refuses
     a tp_size that does not divide it as create does. */
  const int64_t numel[2] = {D, 2 * Hl * D + Hl + 2 * D};
  ZS_OK_OR_DIE(zs_plan_model(&c, m->R * m->T, numel, 2, 0, SIZE_MAX, SIZE_MAX, &bare));
  ZS_EXPECT(bare.params == plan->params.cur && bare.grads == plan->grads.cur,
            "zs_plan_model: params %zu grads %zu; the engine's plan %zu %zu", bare.params,
            bare.grads, (size_t)plan->params.cur, (size_t)plan->grads.cur);
  /* A configuration on Muon: the bare planner bounds the whole step of any unit of its size,
     also a split matrix's, joined (the exact planner: one unit, W2's slice, split on dim 1). */
  zs_config cm = c;
  ZS_OK_OR_DIE(zs_optimizer_id("muon", &cm.optimizer));
  const int64_t n2 = (int64_t)D * Hl;
  const int *const lay2[1] = {&tp[M_W2]};
  const zs_plan_unit w2[1] = {{1, &md[M_W2], NULL, 0, NULL}};
  ZS_OK_OR_DIE(zs_plan_model_units_tp(&cm, m->R * m->T, w2, lay2, 1, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_OK_OR_DIE(zs_plan_model(&cm, m->R * m->T, &n2, 1, 0, SIZE_MAX, SIZE_MAX, &bare));
  ZS_EXPECT(bare.buffers >= r.buffers,
            "tp %d: zs_plan_model's buffers %zu below the split W2's %zu", m->T, bare.buffers,
            r.buffers);
  /* The layouts zs_unit_set_tp and commit refuse, refused alike. */
  const int bad_lay[1] = {9}, dim1[1] = {ZS_TP_SPLIT_DIM1};
  const int *const bad[1] = {bad_lay}, *const vec1[1] = {dim1};
  const zs_plan_unit b1[1] = {{1, &md[M_B1], NULL, 0, NULL}};
  const int W = m->R * m->T;
  ZS_EXPECT_STATUS(zs_plan_model_units_tp(&c, W, w2, bad, 1, 0, SIZE_MAX, SIZE_MAX, &r),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_plan_model_units_tp(&c, W, b1, vec1, 1, 0, SIZE_MAX, SIZE_MAX, &r),
                   ZS_ERR_INVALID_ARG);
  /* A verdict counts data-parallel ranks, and says so at tp > 1. */
  ZS_OK_OR_DIE(zs_plan_model(&c, W, numel, 2, 0, 1, SIZE_MAX, &bare));
  char want[64];
  snprintf(want, sizeof want, "with %d%s rank", m->R, m->T > 1 ? " data-parallel" : "");
  ZS_EXPECT(!bare.fits && strstr(bare.verdict, want), "want '%s': %s", want, bare.verdict);
  if (m->T > 1) {
    ZS_EXPECT_STATUS(zs_plan_model(&c, m->T + 1, numel, 2, 0, SIZE_MAX, SIZE_MAX, &bare),
                     ZS_ERR_INVALID_ARG);
    ZS_EXPECT(strstr(zs_last_error(), "does not divide the world size"), "%s", zs_last_error());
    ZS_EXPECT_STATUS(
        zs_plan_model_units_tp(&c, m->T + 1, pu, lays, 2, 0, SIZE_MAX, SIZE_MAX, &bare),
        ZS_ERR_INVALID_ARG);
  }
}

/* --bytes-out / --bytes-base (above): after the steps, every rank's tp bus bytes. */
static void check_join_bytes(const model *m, zs_comm *comm, const opts *o) {
  enum { MAXW = 16 };
  const int W = m->R * m->T, rank = zs_comm_rank(comm);
  ZS_EXPECT(W <= MAXW, "%d ranks", W);
  double mine[MAXW] = {0}, all[MAXW];
  mine[rank] = (double)zs_test_facts(m->e).comm_tp_bus_bytes;
  ZS_OK_OR_DIE(zs_comm_allreduce(comm, mine, all, MAXW, ZS_HOST_F64, ZS_RED_SUM));
  if (rank != 0) return;
  if (o->bytes_out) {
    FILE *fo = fopen(o->bytes_out, "wb");
    ZS_EXPECT(fo && fwrite(all, sizeof all, 1, fo) == 1 && fclose(fo) == 0, "writing %s",
              o->bytes_out);
  }
  if (!o->bytes_base) return;
  double base[MAXW];
  FILE *fb = fopen(o->bytes_base, "rb");
  ZS_EXPECT(fb && fread(base, sizeof base, 1, fb) == 1, "reading %s", o->bytes_base);
  if (fb) fclose(fb);
  /* Per step, per split tensor of n slice elements, ci input and co output channels: (ci + co) *
     n * 4 * (T - 1) bytes on each rank of the owner's tp group; summed over the ranks of one tp
     rank, once. Muon: 1 + 1 channels, Adafactor 3 + 2. */
  const double n = (double)m->Hl * D, split = 2 * n + m->Hl; /* W1, W2; b1 */
  const double per_step = o->muon ? 2 * 2 * n : o->ada ? 5 * split : 0;
  /* The export's joins, and full_params' after the save (every tp group's: R times). */
  const double exported = o->export && o->save && o->save_at <= o->steps ? split * (1 + m->R) : 0;
  const double want = ((double)o->steps * per_step + exported) * 4 * (m->T - 1);
  for (int q = 0; q < m->T; q++) {
    double got = 0;
    for (int r = 0; r < m->R; r++) /* tp groups are consecutive ranks */
      got += all[r * m->T + q] - base[r * m->T + q];
    printf("tp rank %d: the joins moved %.0f bytes over its %d data-parallel ranks (want %.0f)\n",
           q, got, m->R, want);
    ZS_EXPECT(got == want, "tp rank %d: %.0f bytes beyond the base run's, want %.0f", q, got, want);
  }
}

static void make_engine(model *m, zs_comm *comm, const opts *o) {
  zs_config c;
  fill_config(o, &c);
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &m->e));
  ZS_OK_OR_DIE(zs_engine_mesh(m->e, ZS_MESH_TP, &m->q, &m->T));
  ZS_OK_OR_DIE(zs_engine_mesh(m->e, ZS_MESH_DP, &m->r, &m->R));
  ZS_EXPECT(m->T == o->tp && H % m->T == 0 && B % m->T == 0, "tp %d", m->T);
  m->Hl = H / m->T;
  m->Bl = B / m->T;
}

/* --broadcast 1: every rank but (tp 0, dp 0) overwrites what zs_engine_broadcast_params must
   restore (the data-parallel ranks but 0 every tensor, tp ranks but 0 their replicated ones),
   then the broadcast from data-parallel rank 0 makes every slice its dp root's and every
   replicated tensor tp rank 0's: the training that follows is the reference's. At stage 3 (also
   at dp 1, where the tp group is the only other ranks) it is refused, nothing changed. */
static void scramble_and_broadcast(model *m, int stage) {
  if (stage == 3) {
    ZS_EXPECT_STATUS(zs_engine_broadcast_params(m->e, 0), ZS_ERR_UNSUPPORTED);
    return;
  }
  float junk[H * D];
  for (int i = 0; i < H * D; i++)
    junk[i] = 3.0f + (float)(m->q * 7 + m->r * 13 + i % 5);
  if (m->r != 0 || m->q != 0) {
    ZS_OK_OR_DIE(zs_unit_set_param(m->scale, 0, junk));
    for (int t = M_B2; t <= M_G; t++)
      ZS_OK_OR_DIE(zs_unit_set_param(m->mlp, t, junk));
  }
  for (int t = M_W1; m->r != 0 && t <= M_W2; t++)
    ZS_OK_OR_DIE(zs_unit_set_param(m->mlp, t, junk));
  ZS_OK_OR_DIE(zs_engine_broadcast_params(m->e, 0));
}

static int train(zs_comm *comm, const opts *o) {
  model m = {0};
  make_engine(&m, comm, o);
  add_units(&m, 0);
  if (o->muon || o->ada) whole_group(&m, o);
  ZS_OK_OR_DIE(zs_engine_commit(m.e));
  zs_memory plan;
  if (o->muon || o->ada) check_whole_plan(&m, o, &plan);
  const char *nvme = getenv("ZS_NVME_PATH"); /* tp_equiv.sh's tier runs: the tier holds a unit */
  if (nvme && *nvme && (o->muon || o->ada))
    ZS_EXPECT(zs_test_facts(m.e).nvme_units >= 1, "ZS_NVME_PATH %s: no unit on the NVMe tier",
              nvme);
  set_slices(&m, o->whole);
  if (o->broadcast) scramble_and_broadcast(&m, o->stage);
  const int rank = zs_comm_rank(comm);
  double losses[64] = {0}, norms[64] = {0};
  static float full[NFULL], whole[NFULL], sfull[NFULL], gfull[NFULL];
  const char *state = o->sgd ? "momentum_buffer" : "exp_avg";
  char pf[4200];
  int start = 0;
  if (o->load) { /* the same tensors, bit for bit, at this rank's tp size and layout */
    ZS_OK_OR_DIE(zs_engine_load(m.e, o->load));
    start = (int)zs_engine_steps_done(m.e);
    full_params(&m, full);
    snprintf(pf, sizeof pf, "%s.params", o->load);
    static float saved[NFULL];
    FILE *f = fopen(pf, "rb");
    ZS_EXPECT(f && fread(saved, sizeof saved, 1, f) == 1, "reading %s", pf);
    if (f) fclose(f);
    ZS_EXPECT(memcmp(full, saved, sizeof saved) == 0, "the loaded tensors differ from the saved");
    ZS_EXPECT(start > 0 && start < o->steps, "loaded at step %d", start);
    if (o->export) ZS_OK_OR_DIE(zs_engine_export_safetensors(m.e, o->export));
  }
  for (int st = start; st < o->steps; st++) {
    ZS_OK_OR_DIE(zs_engine_begin_step(m.e, o->micro));
    double l = 0;
    for (int k = 0; k < o->micro; k++)
      l += micro_step(&m, (uint64_t)st * 1000 + (uint64_t)k * m.R + (uint64_t)m.r);
    if (st == o->steps - 1) { /* the last step's whole gradients, and back */
      whole_io(&m, 1, NULL, gfull, 0);
      whole_io(&m, 1, NULL, gfull, 1);
    }
    zs_step_stats ss;
    ZS_OK_OR_DIE(zs_engine_step(m.e, &ss));
    ZS_OK_OR_DIE(zs_comm_allreduce(comm, &l, &losses[st], 1, ZS_HOST_F64, ZS_RED_SUM));
    losses[st] /= (double)m.R * o->micro;
    ZS_EXPECT(isfinite(ss.grad_norm) && ss.grad_norm > 0, "grad norm %g", (double)ss.grad_norm);
    norms[st] = ss.grad_norm;
    if (rank == 0) printf("step %d loss %.9g grad_norm %.9g\n", st, losses[st], ss.grad_norm);
    if (o->save && st + 1 == o->save_at) {
      ZS_OK_OR_DIE(zs_engine_save(m.e, o->save));
      if (o->export) ZS_OK_OR_DIE(zs_engine_export_safetensors(m.e, o->export));
      full_params(&m, full);
      snprintf(pf, sizeof pf, "%s.params", o->save);
      FILE *f = rank == 0 ? fopen(pf, "wb") : NULL;
      ZS_EXPECT(rank || (f && fwrite(full, sizeof full, 1, f) == 1 && fclose(f) == 0), "writing %s",
                pf);
    }
  }
  if (o->bytes_out || o->bytes_base) check_join_bytes(&m, comm, o);
  full_params(&m, full);
  { /* the whole optimizer state; set back whole, each rank's slices stay what they were */
    static float before[NFULL], after[NFULL];
    whole_io(&m, 0, state, sfull, 0);
    state_slices(&m, state, before);
    whole_io(&m, 0, state, sfull, 1);
    state_slices(&m, state, after);
    ZS_EXPECT(memcmp(before, after, sizeof before) == 0,
              "zs_unit_set_state_whole changed this rank's slices");
  }
  /* zs_unit_get_param_whole puts the same tensors together as full_params does by hand. */
  float *w = whole;
  ZS_OK_OR_DIE(zs_unit_get_param_whole(m.scale, 0, w));
  w += D;
  const int wn[NT] = {H * D, H, D * H, D, D};
  for (int t = 0; t < NT; t++, w += wn[t - 1])
    ZS_OK_OR_DIE(zs_unit_get_param_whole(m.mlp, t, w));
  ZS_EXPECT(memcmp(full, whole, sizeof full) == 0, "zs_unit_get_param_whole differs");
  /* So does zs_engine_get_params, in one call. */
  memset(whole, 0, sizeof whole);
  whole_ctx wc = {&m, whole};
  ZS_OK_OR_DIE(zs_engine_get_params(m.e, locate_whole, &wc));
  ZS_EXPECT(memcmp(full, whole, sizeof full) == 0, "zs_engine_get_params differs");
  /* Every tp rank holds the same whole tensors (s, b2, g), and every rank saw the same norms. */
  enum { OB2 = D + H * D + H + D * H };
  float rep[3 * D], reps[4 * 3 * D];
  memcpy(rep, full, D * sizeof(float));
  memcpy(rep + D, full + OB2, 2 * D * sizeof(float));
  ZS_OK_OR_DIE(zs_engine_all_gather(m.e, ZS_MESH_TP, rep, reps, 3 * D, ZS_F32));
  for (int q = 0; q < m.T; q++)
    ZS_EXPECT(memcmp(reps + q * 3 * D, rep, sizeof rep) == 0, "tp rank %d's whole tensors differ",
              q);
  double nmax[64], nmin[64];
  ZS_OK_OR_DIE(zs_comm_allreduce(comm, norms, nmax, (size_t)o->steps, ZS_HOST_F64, ZS_RED_MAX));
  ZS_OK_OR_DIE(zs_comm_allreduce(comm, norms, nmin, (size_t)o->steps, ZS_HOST_F64, ZS_RED_MIN));
  ZS_EXPECT(memcmp(nmax, nmin, (size_t)o->steps * sizeof(double)) == 0,
            "the ranks' gradient norms differ");
  if (rank == 0 && o->write) {
    FILE *f = fopen(o->write, "wb");
    ZS_EXPECT(f && fwrite(full, sizeof full, 1, f) == 1 &&
                  fwrite(losses, sizeof(double), (size_t)o->steps, f) == (size_t)o->steps &&
                  fwrite(norms, sizeof(double), (size_t)o->steps, f) == (size_t)o->steps &&
                  fwrite(sfull, sizeof sfull, 1, f) == 1 &&
                  fwrite(gfull, sizeof gfull, 1, f) == 1 && fclose(f) == 0,
              "writing %s", o->write);
  }
  if (rank == 0 && o->compare) {
    static float ref[NFULL], rs[NFULL], rg[NFULL];
    double rl[64], rn[64];
    FILE *f = fopen(o->compare, "rb");
    ZS_EXPECT(f && fread(ref, sizeof ref, 1, f) == 1 &&
                  fread(rl, sizeof(double), (size_t)o->steps, f) == (size_t)o->steps &&
                  fread(rn, sizeof(double), (size_t)o->steps, f) == (size_t)o->steps &&
                  fread(rs, sizeof rs, 1, f) == 1 && fread(rg, sizeof rg, 1, f) == 1,
              "reading %s", o->compare);
    fclose(f);
    double big = 0, diff = 0, ldiff = 0, ndiff = 0, sbig = 0, sdiff = 0, gbig = 0, gdiff = 0;
    for (int i = 0; i < NFULL; i++) {
      big = fmax(big, fabs(ref[i]));
      diff = fmax(diff, fabs((double)full[i] - ref[i]));
      sbig = fmax(sbig, fabs(rs[i]));
      sdiff = fmax(sdiff, fabs((double)sfull[i] - rs[i]));
      gbig = fmax(gbig, fabs(rg[i]));
      gdiff = fmax(gdiff, fabs((double)gfull[i] - rg[i]));
    }
    for (int st = start; st < o->steps; st++) {
      ldiff = fmax(ldiff, fabs(losses[st] - rl[st]) / fabs(rl[st]));
      ndiff = fmax(ndiff, fabs(norms[st] - rn[st]) / fabs(rn[st]));
    }
    printf("tp %d x dp %d x micro %d, stage %d%s%s%s%s: params differ by %.3g of their largest "
           "magnitude %.3g, gradient norms by %.3g, losses by %.3g (tolerance %g)\n",
           m.T, m.R, o->micro, o->stage, o->det ? ", deterministic" : "",
           o->offload ? ", offloaded" : "", o->group ? ", hybrid" : "", o->sgd ? ", SGD" : "",
           diff / big, big, ndiff, ldiff, o->tol);
    printf("  whole %s by %.3g of its largest %.3g, the last step's whole gradients by %.3g of "
           "theirs %.3g\n",
           state, sdiff / sbig, sbig, gdiff / gbig, gbig);
    /* The logged loss is summed over every rank by zs_comm_allreduce: its order follows the
       world size even where the training's bits do not. */
    ZS_EXPECT(diff <= o->tol * big && ndiff <= o->tol && ldiff <= fmax(o->tol, 1e-12) &&
                  sdiff <= o->tol * sbig && gdiff <= o->tol * gbig,
              "beyond the tolerance %g", o->tol);
    if (o->tol == 0)
      ZS_EXPECT(memcmp(full, ref, sizeof ref) == 0 && memcmp(sfull, rs, sizeof rs) == 0 &&
                    memcmp(gfull, rg, sizeof rg) == 0,
                "not bit-identical");
  }
  zs_memory used;
  ZS_OK_OR_DIE(zs_engine_memory(m.e, &used));
  ZS_EXPECT(!(o->muon || o->ada) || used.buffers.peak <= plan.buffers.cur,
            "the buffers' peak %zu over the plan's %zu", (size_t)used.buffers.peak,
            (size_t)plan.buffers.cur);
  zs_engine_destroy(m.e);
  return 0;
}

/* The refusals (4 ranks): each on every rank, nothing changed. */
static int bad(zs_comm *comm, const opts *o) {
  const int rank = zs_comm_rank(comm);
  zs_config c;
  zs_config_default(&c);
  zs_engine *e = NULL;
  c.tp_size = 3; /* does not divide 4 */
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(e == NULL && strstr(zs_last_error(), "tp_size 3 does not divide the world size 4"),
            "%s", zs_last_error());
  c.tp_size = 0;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  c.tp_size = 2;
  c.shard_group_size = 4; /* the data-parallel size is 2 */
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "does not divide the data-parallel size 2"), "%s",
            zs_last_error());
  /* A split of a dimension the tensor lacks; then layouts that differ on rank 3. */
  opts o2 = *o;
  o2.tp = 2;
  model m = {0};
  make_engine(&m, comm, &o2);
  zs_tensor_desc v = {"v", 1, {4, 0, 0, 0}, 0};
  zs_unit *u;
  ZS_OK_OR_DIE(zs_engine_add_unit(m.e, "vec", 1, &v, &u));
  ZS_EXPECT_STATUS(zs_unit_set_tp(u, 0, ZS_TP_SPLIT_DIM1), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "has 1 dimension(s); ZS_TP_SPLIT_DIM1 splits dimension 1"),
            "%s", zs_last_error());
  ZS_EXPECT_STATUS(zs_unit_set_tp(u, 0, (zs_tp_layout)9), ZS_ERR_INVALID_ARG);
  add_units(&m, rank == 3);
  ZS_EXPECT_STATUS(zs_engine_commit(m.e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "tp layouts (zs_unit_set_tp)"), "%s", zs_last_error());
  zs_engine_destroy(m.e);
  /* The same model, agreed: the model's collectives refuse bad arguments. */
  model k = {0};
  make_engine(&k, comm, &o2);
  add_units(&k, 0);
  ZS_EXPECT_STATUS(zs_engine_all_reduce(k.e, ZS_MESH_TP, &v, 0, ZS_F32), ZS_ERR_STATE);
  ZS_OK_OR_DIE(zs_engine_commit(k.e));
  set_slices(&k, 1);
  float buf[4] = {1, 2, 3, 4};
  ZS_EXPECT_STATUS(zs_engine_all_reduce(k.e, ZS_MESH_DP, buf, 4, ZS_F32), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_all_gather(k.e, ZS_MESH_TP, buf + 1, buf, 2, ZS_F32),
                   ZS_ERR_INVALID_ARG); /* send inside recv */
  ZS_EXPECT_STATUS(zs_engine_all_reduce(k.e, ZS_MESH_TP, buf, 4, (zs_dtype)7), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_engine_all_reduce(k.e, ZS_MESH_TP, buf, 4, ZS_F32)); /* still healthy */
  ZS_EXPECT(buf[0] == 2 && buf[3] == 8, "all_reduce over 2 ranks: %g %g", buf[0], buf[3]);
  /* A replicated tensor set on one rank only (rank 1: another dp group than rank 0's): every
     rank's step refuses it and the engine stays usable. */
  float s1[D], s2[D];
  ZS_OK_OR_DIE(zs_unit_get_param(k.scale, 0, s1));
  memcpy(s2, s1, sizeof s1);
  s2[0] += 0.5f;
  if (rank == 1) ZS_OK_OR_DIE(zs_unit_set_param(k.scale, 0, s2));
  ZS_OK_OR_DIE(zs_engine_begin_step(k.e, 1));
  micro_step(&k, 0);
  ZS_EXPECT_STATUS(zs_engine_step(k.e, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "differ across"), "%s", zs_last_error());
  ZS_OK_OR_DIE(zs_unit_set_param(k.scale, 0, s1));
  ZS_OK_OR_DIE(zs_engine_begin_step(k.e, 1));
  micro_step(&k, 0);
  ZS_OK_OR_DIE(zs_engine_step(k.e, NULL));
  zs_engine_destroy(k.e);
  /* Ranks of one tp group whose calls of the kind only some tp groups make differ (the whole
     step's joins: their second running hash, changed by hand on rank 0 as an extra such call
     would): every rank's step fails at once with the same verdict naming the tp group, also with
     the header check off (comm_check 0: the hashes are the only check). */
  setenv("ZS_COMM_CHECK", "0", 1);
  opts o3 = o2;
  o3.muon = 1;
  model w = {0};
  make_engine(&w, comm, &o3);
  unsetenv("ZS_COMM_CHECK");
  add_units(&w, 0);
  whole_group(&w, &o3);
  ZS_OK_OR_DIE(zs_engine_commit(w.e));
  set_slices(&w, 1);
  ZS_OK_OR_DIE(zs_engine_begin_step(w.e, 1));
  micro_step(&w, 0);
  ZS_OK_OR_DIE(zs_engine_step(w.e, NULL));
  if (rank == 0) w.e->tp->sig_role_hash ^= 1;
  ZS_OK_OR_DIE(zs_engine_begin_step(w.e, 1));
  micro_step(&w, 1);
  ZS_EXPECT_STATUS(zs_engine_step(w.e, NULL), ZS_ERR_COMM);
  ZS_EXPECT(strstr(zs_last_error(), "ranks 0 and 1, of one tp group"), "%s", zs_last_error());
  zs_engine_destroy(w.e);
  return 0;
}

int main(int argc, char **argv) {
  opts o = {3, 1, 1, 1,    20,   0,    0,    0,    0,    0,    0,
            0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1e-5};
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const struct {
    const char *name;
    int *v;
  } ints[] = {{"--stage", &o.stage}, {"--tp", &o.tp},           {"--micro", &o.micro},
              {"--det", &o.det},     {"--steps", &o.steps},     {"--offload", &o.offload},
              {"--bad", &o.bad},     {"--sgd", &o.sgd},         {"--group", &o.group},
              {"--whole", &o.whole}, {"--save-at", &o.save_at}, {"--broadcast", &o.broadcast},
              {"--muon", &o.muon},   {"--ada", &o.ada}};
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    int known = 1;
    if (!strcmp(k, "--write"))
      o.write = v;
    else if (!strcmp(k, "--compare"))
      o.compare = v;
    else if (!strcmp(k, "--save"))
      o.save = v;
    else if (!strcmp(k, "--load"))
      o.load = v;
    else if (!strcmp(k, "--export"))
      o.export = v;
    else if (!strcmp(k, "--bytes-out"))
      o.bytes_out = v;
    else if (!strcmp(k, "--bytes-base"))
      o.bytes_base = v;
    else if (!strcmp(k, "--tol"))
      o.tol = atof(v);
    else
      known = 0;
    for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
      if (!strcmp(k, ints[j].name)) *ints[j].v = atoi(v), known = 1;
    ZS_EXPECT(known, "unknown option %s", k);
  }
  ZS_EXPECT(o.steps >= 1 && o.steps <= 64, "--steps %d: 1..64", o.steps);
  const int rank = zs_comm_rank(comm), rc = o.bad ? bad(comm, &o) : train(comm, &o);
  zs_comm_destroy(comm);
  if (rc == 0 && rank == 0 && !zs_test_failures) printf("test_engine_tp: OK\n");
  if (rc) return rc;
  ZS_TEST_END("test_engine_tp");
}
