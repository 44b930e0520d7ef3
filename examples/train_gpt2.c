/* train_gpt2: GPT-2 trained with zshard, from a C loop that uses only the public API. Read it
 * top to bottom: the model's forward (a block, then the whole network with gather -> kernels ->
 * release per unit), its backward (zs_unit_grad -> kernels -> zs_unit_grads_ready per unit), one
 * micro-step, then the run: setup, the step loop (zs_engine_begin_step, micro-steps,
 * zs_engine_step), evaluation and reporting.
 *
 *   mpirun -np 4 build/train_gpt2 --stage 3 --layers 4 --channels 128 --heads 4 --seq 64
 *   build/train_gpt2 --device cuda --dtype bf16 --model d12 --data tokens.bin --seq 1024
 *
 * The model is registered as units (embedding, one per block, final layernorm; the LM head is
 * tied to wte). Each step: zs_engine_begin_step, then per micro-step the forward gathers and
 * releases every unit in order and the backward gathers, writes zs_unit_grad, signals
 * zs_unit_grads_ready and releases in reverse (below), then zs_engine_step (train(), below).
 * Features live in gpt2/: config (sizes), layout (units), init + init_hf + safetensors (weights),
 * model (activation buffers), sample, dump (weight files; gradient dumps only in the test build),
 * hf_export; what train_llama shares with it in common/: the shared options, token data, device
 * memory, engine and kernels setup, the parts of the step loop (resume, the step's log,
 * checkpoints and validation), metrics and plot, the memory and end reports, unit pointers, token
 * I/O, the sampler. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/data.h"
#include "common/lr_schedule.h"
#include "common/metrics.h"
#include "common/out_paths.h"
#include "common/precision.h"
#include "common/token_io.h"
#include "common/train_run.h"
#include "common/unit_pointers.h"
#include "common/util.h"
#include "gpt2/args.h"
#include "gpt2/dump.h"
#include "gpt2/hf_export.h"
#include "gpt2/init.h"
#include "gpt2/model.h"
#include "gpt2/sample.h"
#include "zshard_kernels.h"

/* ======== The model: forward ========
 * A pre-norm GPT-2 block on its unit's gathered params p[]:
 *   res2 = x + proj(attn(qkv(ln1(x))))      y = res2 + fcproj(gelu(fc(ln2(res2)))) */
static int block_forward(gpt2_model *m, void *const *p, gpt2_block_acts *a, const void *x, void *y,
                         int B) {
  zs_kernels *k = m->k;
  int T = m->T, C = m->cfg.channels, NH = m->cfg.heads, N = B * T;
  size_t NC = (size_t)N * C;
  void *tmp = m->dln; /* projection outputs live only until the residual add */
  ZS_TRY(
      zs_k_layernorm_fwd(k, a->ln1, a->ln1_mean, a->ln1_rstd, x, p[BLK_LN1_W], p[BLK_LN1_B], N, C));
  ZS_TRY(zs_k_matmul_fwd(k, a->qkv, a->ln1, p[BLK_QKV_W], p[BLK_QKV_B], N, C, 3 * C));
  ZS_TRY(zs_k_attention_fwd(k, a->atty, a->lse, a->qkv, B, T, C, NH));
  ZS_TRY(zs_k_matmul_fwd(k, tmp, a->atty, p[BLK_PROJ_W], p[BLK_PROJ_B], N, C, C));
  ZS_TRY(zs_k_residual_fwd(k, a->res2, x, tmp, NC));
  ZS_TRY(zs_k_layernorm_fwd(k, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, p[BLK_LN2_W],
                            p[BLK_LN2_B], N, C));
  ZS_TRY(zs_k_matmul_fwd(k, a->fch, a->ln2, p[BLK_FC_W], p[BLK_FC_B], N, C, 4 * C));
  ZS_TRY(zs_k_gelu_fwd(k, a->fch_gelu, a->fch, 4 * NC));
  ZS_TRY(zs_k_matmul_fwd(k, tmp, a->fch_gelu, p[BLK_FCPROJ_W], p[BLK_FCPROJ_B], N, 4 * C, C));
  ZS_TRY(zs_k_residual_fwd(k, y, a->res2, tmp, NC));
  return 0;
}

