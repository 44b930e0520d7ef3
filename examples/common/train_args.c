/* The shared options of the training examples (see train_args.h): every option takes one value
 * except the flags. */
#include "train_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpt2/precision.h"
#include "../gpt2/util.h"

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
  t->beta2 = 0.95f;
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
  t->sample_lines = 3;
  t->sample_chars = 200;
  t->temperature = 0.8f;
  t->export_dtype = ZS_F32;
  t->log_every = 1;
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

/* Shared options with an int value. */
static int int_opt(ex_train_args *t, const char *k, const char *v, int *hit) {
  struct {
    const char *name;
    int *dst;
  } tab[] = {{"--batch", &t->batch},
             {"--seq", &t->seq},
             {"--micro-steps", &t->micro_steps},
             {"--steps", &t->steps},
             {"--warmup", &t->warmup},
             {"--stage", &t->stage},
             {"--prefetch", &t->prefetch},
             {"--eval-every", &t->eval_every},
             {"--eval-batches", &t->eval_batches},
             {"--sample-lines", &t->sample_lines},
             {"--sample-chars", &t->sample_chars},
             {"--log-every", &t->log_every},
             {"--save-every", &t->save_every},
             {"--stop-after", &t->stop_after}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(k, tab[i].name) == 0) return *hit = 1, ex_parse_int(k, v, tab[i].dst);
  return 0;
}

/* Shared options with a float value. */
static int float_opt(ex_train_args *t, const char *k, const char *v, int *hit) {
  struct {
    const char *name;
    float *dst;
  } tab[] = {{"--lr", &t->lr},
             {"--lr-min-frac", &t->lr_min_frac},
             {"--weight-decay", &t->weight_decay},
             {"--grad-clip", &t->grad_clip},
             {"--beta2", &t->beta2},
             {"--temperature", &t->temperature}};
  double x;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(k, tab[i].name) == 0) {
      *hit = 1;
      TRY(ex_parse_double(k, v, &x));
      *tab[i].dst = (float)x;
      return 0;
    }
  if (strcmp(k, "--val-frac") == 0) return *hit = 1, ex_parse_double(k, v, &t->val_frac);
  return 0;
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
  } else if (strcmp(k, "--offload") == 0) {
    if (strcmp(v, "none") == 0)
      t->offload = 0;
    else if (strcmp(v, "opt") == 0)
      t->offload = ZS_OFFLOAD_OPTIMIZER;
    else if (strcmp(v, "opt+params") == 0)
      t->offload = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
    else
      return gpt2_fail("--offload is none, opt or opt+params");
  } else if (strcmp(k, "--master") == 0) {
    TRY(gpt2_parse_master(v, &t->master));
  } else if (strcmp(k, "--moment-dtype") == 0) {
    TRY(gpt2_parse_moment_dtype(v, &t->moment_dtype));
  } else if (strcmp(k, "--offload-budget") == 0) {
    TRY(gpt2_parse_bytes(k, v, &t->offload_budget));
  } else if (strcmp(k, "--seed") == 0) {
    t->seed = strtoull(v, NULL, 10);
  } else {
    *hit = 0;
  }
  return 0;
}

/* Shared options with a string value (the path options), then the enumerated ones. */
static int str_opt(ex_train_args *t, const char *k, const char *v, int *hit) {
  struct {
    const char *name;
    const char **dst;
  } tab[] = {{"--data", &t->data},          {"--text", &t->text},
             {"--metrics", &t->metrics},    {"--plot", &t->plot},
             {"--ckpt-dir", &t->ckpt_dir},  {"--resume", &t->resume},
             {"--export", &t->export_path}, {"--freeze", &t->freeze}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(k, tab[i].name) == 0) return *hit = 1, *tab[i].dst = v, 0;
  return enum_opt(t, k, v, hit);
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
    if (!hit) TRY(int_opt(t, k, v, &hit));
    if (!hit) TRY(float_opt(t, k, v, &hit));
    if (!hit) TRY(str_opt(t, k, v, &hit));
    if (!hit) return gpt2_fail("unknown option %s (see --help)", k);
  }
  return 0;
}

int ex_train_args_check_shape(ex_train_args *t) {
  if (t->warmup < 0) t->warmup = t->steps / 20;
  if (t->batch <= 0 || t->seq <= 0 || t->micro_steps <= 0 || t->steps < 0)
    return gpt2_fail("--batch, --seq and --micro-steps must be > 0, --steps >= 0");
  if (t->val_frac < 0 || t->val_frac >= 0.5) return gpt2_fail("--val-frac must be in [0, 0.5)");
  return 0;
}

int ex_train_args_check_ckpt(const ex_train_args *t) {
  if (t->save_every < 0 || t->stop_after < 0)
    return gpt2_fail("--save-every and --stop-after must be >= 0");
  if (t->save_every > 0 && !t->ckpt_dir)
    return gpt2_fail("--save-every needs --ckpt-dir DIR (where the checkpoints go)");
  return 0;
}
