/* Command line of train_gpt2 (see gpt2_usage for the list). */
#ifndef GPT2_ARGS_H
#define GPT2_ARGS_H

#include <stdint.h>

#include "zshard.h"

typedef struct {
  const char *model;                           /* preset name or NULL */
  int layers, channels, heads, vocab, max_seq; /* free shape (0 = preset / default) */
  int batch, seq, micro_steps, steps;
  float lr, lr_min_frac, weight_decay, grad_clip, beta2;
  int warmup;
  int stage;
  unsigned offload;
  zs_device device;
  zs_dtype dtype, reduce_dtype;
  int deterministic, recompute, prefetch;
  const char *data, *text; /* llm.c token file / byte text */
  double val_frac;
  int eval_every, eval_batches;
  const char *init_safetensors;
  uint64_t seed;
  const char *metrics, *plot;
  int sample_lines, sample_chars;
  float temperature;
  const char *dump_grads, *dump_weights, *dump_logits;
  /* Checkpoints: --save-every N into --ckpt-dir, --resume DIR, --stop-after S (steps of this
     run's schedule), --export FILE (HF GPT-2 safetensors + config.json) in --export-dtype. */
  int save_every, stop_after;
  const char *ckpt_dir, *resume, *export_path;
  zs_dtype export_dtype;
  double peak_tflops;
  double check_frac; /* exit 1 unless the final loss < check_frac * unigram entropy */
  int log_every;
  /* --freeze SPEC: units frozen (zs_unit_freeze), gpt2_freeze_mask's syntax; NULL = none */
  const char *freeze;
  /* Optimizer-state precision and budgeted offload (gpt2/precision.h): --master (a
     zs_config.master value), --moment-dtype, --offload-budget BYTES (0 = none) or free
     (ZS_BUDGET_FREE). */
  int master;
  zs_dtype moment_dtype;
  size_t offload_budget;
} gpt2_args;

/* Defaults, then argv; 0, 1 for --help (usage printed), -1 for a bad option (gpt2_error()). */
int gpt2_args_parse(gpt2_args *a, int argc, char **argv);
/* Prints the options to stdout. */
void gpt2_usage(void);

#endif