/* ======== The model: backward ========
 * On entry m->dres holds dL/dy (the block's output); on exit it holds dL/dx. The residual adds
 * need no kernel: dL/dy flows unchanged into both branches, and each layernorm backward adds its
 * input gradient onto m->dres in place. Scratch: dln (C per token), dA and dB (4C per token). */
/* MLP half: y = res2 + fcproj(gelu(fc(ln2(res2)))). */
static int mlp_bwd(gpt2_model *m, void *const *p, void *const *g, const gpt2_block_acts *a) {
  zs_kernels *k = m->k;
  int N = m->B * m->T, C = m->cfg.channels;
  size_t NC = (size_t)N * C, esz = m->dev.esz;
  void *dfch_gelu = m->dA, *dfch = m->dB, *dln2 = m->dln;
  TRY(gpt2_dev_zero(&m->dev, dfch_gelu, 4 * NC * esz));
  ZS_TRY(zs_k_matmul_bwd(k, dfch_gelu, g[BLK_FCPROJ_W], g[BLK_FCPROJ_B], m->dres, a->fch_gelu,
                         p[BLK_FCPROJ_W], N, 4 * C, C));
  TRY(gpt2_dev_zero(&m->dev, dfch, 4 * NC * esz));
  ZS_TRY(zs_k_gelu_bwd(k, dfch, a->fch, dfch_gelu, 4 * NC));
  TRY(gpt2_dev_zero(&m->dev, dln2, NC * esz));
  ZS_TRY(
      zs_k_matmul_bwd(k, dln2, g[BLK_FC_W], g[BLK_FC_B], dfch, a->ln2, p[BLK_FC_W], N, C, 4 * C));
  ZS_TRY(zs_k_layernorm_bwd(k, m->dres, g[BLK_LN2_W], g[BLK_LN2_B], dln2, a->res2, p[BLK_LN2_W],
                            a->ln2_mean, a->ln2_rstd, N, C));
  return 0;
}

/* Attention half: res2 = x + proj(attn(qkv(ln1(x)))). */
static int attn_bwd(gpt2_model *m, void *const *p, void *const *g, const gpt2_block_acts *a,
                    const void *x) {
  zs_kernels *k = m->k;
  int B = m->B, T = m->T, N = B * T, C = m->cfg.channels, NH = m->cfg.heads;
  size_t NC = (size_t)N * C, esz = m->dev.esz;
  void *datty = m->dln, *dqkv = m->dB, *dln1 = m->dA;
  TRY(gpt2_dev_zero(&m->dev, datty, NC * esz));
  ZS_TRY(zs_k_matmul_bwd(k, datty, g[BLK_PROJ_W], g[BLK_PROJ_B], m->dres, a->atty, p[BLK_PROJ_W], N,
                         C, C));
  TRY(gpt2_dev_zero(&m->dev, dqkv, 3 * NC * esz));
  ZS_TRY(zs_k_attention_bwd(k, dqkv, datty, a->qkv, a->atty, a->lse, B, T, C, NH));
  TRY(gpt2_dev_zero(&m->dev, dln1, NC * esz));
  ZS_TRY(zs_k_matmul_bwd(k, dln1, g[BLK_QKV_W], g[BLK_QKV_B], dqkv, a->ln1, p[BLK_QKV_W], N, C,
                         3 * C));
  ZS_TRY(zs_k_layernorm_bwd(k, m->dres, g[BLK_LN1_W], g[BLK_LN1_B], dln1, x, p[BLK_LN1_W],
                            a->ln1_mean, a->ln1_rstd, N, C));
  return 0;
}

static int block_backward(gpt2_model *m, void *const *p, void *const *g, const gpt2_block_acts *a,
                          const void *x) {
  TRY(mlp_bwd(m, p, g, a));
  return attn_bwd(m, p, g, a, x);
}

