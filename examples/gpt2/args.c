/* Option parsing for train_gpt2: every option takes one value except the flags. */
#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precision.h"
#include "util.h"

#ifndef GPT2_DEFAULT_TEXT
#define GPT2_DEFAULT_TEXT "examples/data/genesis_kjv.txt"
#endif

void gpt2_usage(void) {
  printf(
      "usage: train_gpt2 [options]   (run under mpirun for several ranks)\n"
      " model:  --model d12|d24|d36|d48 | --layers L --channels C --heads NH  [--vocab V]\n"
      "         [--max-seq P] [--init-safetensors FILE (HF GPT-2 names)] [--seed N]\n"
      " data:   [--data FILE (llm.c tokens)] [--text FILE (bytes; default the bundled text)]\n"
      "         [--val-frac F=0.1] [--eval-every K=0] [--eval-batches N=4]\n"
      " train:  --batch B --seq T --micro-steps M --steps S --lr F [--lr-min-frac F=0.1]\n"
      "         [--warmup N] [--weight-decay F=0.1] [--grad-clip F=1] [--beta2 F=0.95]\n"
      " engine: --stage 0..3 --device cpu|cuda --dtype fp32|bf16 [--reduce-dtype fp32|bf16]\n"
      "         --offload none|opt|opt+params [--deterministic] [--recompute] [--prefetch N]\n"
      "         [--freeze SPEC (frozen units: embedding, blocks, ln_f, unit indexes N or N-M;\n"
      "         0 = embedding, 1..L = blocks, L+1 = ln_f; comma-separated)]\n"
      "         [--master fp32|params|remainder|lean (optimizer-state precision: an fp32 master\n"
      "         copy, the fp32 params are the master (--dtype fp32), bf16 params + a 16-bit\n"
      "         remainder (--dtype bf16), or the bf16 params are the master (--dtype bf16))] "
      "[--moment-dtype fp32|bf16 (Adam m and v)] [--offload-budget BYTES|free (K/M/G/T "
      "suffixes; device\n"
      "         bytes for model state + engine buffers; the largest units' optimizer state goes\n"
      "         to the host until the rest fits; on the CPU device the engine's non-arena bytes;\n"
      "         free: what is free on the device at commit, the least over the ranks)]\n"
      " output: [--metrics FILE.jsonl] [--plot FILE.svg] [--sample-lines N=3]\n"
      "         [--sample-chars N=200] [--temperature F=0.8] [--log-every N=1 (0: last step "
      "only)]\n"
      "         [--peak-tflops F (MFU; default 989 = H100/H200 bf16 dense)]\n"
      " ckpt:   [--save-every N --ckpt-dir DIR] [--resume DIR (a checkpoint or a directory of\n"
      "         them: continues step, lr schedule and data)] [--stop-after S (end after step S\n"
      "         of the --steps schedule)] [--export FILE.safetensors (HF GPT-2 names, with\n"
      "         config.json beside it)] [--export-dtype fp32|bf16]\n"
      " tests:  [--dump-grads DIR] [--dump-weights DIR] [--dump-logits FILE] [--check-frac F\n"
      "         (exit 1 unless the final loss < F x the unigram entropy of the training tokens)]\n"
      " --model sets layers/channels/heads and 1024 positions; --heads defaults to 4 for a free\n"
      " shape; --vocab defaults to 256 for\n"
      " text and 50257 (GPT-2 BPE) for token files.\n");
}

