/* Option parsing for train_llama: every option takes one value except the flags. */
#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpt2/precision.h"
#include "../gpt2/util.h"
#include "util.h"

#ifndef LLAMA_DEFAULT_TEXT
#define LLAMA_DEFAULT_TEXT "examples/data/genesis_kjv.txt"
#endif

void llama_usage(void) {
  printf(
      "usage: train_llama [options]   (run under mpirun for several ranks)\n"
      " model:  --init-safetensors DIR (a Hugging Face Llama/Qwen2/Mistral directory: config.json\n"
      "         + model.safetensors or shards + index) | --config FILE.json (random init) |\n"
      "         --arch llama|qwen2|mistral --layers L --hidden C --intermediate I --heads NH\n"
      "         --kv-heads NKV [--head-dim D] [--vocab V] [--max-pos P] [--qkv-bias 0|1]\n"
      "         [--tied 0|1] [--seed N]\n"
      " data:   [--data FILE (llm.c tokens)] [--text FILE (bytes; default the bundled text)]\n"
      "         [--batches FILE (int32 [steps][world*micro*B][seq+1], fixed batches)]\n"
      "         [--val-frac F=0.1] [--eval-every K=0] [--eval-batches N=4]\n"
      " train:  --batch B --seq T --micro-steps M --steps S --lr F [--lr-min-frac F=0.1]\n"
      "         [--warmup N] [--weight-decay F=0.1] [--grad-clip F=1] [--beta2 F=0.95]\n"
      " engine: --stage 0..3 --device cpu|cuda --dtype fp32|bf16 [--reduce-dtype fp32|bf16]\n"
      "         --offload none|opt|opt+params [--deterministic] [--recompute] [--prefetch N]\n"
      "         [--master fp32|params|remainder|lean] [--moment-dtype fp32|bf16] [--offload-budget "
      "BYTES|free]\n"
      "         [--freeze SPEC (embedding, blocks, head, unit indexes N or N-M; 0 = embedding,\n"
      "         1..L = layers, L+1 = head)]\n"
      " output: [--metrics FILE.jsonl] [--plot FILE.svg] [--log-every N=1 (0: last step only)]\n"
      "         [--sample-lines N=3] [--sample-chars N=200] [--temperature F=0.8 (<= 0: greedy)]\n"
      " ckpt:   [--save-every N --ckpt-dir DIR] [--resume DIR] [--stop-after S]\n"
      "         [--export DIR (Hugging Face directory)] [--export-dtype fp32|bf16]\n"
      "         [--export-shard-mb N (files of at most N MiB; 0 = one file, default 4096)]\n");
}

/* Fills the defaults: a small byte-level Llama on the bundled text. */
static void defaults(llama_args *a) {
  memset(a, 0, sizeof *a);
  a->arch = "llama";
  a->layers = 4;
  a->hidden = 128;
  a->intermediate = 352;
  a->heads = 4;
  a->kv_heads = 2;
  a->qkv_bias = -1;
  a->tied = -1;
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
  a->text = LLAMA_DEFAULT_TEXT;
  a->val_frac = 0.1;
  a->eval_batches = 4;
  a->seed = 1337;
  a->log_every = 1;
  a->sample_lines = 3;
  a->sample_chars = 200;
  a->temperature = 0.8f;
  a->export_dtype = ZS_F32;
  a->export_shard_mb = 4096;
}

/* Parses an int / float option value; -1 when malformed. */
static int as_int(const char *opt, const char *v, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0') return llama_fail("%s wants an integer, got '%s'", opt, v);
  *out = (int)x;
  return 0;
}
static int as_float(const char *opt, const char *v, double *out) {
  char *end;
  *out = strtod(v, &end);
  if (*v == '\0' || *end != '\0') return llama_fail("%s wants a number, got '%s'", opt, v);
  return 0;
}

/* Options with an int value. */
static int int_opt(llama_args *a, const char *k, const char *v, int *hit) {
  int mb = -1;
  struct {
    const char *name;
    int *dst;
  } t[] = {{"--layers", &a->layers},
           {"--hidden", &a->hidden},
           {"--intermediate", &a->intermediate},
           {"--heads", &a->heads},
           {"--kv-heads", &a->kv_heads},
           {"--head-dim", &a->head_dim},
           {"--vocab", &a->vocab},
           {"--max-pos", &a->max_pos},
           {"--qkv-bias", &a->qkv_bias},
           {"--tied", &a->tied},
           {"--batch", &a->batch},
           {"--seq", &a->seq},
           {"--micro-steps", &a->micro_steps},
           {"--steps", &a->steps},
           {"--warmup", &a->warmup},
           {"--stage", &a->stage},
           {"--prefetch", &a->prefetch},
           {"--eval-every", &a->eval_every},
           {"--eval-batches", &a->eval_batches},
           {"--log-every", &a->log_every},
           {"--sample-lines", &a->sample_lines},
           {"--sample-chars", &a->sample_chars},
           {"--save-every", &a->save_every},
           {"--stop-after", &a->stop_after},
           {"--export-shard-mb", &mb}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(k, t[i].name) == 0) {
      *hit = 1;
      LL_TRY(as_int(k, v, t[i].dst));
      if (mb >= 0) a->export_shard_mb = mb;
      return 0;
    }
  return 0;
}

