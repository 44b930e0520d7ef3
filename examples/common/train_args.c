/* The shared options of the training examples (see train_args.h): every option takes one value
 * except the flags. */
#include "train_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precision.h"
#include "util.h"

void ex_train_args_defaults(ex_train_args *t, const char *default_text) {
  memset(t, 0, sizeof *t);
  t->batch = 4;
  t->seq = 64;
  t->micro_steps = 1;
  t->steps = 100;
  t->lr = 1e-3f;
  t->lr_min_frac = 0.1f;
  t->weight_decay = 0.1f;
  t->grad_clip = 1.0f;
  t->beta1 = 0.9f;
  t->beta2 = 0.95f;
  t->eps = 1e-8f;
  t->optimizer = ZS_OPT_ADAMW;
  t->momentum = 0.9f;
  t->muon_lr = 0.02f;
  t->lr_schedule = EX_LR_COSINE;
  t->warmup = -1; /* resolved to steps / 20 */
  t->stage = 3;
  t->device = ZS_DEVICE_CPU;
  t->dtype = ZS_F32;
  t->reduce_dtype = ZS_F32;
  t->master = ZS_MASTER_FP32;
  t->moment_dtype = ZS_F32;
  t->prefetch = -1;
  t->text = default_text;
  t->val_frac = 0.1;
  t->eval_batches = 4;
  t->seed = 1337;
  t->sample_lines = -1; /* 3 for text data, 0 for token files (ex_sample_lines) */
  t->sample_chars = 200;
  t->temperature = 0.8f;
  t->export_dtype = ZS_F32;
  t->log_every = 1;
  t->save_retries = 3;
}

int ex_parse_int(const char *opt, const char *v, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0') return gpt2_fail("%s wants an integer, got '%s'", opt, v);
  *out = (int)x;
  return 0;
}

int ex_parse_double(const char *opt, const char *v, double *out) {
  char *end;
  *out = strtod(v, &end);
  if (*v == '\0' || *end != '\0') return gpt2_fail("%s wants a number, got '%s'", opt, v);
  return 0;
}

int ex_opt_table(const ex_opt *t, size_t n, const char *k, const char *v, int *hit) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(k, t[i].name) != 0) continue;
    *hit = 1;
    double x;
    switch (t[i].kind) {
    case EX_OPT_INT:
      return ex_parse_int(k, v, t[i].dst);
    case EX_OPT_FLOAT:
      TRY(ex_parse_double(k, v, &x));
      *(float *)t[i].dst = (float)x;
      return 0;
    case EX_OPT_DOUBLE:
      return ex_parse_double(k, v, t[i].dst);
    case EX_OPT_STR:
      *(const char **)t[i].dst = v;
      return 0;
    }
  }
  return 0;
}

/* Shared options with an int, number or string value. */
static int value_opt(ex_train_args *t, const char *k, const char *v, int *hit) {
  const ex_opt tab[] = {{"--batch", EX_OPT_INT, &t->batch},
                        {"--seq", EX_OPT_INT, &t->seq},
                        {"--micro-steps", EX_OPT_INT, &t->micro_steps},
                        {"--steps", EX_OPT_INT, &t->steps},
                        {"--warmup", EX_OPT_INT, &t->warmup},
                        {"--stage", EX_OPT_INT, &t->stage},
                        {"--prefetch", EX_OPT_INT, &t->prefetch},
                        {"--eval-every", EX_OPT_INT, &t->eval_every},
                        {"--eval-batches", EX_OPT_INT, &t->eval_batches},
                        {"--sample-lines", EX_OPT_INT, &t->sample_lines},
                        {"--sample-chars", EX_OPT_INT, &t->sample_chars},
                        {"--log-every", EX_OPT_INT, &t->log_every},
                        {"--save-every", EX_OPT_INT, &t->save_every},
                        {"--stop-after", EX_OPT_INT, &t->stop_after},
                        {"--ckpt-async", EX_OPT_INT, &t->ckpt_async},
                        {"--save-retries", EX_OPT_INT, &t->save_retries},
                        {"--lr", EX_OPT_FLOAT, &t->lr},
                        {"--lr-min-frac", EX_OPT_FLOAT, &t->lr_min_frac},
                        {"--weight-decay", EX_OPT_FLOAT, &t->weight_decay},
                        {"--grad-clip", EX_OPT_FLOAT, &t->grad_clip},
                        {"--beta1", EX_OPT_FLOAT, &t->beta1},
                        {"--beta2", EX_OPT_FLOAT, &t->beta2},
                        {"--eps", EX_OPT_FLOAT, &t->eps},
                        {"--momentum", EX_OPT_FLOAT, &t->momentum},
                        {"--muon-lr", EX_OPT_FLOAT, &t->muon_lr},
                        {"--temperature", EX_OPT_FLOAT, &t->temperature},
                        {"--val-frac", EX_OPT_DOUBLE, &t->val_frac},
                        {"--data", EX_OPT_STR, &t->data},
                        {"--text", EX_OPT_STR, &t->text},
                        {"--metrics", EX_OPT_STR, &t->metrics},
                        {"--plot", EX_OPT_STR, &t->plot},
                        {"--tensorboard", EX_OPT_STR, &t->tensorboard},
                        {"--ckpt-dir", EX_OPT_STR, &t->ckpt_dir},
                        {"--resume", EX_OPT_STR, &t->resume},
                        {"--export", EX_OPT_STR, &t->export_path},
                        {"--freeze", EX_OPT_STR, &t->freeze},
                        {"--nvme-path", EX_OPT_STR, &t->nvme_path},
                        {"--flight-dir", EX_OPT_STR, &t->flight_dir}};
  return ex_opt_table(tab, sizeof tab / sizeof tab[0], k, v, hit);
}