/* ======== One micro-step on the engine ========
One micro-step on the engine. Every unit is used as: gather -> zs_unit_param -> kernels ->
 * release in forward, and gather -> kernels writing zs_unit_grad -> grads_ready -> release in
 * backward (reverse order). The LM head is tied to wte, so the embedding unit is gathered a
 * second time for the head: its forward and backward run back to back while it is gathered, the
 * head's share of the wte gradient goes into the embedding unit's gradient, and grads_ready for
 * the embedding comes once, at the very end, after the lookup's share is added too. The lookup's
 * backward needs no params, so the embedding is gathered twice per micro-step, not three times.
 *
 * Deterministic mode needs nothing here but the data order (micro-step m of rank r reads global
 * micro-batch m * ranks + r, common/data.c): the engine hands out each micro-step's gradient in its
 * own zeroed buffer and folds it in once at zs_unit_grads_ready, so the kernels' many +=
 * (GEMM blocking, row-by-row layernorm sums, the two uses of wte) still give every ranks x
 * micro-steps split the bits of one rank. */

/* Test hooks (the gradient dumps the PyTorch reference test reads) exist only in the test build
   of this program (train_gpt2_dump, GPT2_TEST_HOOKS); in train_gpt2 they are nothing. */
#ifdef GPT2_TEST_HOOKS
#define TEST_HOOK(m, u, phase)                                                                     \
  do {                                                                                             \
    if ((m)->hook) TRY((m)->hook((m)->hook_ctx, (m), (u), (phase)));                               \
  } while (0)
#define TEST_HOOKS_ON(m) ((m)->hook != NULL)
#else
#define TEST_HOOK(m, u, phase) ((void)0)
#define TEST_HOOKS_ON(m) 0
#endif

/* Gathered param pointers of unit u (widen slot 0 with bf16 params on the CPU device). */
static int params(gpt2_model *m, int u, void **p) {
  return ex_unit_params(gpt2_unit(&m->units, u), &m->widen, 0, p);
}

/* Gradient pointers of unit u. In deterministic mode the engine stages each micro-step's
   gradient itself, so the kernels may += into these as often as they like. A frozen unit's go to
   the zeroed throw-away buffer. */
static int grads(gpt2_model *m, int u, void **g) {
  return ex_unit_grads(gpt2_unit(&m->units, u), &m->dev, m->frozen_grads, &m->widen, 0, g);
}

/* End of unit u's backward: run the hook, grads_ready, and release when the backward gathered
   the unit (the embedding's lookup backward needs no params). */
static int unit_bwd_done(gpt2_model *m, int u, int gathered) {
  zs_unit *unit = gpt2_unit(&m->units, u);
  TEST_HOOK(m, u, "final");
  TRY(gpt2_widen_fold(&m->widen, 0)); /* bf16 params: the fp32 gradient into the engine's */
  ZS_TRY(zs_unit_grads_ready(unit));
  if (gathered) ZS_TRY(zs_unit_release(unit));
  return 0;
}

/* Embedding, blocks and final layernorm for b sequences already uploaded to m->tok. */
static int forward_body(gpt2_model *m, int b) {
  int L = m->cfg.layers, T = m->T, C = m->cfg.channels, N = b * T;
  void *p[GPT2_MAX_UNIT_TENSORS];
  ZS_TRY(zs_unit_gather(m->units.emb));
  TRY(params(m, 0, p));
  ZS_TRY(zs_k_encoder_fwd(m->k, m->res[0], m->tok, p[EMB_WTE], p[EMB_WPE], b, T, C));
  ZS_TRY(zs_unit_release(m->units.emb));
  for (int l = 0; l < L; l++) {
    zs_unit *unit = m->units.blocks[l];
    ZS_TRY(zs_unit_gather(unit));
    TRY(params(m, l + 1, p));
    TRY(block_forward(m, p, &m->acts[m->recompute ? 0 : l], m->res[l], m->res[l + 1], b));
    ZS_TRY(zs_unit_release(unit));
  }
  ZS_TRY(zs_unit_gather(m->units.lnf));
  TRY(params(m, L + 1, p));
  ZS_TRY(zs_k_layernorm_fwd(m->k, m->lnf, m->lnf_mean, m->lnf_rstd, m->res[L], p[LNF_W], p[LNF_B],
                            N, C));
  ZS_TRY(zs_unit_release(m->units.lnf));
  return 0;
}

/* Uploads b sequences of tokens (and targets when given). */
static int upload(gpt2_model *m, const int *tok, const int *tgt, int b) {
  return ex_upload_tokens(&m->dev, m->tok, m->tgt, tok, tgt, (size_t)b * m->T);
}