/* Fills the defaults: a small byte-level model on the bundled text. */
static void defaults(gpt2_args *a) {
  memset(a, 0, sizeof *a);
  a->layers = 4;
  a->channels = 128;
  a->heads = 0; /* 4 for a free shape; a safetensors file's config.json says */
  a->batch = 4;
  a->seq = 64;
  a->micro_steps = 1;
  a->steps = 100;
  a->lr = 1e-3f;
  a->lr_min_frac = 0.1f;
  a->weight_decay = 0.1f;
  a->grad_clip = 1.0f;
  a->beta2 = 0.95f;
  a->warmup = -1; /* resolved to steps / 20 */
  a->stage = 3;
  a->device = ZS_DEVICE_CPU;
  a->dtype = ZS_F32;
  a->reduce_dtype = ZS_F32;
  a->master = ZS_MASTER_FP32;
  a->moment_dtype = ZS_F32;
  a->prefetch = -1;
  a->text = GPT2_DEFAULT_TEXT;
  a->val_frac = 0.1;
  a->eval_batches = 4;
  a->seed = 1337;
  a->sample_lines = 3;
  a->sample_chars = 200;
  a->temperature = 0.8f;
  a->peak_tflops = 989.0;
  a->log_every = 1;
}

/* Parses an int / float option value; -1 when malformed. */
static int as_int(const char *opt, const char *v, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0') return gpt2_fail("%s wants an integer, got '%s'", opt, v);
  *out = (int)x;
  return 0;
}
static int as_float(const char *opt, const char *v, double *out) {
  char *end;
  *out = strtod(v, &end);
  if (*v == '\0' || *end != '\0') return gpt2_fail("%s wants a number, got '%s'", opt, v);
  return 0;
}

/* Options with an int value. */
static int int_opt(gpt2_args *a, const char *k, const char *v, int *hit) {
  struct {
    const char *name;
    int *dst;
  } t[] = {{"--layers", &a->layers},
           {"--channels", &a->channels},
           {"--heads", &a->heads},
           {"--vocab", &a->vocab},
           {"--max-seq", &a->max_seq},
           {"--batch", &a->batch},
           {"--seq", &a->seq},
           {"--micro-steps", &a->micro_steps},
           {"--steps", &a->steps},
           {"--warmup", &a->warmup},
           {"--stage", &a->stage},
           {"--prefetch", &a->prefetch},
           {"--eval-every", &a->eval_every},
           {"--eval-batches", &a->eval_batches},
           {"--sample-lines", &a->sample_lines},
           {"--sample-chars", &a->sample_chars},
           {"--log-every", &a->log_every},
           {"--save-every", &a->save_every},
           {"--stop-after", &a->stop_after}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(k, t[i].name) == 0) return *hit = 1, as_int(k, v, t[i].dst);
  return 0;
}

/* Options with a float value. */
static int float_opt(gpt2_args *a, const char *k, const char *v, int *hit) {
  struct {
    const char *name;
    float *dst;
  } t[] = {{"--lr", &a->lr},
           {"--lr-min-frac", &a->lr_min_frac},
           {"--weight-decay", &a->weight_decay},
           {"--grad-clip", &a->grad_clip},
           {"--beta2", &a->beta2},
           {"--temperature", &a->temperature}};
  double x;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(k, t[i].name) == 0) {
      *hit = 1;
      TRY(as_float(k, v, &x));
      *t[i].dst = (float)x;
      return 0;
    }
  if (strcmp(k, "--val-frac") == 0) return *hit = 1, as_float(k, v, &a->val_frac);
  if (strcmp(k, "--peak-tflops") == 0) return *hit = 1, as_float(k, v, &a->peak_tflops);
  if (strcmp(k, "--check-frac") == 0) return *hit = 1, as_float(k, v, &a->check_frac);
  return 0;
}