/* Shared options with an enumerated value. */
static int enum_opt(ex_train_args *t, const char *k, const char *v, int *hit) {
  *hit = 1;
  if (strcmp(k, "--device") == 0) {
    if (strcmp(v, "cpu") && strcmp(v, "cuda")) return gpt2_fail("--device is cpu or cuda");
    t->device = strcmp(v, "cpu") ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  } else if (strcmp(k, "--dtype") == 0 || strcmp(k, "--reduce-dtype") == 0 ||
             strcmp(k, "--export-dtype") == 0) {
    if (strcmp(v, "fp32") && strcmp(v, "bf16")) return gpt2_fail("%s is fp32 or bf16", k);
    zs_dtype *d = k[2] == 'd' ? &t->dtype : k[2] == 'r' ? &t->reduce_dtype : &t->export_dtype;
    *d = strcmp(v, "fp32") ? ZS_BF16 : ZS_F32;
  } else if (strcmp(k, "--grad-accum-dtype") == 0) {
    if (strcmp(v, "fp32") && strcmp(v, "bf16")) return gpt2_fail("%s is fp32 or bf16", k);
    t->grad_accum_fp32 = strcmp(v, "fp32") == 0;
  } else if (strcmp(k, "--offload") == 0) {
    if (strcmp(v, "none") == 0)
      t->offload = 0;
    else if (strcmp(v, "opt") == 0)
      t->offload = ZS_OFFLOAD_OPTIMIZER;
    else if (strcmp(v, "opt+params") == 0)
      t->offload = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
    else
      return gpt2_fail("--offload is none, opt or opt+params");
  } else if (strcmp(k, "--optimizer") == 0) {
    if (zs_optimizer_id(v, &t->optimizer) != ZS_OK)
      return gpt2_fail("--optimizer: %s", zs_last_error());
  } else if (strcmp(k, "--master") == 0) {
    TRY(gpt2_parse_master(v, &t->master));
  } else if (strcmp(k, "--moment-dtype") == 0) {
    TRY(gpt2_parse_moment_dtype(v, &t->moment_dtype));
  } else if (strcmp(k, "--offload-budget") == 0) {
    if (strcmp(v, "free") == 0)
      t->offload_budget = ZS_BUDGET_FREE; /* what is free at commit, the least over the ranks */
    else
      TRY(gpt2_parse_bytes(k, v, &t->offload_budget));
  } else if (strcmp(k, "--ckpt-write-rate") == 0) {
    TRY(gpt2_parse_bytes(k, v, &t->ckpt_write_rate));
    t->ckpt_write_rate_set = 1;
  } else if (strcmp(k, "--offload-host-bytes") == 0) {
    TRY(gpt2_parse_bytes(k, v, &t->offload_host_bytes));
    t->offload_host_set = 1;
  } else if (strcmp(k, "--lr-schedule") == 0) {
    TRY(ex_lr_schedule_parse(v, &t->lr_schedule));
  } else if (strcmp(k, "--seed") == 0) {
    t->seed = strtoull(v, NULL, 10);
  } else {
    *hit = 0;
  }
  return 0;
}

int ex_train_args_parse(ex_train_args *t, int argc, char **argv, ex_opt_fn own, void *ctx,
                        void (*usage)(void)) {
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i];
    if (!strcmp(k, "--help") || !strcmp(k, "-h")) return usage(), 1;
    if (!strcmp(k, "--deterministic")) {
      t->deterministic = 1;
      continue;
    }
    if (!strcmp(k, "--recompute")) {
      t->recompute = 1;
      continue;
    }
    if (i + 1 >= argc) return gpt2_fail("option %s needs a value (see --help)", k);
    const char *v = argv[++i];
    int hit = 0;
    TRY(own(ctx, k, v, &hit));
    if (!hit) TRY(value_opt(t, k, v, &hit));
    if (!hit) TRY(enum_opt(t, k, v, &hit));
    if (!hit) return gpt2_fail("unknown option %s (see --help)", k);
  }
  return 0;
}