/* Mean of the first n per-token losses (summed in double, in order). */
static int mean_loss(gpt2_model *m, int n, float *loss) {
  return ex_mean_loss(&m->dev, m->host_losses, m->losses, n, loss);
}

/* LM head forward (+ loss and backward when training) with the embedding unit gathered. */
static int head(gpt2_model *m, int b, int train) {
  int N = b * m->T, C = m->cfg.channels, V = m->cfg.vocab, Vp = m->cfg.padded_vocab;
  void *p[GPT2_MAX_UNIT_TENSORS], *g[GPT2_MAX_UNIT_TENSORS];
  ZS_TRY(zs_unit_gather(m->units.emb));
  TRY(params(m, 0, p));
  ZS_TRY(zs_k_matmul_fwd(m->k, m->logits, m->lnf, p[EMB_WTE], NULL, N, C, Vp));
  if (train) TEST_HOOK(m, 0, "logits");
  if (train) {
    TRY(grads(m, 0, g));
    ZS_TRY(zs_k_softmax_xent(m->k, m->losses, m->logits, m->logits, m->tgt, 1.0f / (float)N, N, V,
                             Vp));
    TRY(gpt2_dev_zero(&m->dev, m->dln, (size_t)N * C * m->dev.esz));
    ZS_TRY(
        zs_k_matmul_bwd(m->k, m->dln, g[EMB_WTE], NULL, m->logits, m->lnf, p[EMB_WTE], N, C, Vp));
    TEST_HOOK(m, 0, "head");
    /* The head's share of the tied wte gradient is reduced now, so the embedding's full
       gradient does not live through the whole backward (a no-op with full gradients and in
       deterministic mode). Gradient dumps (the hook) need the whole local gradient at the end:
       no flush then. */
    TRY(gpt2_widen_fold(&m->widen, 0));
    if (!TEST_HOOKS_ON(m)) ZS_TRY(zs_unit_grads_flush(m->units.emb));
  }
  ZS_TRY(zs_unit_release(m->units.emb));
  return 0;
}

/* Backward from dL/dlnf (in m->dln) down to the embedding. */
static int backward(gpt2_model *m) {
  int L = m->cfg.layers, T = m->T, B = m->B, N = B * T, C = m->cfg.channels;
  void *p[GPT2_MAX_UNIT_TENSORS], *g[GPT2_MAX_UNIT_TENSORS];
  ZS_TRY(zs_unit_gather(m->units.lnf));
  TRY(params(m, L + 1, p));
  TRY(grads(m, L + 1, g));
  TRY(gpt2_dev_zero(&m->dev, m->dres, (size_t)N * C * m->dev.esz));
  ZS_TRY(zs_k_layernorm_bwd(m->k, m->dres, g[LNF_W], g[LNF_B], m->dln, m->res[L], p[LNF_W],
                            m->lnf_mean, m->lnf_rstd, N, C));
  TRY(unit_bwd_done(m, L + 1, 1));
  for (int l = L - 1; l >= 0; l--) {
    gpt2_block_acts *a = &m->acts[m->recompute ? 0 : l];
    ZS_TRY(zs_unit_gather(m->units.blocks[l]));
    TRY(params(m, l + 1, p));
    if (m->recompute) TRY(block_forward(m, p, a, m->res[l], m->res[l + 1], B));
    TRY(grads(m, l + 1, g));
    TRY(block_backward(m, p, g, a, m->res[l]));
    TRY(unit_bwd_done(m, l + 1, 1));
  }
  /* The lookup's backward reads only token ids: no gather of the (largest) embedding unit. */
  if (!zs_unit_is_frozen(m->units.emb)) { /* it computes weight gradients only */
    TRY(grads(m, 0, g)); /* wte's gradient still holds the head's share (unless flushed) */
    ZS_TRY(zs_k_encoder_bwd(m->k, g[EMB_WTE], g[EMB_WPE], m->dres, m->tok, B, T, C));
  }
  return unit_bwd_done(m, 0, 0);
}

