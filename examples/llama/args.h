/* Command line of train_llama (see llama_usage for the list). */
#ifndef LLAMA_ARGS_H
#define LLAMA_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

typedef struct {
  /* Model: a Hugging Face directory (--init-safetensors: config.json + weights), a config.json
     alone (--config: random init), or a free shape (--arch and the size flags). */
  const char *init_dir, *config, *arch;
  int layers, hidden, intermediate, heads, kv_heads, head_dim, vocab, max_pos;
  int qkv_bias, tied; /* free shapes: -1 = the arch's default */
  int batch, seq, micro_steps, steps;
  float lr, lr_min_frac, weight_decay, grad_clip, beta2;
  int warmup;
  int stage;
  unsigned offload;
  zs_device device;
  zs_dtype dtype, reduce_dtype;
  int deterministic, recompute, prefetch;
  const char *data, *text; /* llm.c token file / byte text */
  const char *batches;     /* fixed batches, int32 [steps][sequences][seq + 1] (batches.h) */
  double val_frac;
  int eval_every, eval_batches;
  uint64_t seed;
  const char *metrics, *plot;
  int save_every, stop_after;
  const char *ckpt_dir, *resume, *export_dir;
  zs_dtype export_dtype;
  int64_t export_shard_mb; /* export: files of at most this many MiB (0: one file) */
  int log_every;
  int sample_lines, sample_chars; /* sampling at the end (0: none) */
  float temperature;
  /* --freeze SPEC: frozen units (gpt2_freeze_spec's syntax, the last unit named "head"); NULL =
     none. Optimizer-state precision and budgeted offload as train_gpt2's (gpt2/precision.h). */
  const char *freeze;
  int master;
  zs_dtype moment_dtype;
  size_t offload_budget;
} llama_args;

/* Defaults, then argv; 0, 1 for --help (usage printed), -1 for a bad option (gpt2_error()). */
int llama_args_parse(llama_args *a, int argc, char **argv);
/* Prints the options to stdout. */
void llama_usage(void);

#endif