/* Options with a float value. */
static int float_opt(llama_args *a, const char *k, const char *v, int *hit) {
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
      LL_TRY(as_float(k, v, &x));
      *t[i].dst = (float)x;
      return 0;
    }
  if (strcmp(k, "--val-frac") == 0) return *hit = 1, as_float(k, v, &a->val_frac);
  return 0;
}

/* Options with a string or enumerated value. */
static int str_opt(llama_args *a, const char *k, const char *v, int *hit) {
  struct {
    const char *name;
    const char **dst;
  } t[] = {{"--init-safetensors", &a->init_dir},
           {"--config", &a->config},
           {"--arch", &a->arch},
           {"--data", &a->data},
           {"--text", &a->text},
           {"--batches", &a->batches},
           {"--metrics", &a->metrics},
           {"--plot", &a->plot},
           {"--ckpt-dir", &a->ckpt_dir},
           {"--resume", &a->resume},
           {"--export", &a->export_dir},
           {"--freeze", &a->freeze}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(k, t[i].name) == 0) return *hit = 1, *t[i].dst = v, 0;
  *hit = 1;
  if (strcmp(k, "--device") == 0) {
    if (strcmp(v, "cpu") && strcmp(v, "cuda")) return llama_fail("--device is cpu or cuda");
    a->device = strcmp(v, "cpu") ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  } else if (strcmp(k, "--dtype") == 0 || strcmp(k, "--reduce-dtype") == 0 ||
             strcmp(k, "--export-dtype") == 0) {
    if (strcmp(v, "fp32") && strcmp(v, "bf16")) return llama_fail("%s is fp32 or bf16", k);
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
      return llama_fail("--offload is none, opt or opt+params");
  } else if (strcmp(k, "--master") == 0) {
    if (gpt2_parse_master(v, &a->master)) return llama_fail("%s", gpt2_error());
  } else if (strcmp(k, "--moment-dtype") == 0) {
    if (gpt2_parse_moment_dtype(v, &a->moment_dtype)) return llama_fail("%s", gpt2_error());
  } else if (strcmp(k, "--offload-budget") == 0) {
    if (strcmp(v, "free") == 0)
      a->offload_budget = ZS_BUDGET_FREE; /* what is free at commit, the least over the ranks */
    else if (gpt2_parse_bytes(k, v, &a->offload_budget))
      return llama_fail("%s", gpt2_error());
  } else if (strcmp(k, "--seed") == 0) {
    a->seed = strtoull(v, NULL, 10);
  } else {
    *hit = 0;
  }
  return 0;
}

int llama_args_parse(llama_args *a, int argc, char **argv) {
  defaults(a);
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i];
    if (!strcmp(k, "--help") || !strcmp(k, "-h")) return llama_usage(), 1;
    if (!strcmp(k, "--deterministic")) {
      a->deterministic = 1;
      continue;
    }
    if (!strcmp(k, "--recompute")) {
      a->recompute = 1;
      continue;
    }
    if (i + 1 >= argc) return llama_fail("option %s needs a value (see --help)", k);
    const char *v = argv[++i];
    int hit = 0;
    LL_TRY(int_opt(a, k, v, &hit));
    if (!hit) LL_TRY(float_opt(a, k, v, &hit));
    if (!hit) LL_TRY(str_opt(a, k, v, &hit));
    if (!hit) return llama_fail("unknown option %s (see --help)", k);
  }
  if (a->warmup < 0) a->warmup = a->steps / 20;
  if (a->batch <= 0 || a->seq <= 0 || a->micro_steps <= 0 || a->steps < 0)
    return llama_fail("--batch, --seq and --micro-steps must be > 0, --steps >= 0");
  if (a->val_frac < 0 || a->val_frac >= 0.5) return llama_fail("--val-frac must be in [0, 0.5)");
  if (gpt2_precision_check(a->master, a->dtype)) return llama_fail("%s", gpt2_error());
  if (a->save_every < 0 || a->stop_after < 0)
    return llama_fail("--save-every and --stop-after must be >= 0");
  if (a->save_every > 0 && !a->ckpt_dir)
    return llama_fail("--save-every needs --ckpt-dir DIR (where the checkpoints go)");
  if (a->init_dir && a->config)
    return llama_fail("--init-safetensors DIR brings its own config.json: drop --config");
  return 0;
}