int gpt2_train_micro(gpt2_model *m, const int *tok, const int *tgt, float *loss) {
  TRY(upload(m, tok, tgt, m->B));
  TRY(forward_body(m, m->B));
  TRY(head(m, m->B, 1));
  TRY(backward(m));
  return mean_loss(m, m->B * m->T, loss);
}

int gpt2_eval(gpt2_model *m, const int *tok, const int *tgt, int b, float *loss) {
  if (b > m->B) return gpt2_fail("eval batch %d exceeds the buffers' %d", b, m->B);
  TRY(upload(m, tok, tgt, b));
  TRY(forward_body(m, b));
  TRY(head(m, b, 0));
  int N = b * m->T;
  ZS_TRY(zs_k_softmax_xent(m->k, m->losses, NULL, m->logits, m->tgt, 1.0f, N, m->cfg.vocab,
                           m->cfg.padded_vocab));
  return mean_loss(m, N, loss);
}

int gpt2_forward_logits(gpt2_model *m, const int *tok) {
  TRY(upload(m, tok, NULL, 1));
  TRY(forward_body(m, 1));
  return head(m, 1, 0);
}

/* ======== Running: setup, the step loop, reporting ======== */

/* Everything one process holds: the run both examples share (common/train_run.h) and GPT-2's. */
typedef struct {
  gpt2_args a;
  ex_run x;
  gpt2_config cfg;
  gpt2_units units;
  gpt2_model model;
  gpt2_dump dump;
} run;

/* Model shape from the preset / flags / safetensors file and the data's vocabulary. */
static int resolve_config(run *r) {
  const gpt2_args *a = &r->a;
  const gpt2_data *data = &r->x.data;
  gpt2_config *c = &r->cfg;
  memset(c, 0, sizeof *c);
  if (a->init_safetensors) {
    TRY(gpt2_config_from_safetensors(a->init_safetensors, a->heads, c));
  } else {
    c->layers = a->layers;
    c->channels = a->channels;
    c->heads = a->heads > 0 ? a->heads : 4;
    c->max_seq = a->max_seq > 0 ? a->max_seq : a->t.seq;
    if (a->model && gpt2_config_preset(c, a->model) != 0)
      return gpt2_fail("--model %s is not a preset: use d12, d24, d36 or d48", a->model);
    if (a->max_seq > 0) c->max_seq = a->max_seq;
    c->vocab = a->vocab > 0 ? a->vocab : (data->is_text ? 256 : 50257);
    if (c->vocab < data->vocab) c->vocab = data->vocab;
    c->padded_vocab = gpt2_pad_vocab(c->vocab);
  }
  if (data->vocab > c->vocab)
    return gpt2_fail("the data has token ids up to %d but the model's vocabulary is %d",
                     data->vocab - 1, c->vocab);
  const char *why = gpt2_config_check(c);
  if (why) return gpt2_fail("bad model shape: %s", why);
  if (a->t.seq > c->max_seq)
    return gpt2_fail("--seq %d exceeds the model's %d positions", a->t.seq, c->max_seq);
  return 0;
}

/* The model's units registered with the engine, and --freeze's frozen (before commit; ctx: run). */
static int add_units(void *ctx) {
  run *r = ctx;
  TRY(gpt2_units_register(&r->units, &r->cfg, r->x.eng));
  int *frozen = calloc((size_t)r->cfg.layers + 2, sizeof *frozen);
  if (!frozen) return gpt2_fail("out of host memory");
  int frc = gpt2_freeze_mask(r->a.t.freeze, r->cfg.layers, frozen);
  if (frc == 0) frc = gpt2_units_freeze(&r->units, frozen);
  free(frozen);
  return frc;
}

/* Engine from the flags, units, commit, initial weights, kernels, activations. */
static int build(run *r) {
  const gpt2_args *a = &r->a;
  ex_run *x = &r->x;
  /* gather, use, release: one unit held at a time (the commit fit check) */
  TRY(ex_engine_build(x, 1, add_units));
  if (a->init_safetensors)
    TRY(gpt2_init_safetensors(&r->units, a->init_safetensors));
  else
    TRY(gpt2_init_random(&r->units, a->t.seed));
  gpt2_dev dev;
  TRY(ex_kernels_open(x, &dev));
  TRY(gpt2_model_init(&r->model, &r->units, &dev, x->k, a->t.batch, a->t.seq, a->t.recompute));
  TRY(gpt2_widen_init(&r->model.widen, dev.dt != a->t.dtype, 1, x->eng));
  r->model.act_bytes += gpt2_widen_bytes(&r->model.widen);
  x->act_bytes = &r->model.act_bytes;
  return ex_host_batch_alloc(x);
}