int ex_train_args_check_shape(ex_train_args *t) {
  if (t->warmup < 0) t->warmup = t->steps / 20;
  if (t->batch <= 0 || t->seq <= 0 || t->micro_steps <= 0 || t->steps < 0)
    return gpt2_fail("--batch, --seq and --micro-steps must be > 0, --steps >= 0");
  if (t->val_frac < 0 || t->val_frac >= 0.5) return gpt2_fail("--val-frac must be in [0, 0.5)");
  if (!(t->grad_clip >= 0))
    return gpt2_fail("--grad-clip %g: the gradient-norm clip must be >= 0 (0: no clipping)",
                     (double)t->grad_clip);
  if (!(t->beta1 >= 0 && t->beta1 < 1) || !(t->beta2 >= 0 && t->beta2 < 1))
    return gpt2_fail("--beta1 and --beta2 must be in [0, 1)");
  if (!(t->eps > 0)) return gpt2_fail("--eps must be > 0");
  if (!(t->momentum >= 0)) return gpt2_fail("--momentum must be >= 0");
  if (!(t->muon_lr > 0) || !(t->lr > 0))
    return gpt2_fail("--lr and --muon-lr must be > 0 (--muon-lr is a multiple of --lr's schedule)");
  return 0;
}

void ex_train_args_warn(const ex_train_args *t) {
  if (t->steps > 0 && t->warmup >= t->steps)
    fprintf(stderr,
            "warning: --warmup %d >= --steps %d: the warm-up fills the whole run, the peak lr is "
            "reached %s and the decay never runs\n",
            t->warmup, t->steps, t->warmup == t->steps ? "only at the last step" : "never");
}

int ex_sample_lines(const ex_train_args *t, int is_text) {
  return t->sample_lines >= 0 ? t->sample_lines : is_text ? 3 : 0;
}

void ex_train_args_usage(void) {
  char names[256] = "";
  for (int i = 0; zs_optimizer_name(i); i++) /* the library's optimizers, a|b|c */
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? "|" : "",
             zs_optimizer_name(i));
  printf(
      " train:  [--batch B=4] [--seq T=64] [--micro-steps M=1] [--steps S=100] [--lr F=1e-3 "
      "(peak)]\n"
      "         [--lr-schedule cosine|linear|constant|wsd (default cosine)] [--lr-min-frac F=0.1]\n"
      "         [--warmup N (default S/20; N >= S is accepted with a warning)]\n"
      "         [--weight-decay F=0.1] [--grad-clip F=1 (0: off; < 0 refused)] [--beta1 F=0.9]\n"
      "         [--beta2 F=0.95] [--eps F=1e-8] [--seed N=1337]\n"
      "         [--optimizer %s (default adamw; on CUDA, muon's and\n"
      "         adafactor's state stays on the device: no --offload of it)]\n"
      "         [--momentum F=0.9 (sgd's; lion takes --beta1/--beta2, its paper's 0.9/0.99)]\n"
      "         [--muon-lr F=0.02 (muon: the hidden blocks' matrices on Muon at this peak lr,\n"
      "         on --lr's schedule; embeddings, head, norms and biases on AdamW at --lr)]\n"
      " lr:     step s < N (the warm-up) trains at lr x (s+1)/N: lr/N at step 0, the peak at step\n"
      "         N-1 (not a warm-up from zero). Then, to lr x min-frac at the last step S-1:\n"
      "         cosine: half a cosine from the peak at step N; linear: a straight line from the\n"
      "         peak at step N; constant: the peak; wsd: the peak until the last D = max(1, S/5)\n"
      "         steps, then a straight line (warm-up, stable, decay).\n",
      names);
}

int ex_train_args_check_ckpt(const ex_train_args *t) {
  if (t->save_every < 0 || t->stop_after < 0)
    return gpt2_fail("--save-every and --stop-after must be >= 0");
  if (t->save_every > 0 && !t->ckpt_dir)
    return gpt2_fail("--save-every needs --ckpt-dir DIR (where the checkpoints go)");
  if (t->ckpt_async != 0 && t->ckpt_async != 1)
    return gpt2_fail("--ckpt-async %d: use 0 or 1", t->ckpt_async);
  if (t->save_retries < 0) return gpt2_fail("--save-retries %d must be >= 0", t->save_retries);
  return 0;
}