/* Options with a string or enumerated value. */
static int str_opt(gpt2_args *a, const char *k, const char *v, int *hit) {
  struct {
    const char *name;
    const char **dst;
  } t[] = {{"--model", &a->model},
           {"--data", &a->data},
           {"--text", &a->text},
           {"--init-safetensors", &a->init_safetensors},
           {"--metrics", &a->metrics},
           {"--plot", &a->plot},
           {"--dump-grads", &a->dump_grads},
           {"--dump-weights", &a->dump_weights},
           {"--dump-logits", &a->dump_logits},
           {"--ckpt-dir", &a->ckpt_dir},
           {"--resume", &a->resume},
           {"--export", &a->export_path},
           {"--freeze", &a->freeze}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(k, t[i].name) == 0) return *hit = 1, *t[i].dst = v, 0;
  *hit = 1;
  if (strcmp(k, "--device") == 0) {
    if (strcmp(v, "cpu") && strcmp(v, "cuda")) return gpt2_fail("--device is cpu or cuda");
    a->device = strcmp(v, "cpu") ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  } else if (strcmp(k, "--dtype") == 0 || strcmp(k, "--reduce-dtype") == 0 ||
             strcmp(k, "--export-dtype") == 0) {
    if (strcmp(v, "fp32") && strcmp(v, "bf16")) return gpt2_fail("%s is fp32 or bf16", k);
    zs_dtype *d = k[2] == 'd' ? &a->dtype : k[2] == 'r' ? &a->reduce_dtype : &a->export_dtype;
    *d = strcmp(v, "fp32") ? ZS_BF16 : ZS_F32;
  } else if (strcmp(k, "--offload") == 0) {
    if (strcmp(v, "none") == 0)
      a->offload = 0;
    else if (strcmp(v, "opt") == 0)
      a->offload = ZS_OFFLOAD_OPTIMIZER;
    else if (strcmp(v, "opt+params") == 0)
      a->offload = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
    else
      return gpt2_fail("--offload is none, opt or opt+params");
  } else if (strcmp(k, "--master") == 0) {
    TRY(gpt2_parse_master(v, &a->master));
  } else if (strcmp(k, "--moment-dtype") == 0) {
    TRY(gpt2_parse_moment_dtype(v, &a->moment_dtype));
  } else if (strcmp(k, "--offload-budget") == 0) {
    if (strcmp(v, "free") == 0)
      a->offload_budget = ZS_BUDGET_FREE; /* what is free at commit, the least over the ranks */
    else
      TRY(gpt2_parse_bytes(k, v, &a->offload_budget));
  } else if (strcmp(k, "--seed") == 0) {
    a->seed = strtoull(v, NULL, 10);
  } else {
    *hit = 0;
  }
  return 0;
}

int gpt2_args_parse(gpt2_args *a, int argc, char **argv) {
  defaults(a);
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i];
    if (!strcmp(k, "--help") || !strcmp(k, "-h")) return gpt2_usage(), 1;
    if (!strcmp(k, "--deterministic")) {
      a->deterministic = 1;
      continue;
    }
    if (!strcmp(k, "--recompute")) {
      a->recompute = 1;
      continue;
    }
    if (i + 1 >= argc) return gpt2_fail("option %s needs a value (see --help)", k);
    const char *v = argv[++i];
    int hit = 0;
    TRY(int_opt(a, k, v, &hit));
    if (!hit) TRY(float_opt(a, k, v, &hit));
    if (!hit) TRY(str_opt(a, k, v, &hit));
    if (!hit) return gpt2_fail("unknown option %s (see --help)", k);
  }
  if (a->warmup < 0) a->warmup = a->steps / 20;
  if (a->batch <= 0 || a->seq <= 0 || a->micro_steps <= 0 || a->steps < 0)
    return gpt2_fail("--batch, --seq and --micro-steps must be > 0, --steps >= 0");
  if (a->val_frac < 0 || a->val_frac >= 0.5) return gpt2_fail("--val-frac must be in [0, 0.5)");
  if (a->save_every < 0 || a->stop_after < 0)
    return gpt2_fail("--save-every and --stop-after must be >= 0");
  if (a->save_every > 0 && !a->ckpt_dir)
    return gpt2_fail("--save-every needs --ckpt-dir DIR (where the checkpoints go)");
  if (gpt2_precision_check(a->master, a->dtype)) return -1;
  return 0;
}