/* Micro-step mi of step: this rank's batch under the data's sharding rule (common/data.h), then
   forward, loss and backward (gpt2_train_micro above); the test build dumps the first
   micro-step's gradients (--dump-grads). */
static int micro_step(run *r, int step, int mi, float *loss) {
  const ex_train_args *t = &r->a.t;
  const double t0 = gpt2_now();
  TRY(gpt2_data_train_batch(&r->x.data, step, r->x.rank, r->x.world, mi, t->micro_steps, t->batch,
                            t->seq, r->x.tok, r->x.tgt));
  r->x.data_s += gpt2_now() - t0;
  r->dump.active = r->a.dump_grads && step == 0 && mi == 0;
  TRY(gpt2_train_micro(&r->model, r->x.tok, r->x.tgt, loss));
  if (r->dump.active) TRY(gpt2_dump_batch(&r->dump, &r->model, r->x.tok, r->x.tgt));
  r->dump.active = 0;
  return 0;
}

/* The training loop. Each step: the learning rate of the schedule, zs_engine_begin_step, the
   micro-steps (each a forward and a backward through every unit), zs_engine_step (gradients
   reduced and the optimizer step on this rank's shard), the log line, then a checkpoint or a
   validation pass when they are due. The shared parts live in common/train_step.c. */
static int train(run *r) {
  ex_run *x = &r->x;
  const ex_train_args *t = &r->a.t;
  int start;
  TRY(ex_resume(x, &start)); /* --resume: the loop goes on from the checkpoint's step */
  const int end = ex_last_step(x);
  for (int step = start; step < end; step++) {
    const float lr = ex_lr_at(t->lr_schedule, step, t->steps, t->warmup, t->lr, t->lr_min_frac);
    const double t0 = gpt2_now();
    double loss = 0.0; /* summed over this rank's micro-steps */
    ZS_TRY(zs_engine_set_lr(x->eng, lr));
    ZS_TRY(zs_engine_begin_step(x->eng, t->micro_steps));
    for (int mi = 0; mi < t->micro_steps; mi++) {
      float l = 0.0f;
      TRY(micro_step(r, step, mi, &l));
      loss += l;
    }
    zs_step_stats st;
    ZS_TRY(zs_engine_step(x->eng, &st));
    TRY(ex_log_step(x, step, lr, loss / t->micro_steps, &st, gpt2_now() - t0));
    TRY(ex_after_step(x, step, end)); /* --save-every, --eval-every */
  }
  return 0;
}

/* ex_eval_fn (ctx: run): validation batches, for ex_evaluate. */
static int eval(void *ctx, const int *tok, const int *tgt, int b, float *loss) {
  run *r = ctx;
  return gpt2_eval(&r->model, tok, tgt, b, loss);
}

/* Header lines: the run's shape, the data and its unigram entropy (rank 0). */
static void banner(run *r) {
  const ex_run *x = &r->x;
  if (x->rank != 0) return;
  const gpt2_config *c = &r->cfg;
  const ex_train_args *a = &r->a.t;
  printf("train_gpt2 | %s\n", zs_engine_info(x->eng));
  printf("model: L=%d C=%d NH=%d V=%d (padded %d) positions=%d | %.2fM params | %s%s\n", c->layers,
         c->channels, c->heads, c->vocab, c->padded_vocab, c->max_seq, gpt2_num_params(c) / 1e6,
         a->dtype == ZS_BF16 ? "bf16" : "fp32", a->recompute ? " | recompute" : "");
  ex_print_batch_shape(x);
  printf("data: %s (%lld tokens, %lld train, %lld val)\n", a->data ? a->data : a->text,
         (long long)x->data.n, (long long)x->data.n_train,
         (long long)(x->data.n - x->data.n_train));
  printf("data order: step s, rank r, micro-step m reads global micro-batch s*%d + m*%d + r "
         "(the same sequences for any ranks x micro-steps split)\n",
         x->world * a->micro_steps, x->world);
  if (x->world > 1)
    printf("logged train loss: the mean over every rank's micro-batches (zs_comm_allreduce); "
           "val loss: every rank evaluates the same held-out batches\n");
  printf("unigram entropy of the training tokens: %.4f bits = %.4f nats per token\n",
         x->unigram / log(2.0), x->unigram);
  /* The largest unit bounds stage 3's transient buffers (docs/MEMORY.md §1, the memory rule). */
  size_t largest = 0;
  for (int i = 0; i < zs_engine_num_units(x->eng); i++) {
    size_t n = ex_unit_numel(zs_engine_unit(x->eng, i));
    if (n > largest) largest = n;
  }
  printf("largest unit: %zu params (%zu bytes gathered, before padding)\n", largest,
         largest * (a->dtype == ZS_BF16 ? 2 : 4));
  char ev[512];
  snprintf(ev, sizeof ev,
           "{\"event\":\"config\",\"layers\":%d,\"channels\":%d,\"heads\":%d,\"vocab\":%d,"
           "\"params\":%lld,\"stage\":%d,\"world\":%d,\"micro_steps\":%d,\"batch\":%d,"
           "\"seq\":%d,\"unigram_nats\":%.6f}",
           c->layers, c->channels, c->heads, c->vocab, (long long)gpt2_num_params(c), a->stage,
           x->world, a->micro_steps, a->batch, a->seq, x->unigram);
  gpt2_metrics_event(&r->x.met, ev);
  fflush(stdout);
}

/* --dump-logits FILE: the logits of the first held-out sequence (the first training one without
   held-out data), for comparing with another implementation: int32 T, int32 V, int32 tokens[T],
   float32 logits[T][V]. Every rank runs the forward (stage 3 gathers); rank 0 writes. */
static int dump_logits(run *r) {
  const gpt2_args *a = &r->a;
  gpt2_model *m = &r->model;
  if (gpt2_data_val_batch(&r->x.data, 0, 1, a->t.seq, r->x.tok, r->x.tgt) != 0)
    TRY(gpt2_data_train_batch(&r->x.data, 0, 0, 1, 0, 1, 1, a->t.seq, r->x.tok, r->x.tgt));
  TRY(gpt2_forward_logits(m, r->x.tok));
  const int T = a->t.seq, V = r->cfg.vocab, Vp = r->cfg.padded_vocab;
  const size_t n = (size_t)T * Vp, esz = m->dev.esz;
  void *raw = malloc(n * esz);
  float *out = malloc((size_t)T * V * sizeof(float));
  int rc = raw && out ? gpt2_dev_download(&m->dev, raw, m->logits, n * esz)
                      : gpt2_fail("out of host memory for the logits");
  for (size_t t = 0; rc == 0 && t < (size_t)T; t++)
    for (size_t v = 0; v < (size_t)V; v++) {
      const size_t i = t * Vp + v;
      float x;
      if (esz == 2) { /* bf16: the high half of an fp32 */
        const uint32_t bits = (uint32_t)((const uint16_t *)raw)[i] << 16;
        memcpy(&x, &bits, 4);
      } else {
        x = ((const float *)raw)[i];
      }
      out[t * V + v] = x;
    }
  if (rc == 0 && r->x.rank == 0) {
    FILE *f = fopen(a->dump_logits, "wb");
    const int32_t hdr[2] = {T, V};
    int ok = f && fwrite(hdr, 4, 2, f) == 2 && fwrite(r->x.tok, 4, (size_t)T, f) == (size_t)T &&
             fwrite(out, 4, (size_t)T * V, f) == (size_t)T * V;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) rc = gpt2_fail("cannot write %s", a->dump_logits);
  }
  free(raw);
  free(out);
  return rc;
}

/* After training: final validation, memory, plot, samples, weight dump, loss check. */
static int finish(run *r) {
  const gpt2_args *a = &r->a;
  ex_run *x = &r->x;
  TRY(ex_report_end(x, "train_gpt2 loss"));
  const int lines = ex_sample_lines(&a->t, x->data.is_text);
  if (lines > 0 && a->t.sample_chars > 0) {
    char text[8192];
    TRY(gpt2_sample(&r->model, x->data.is_text, lines, a->t.sample_chars, a->t.temperature,
                    a->t.seed, text, sizeof text));
    if (x->rank == 0)
      printf("---- sample (temperature %.2f) ----\n%s\n----\n", a->t.temperature, text);
  }
  if (a->dump_weights) TRY(gpt2_dump_weights(&r->units, a->dump_weights, x->rank));
  if (a->dump_logits) TRY(dump_logits(r));
  if (a->t.export_path) {
    TRY(gpt2_export_hf(&r->units, a->t.export_path, a->t.export_dtype, a->init_safetensors,
                       x->rank));
    if (x->rank == 0)
      printf("exported %s (Hugging Face GPT-2, config.json beside it)\n", a->t.export_path);
  }
  float final = isfinite(x->last_val) ? x->last_val : x->last_loss;
  if (x->rank == 0 && a->t.steps > 0)
    printf("final loss %.4f nats (%s) vs unigram entropy %.4f nats\n", final,
           isfinite(x->last_val) ? "validation" : "train", x->unigram);
  if (a->check_frac > 0 && !(final < a->check_frac * x->unigram))
    return gpt2_fail("check failed: final loss %.4f is not below %.2f x unigram entropy %.4f",
                     final, a->check_frac, x->unigram);
  return 0;
}

/* Every output path prepared (directories made) or refused before the first step. */
static int check_outputs(const gpt2_args *a) {
  TRY(ex_out_check_shared(&a->t));
  if (a->t.export_path) TRY(ex_out_file("--export", a->t.export_path));
  if (a->dump_grads) TRY(ex_out_dir("--dump-grads", a->dump_grads));
  if (a->dump_weights) TRY(ex_out_dir("--dump-weights", a->dump_weights));
  if (a->dump_logits) TRY(ex_out_file("--dump-logits", a->dump_logits));
  return 0;
}

/* The whole run after MPI is up. */
static int run_all(run *r, int argc, char **argv) {
  int pr = gpt2_args_parse(&r->a, argc, argv);
  if (pr != 0) return pr;
  const gpt2_args *a = &r->a;
  TRY(check_outputs(a));
  ex_run *x = &r->x;
  ex_run_bind(x, &a->t, r, NULL, eval); /* no micro-step callback: train() is the loop */
  x->peak_tflops = a->peak_tflops;
  TRY(ex_load_data(x));
  TRY(resolve_config(r));
  if (a->t.device == ZS_DEVICE_CUDA) /* MFU on GPUs only */
    x->flops_per_token = gpt2_flops_per_token(&r->cfg, a->t.seq);
  TRY(gpt2_metrics_open(&x->met, a->t.metrics, x->rank, x->world));
  if (a->t.tensorboard) TRY(gpt2_metrics_tensorboard(&x->met, a->t.tensorboard));
  TRY(build(r));
  banner(r);
  r->dump.dir = a->dump_grads;
  r->dump.rank = x->rank;
  if (a->dump_grads) {
#ifndef GPT2_TEST_HOOKS
    return gpt2_fail("--dump-grads is a test feature: use the test build train_gpt2_dump");
#else
    r->model.hook = gpt2_dump_hook;
    r->model.hook_ctx = &r->dump;
#endif
    TRY(gpt2_dump_meta(&r->dump, &r->model, x->world, a->t.micro_steps));
    TRY(gpt2_dump_weights(&r->units, a->dump_grads, x->rank));
  }
  TRY(ex_report_memory(x, "start"));
  TRY(train(r));
  return finish(r);
}

/* Frees the model's buffers and the units (ctx: run). */
static void free_run(void *ctx) {
  run *r = ctx;
  gpt2_model_free(&r->model);
  gpt2_units_free(&r->units);
}

int main(int argc, char **argv) {
  run r;
  memset(&r, 0, sizeof r);
  if (ex_run_start(&r.x, &argc, &argv, "train_gpt2") != 0) return 1;
  r.x.ctx = &r; /* for free_run, also when parsing failed */
  int rc = run_all(&r, argc, argv);
  return ex_run_end(&r.x, rc, "train_gpt2", free_run);
}
