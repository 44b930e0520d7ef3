/* The command-line options train_gpt2 and train_llama share (batch shape, schedule, optimizer,
 * engine, data, reporting, checkpoints) and the parse loop both run: each program parses its own
 * model options first (ex_opt_fn), then these. Errors go to gpt2_error() (common/util.h). */
#ifndef COMMON_TRAIN_ARGS_H
#define COMMON_TRAIN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "lr_schedule.h"
#include "zshard.h"

typedef struct {
  int batch, seq, micro_steps, steps;
  float lr, lr_min_frac, weight_decay, grad_clip, beta1, beta2, eps;
  int optimizer;  /* --optimizer NAME: zs_config.optimizer (zs_optimizer_id) */
  float momentum; /* --momentum: SGD's (zs_config.sgd.momentum) */
  float muon_lr;  /* --muon-lr: with --optimizer muon, the hidden matrices' peak lr */
  int warmup;
  ex_lr_schedule lr_schedule; /* --lr-schedule (common/lr_schedule.h) */
  int stage;
  int tp; /* zs_config.tp_size (train_llama's --tp; 0 or 1: none) */
  unsigned offload;
  zs_device device;
  zs_dtype dtype, reduce_dtype;
  int grad_accum_fp32; /* --grad-accum-dtype fp32: zs_config.grad_accum_fp32 */
  int deterministic, recompute, prefetch;
  const char *data, *text; /* llm.c token file / byte text */
  double val_frac;
  int eval_every, eval_batches;
  uint64_t seed;
  const char *metrics, *plot;
  const char *tensorboard;        /* --tensorboard DIR: TensorBoard event files there (rank 0) */
  const char *flight_dir;         /* --flight-dir DIR: zs_config.flight_dir (else ZS_FLIGHT_DIR) */
  int sample_lines, sample_chars; /* sampling at the end (0: none; -1: 3 for text data) */
  float temperature;
  /* Checkpoints: --save-every N into --ckpt-dir, --resume DIR, --stop-after S (steps of this
     run's schedule), --export PATH in --export-dtype (each program says what PATH is). */
  int save_every, stop_after;
  /* --ckpt-async 1: zs_config.ckpt_async (else ZS_CKPT_ASYNC); --save-retries N: the failed saves
     in a row a run survives (default 3; each says so and the next save point tries again);
     --ckpt-write-rate BYTES: zs_config.ckpt_write_rate (set: ckpt_write_rate_set). */
  int ckpt_async, save_retries, ckpt_write_rate_set;
  size_t ckpt_write_rate;
  const char *ckpt_dir, *resume, *export_path;
  zs_dtype export_dtype;
  int log_every;
  /* --freeze SPEC: frozen units (each program's unit names); NULL = none */
  const char *freeze;
  /* Optimizer-state precision and budgeted offload (common/precision.h): --master (a
     zs_config.master value), --moment-dtype, --offload-budget BYTES (0 = none) or free
     (ZS_BUDGET_FREE). */
  int master;
  zs_dtype moment_dtype;
  size_t offload_budget;
  /* The NVMe tier (zs_config.nvme_path, offload_host_bytes): --nvme-path DIR and
     --offload-host-bytes BYTES; unset (NULL, 0) leaves the fields to ZS_NVME_PATH and
     ZS_OFFLOAD_HOST_BYTES. */
  const char *nvme_path;
  size_t offload_host_bytes;
  int offload_host_set;
} ex_train_args;

/* A program's own options: when k is one of them, sets *hit and parses v into ctx. 0, or -1
   for a bad value (gpt2_error()). */
typedef int (*ex_opt_fn)(void *ctx, const char *k, const char *v, int *hit);

/* The shared defaults (a small run on `default_text`, bytes); fields zeroed first. */
void ex_train_args_defaults(ex_train_args *t, const char *default_text);
/* Parses argv: --help/-h calls usage and returns 1; --deterministic and --recompute are flags;
   every other option takes one value and goes to own(ctx, ...) first, then to the shared ones.
   0, 1 (help), or -1 for an unknown option or a bad value (gpt2_error()). */
int ex_train_args_parse(ex_train_args *t, int argc, char **argv, ex_opt_fn own, void *ctx,
                        void (*usage)(void));
/* After parsing: resolves --warmup (-1: steps / 20) and checks the batch shape, --val-frac and
   the optimizer's numbers (--grad-clip >= 0, betas in [0, 1), --eps > 0). 0 or -1
   (gpt2_error()). */
int ex_train_args_check_shape(ex_train_args *t);
/* The warning for a warm-up as long as the run or longer (--warmup >= --steps > 0: the peak lr
   is never reached and the decay never runs), written to stderr; nothing otherwise. */
void ex_train_args_warn(const ex_train_args *t);
/* The lines to sample at the end: --sample-lines when given, else 3 for byte text and none for
   token files (whose samples, printed as token ids, read as nonsense). */
int ex_sample_lines(const ex_train_args *t, int is_text);
/* Prints the usage lines of the shared training options (batch, schedule, optimizer) with their
   defaults, and how the learning-rate schedules go. */
void ex_train_args_usage(void);
/* Checks --save-every / --stop-after / --ckpt-dir. 0 or -1 (gpt2_error()). */
int ex_train_args_check_ckpt(const ex_train_args *t);
/* Parses an int / a number option value; -1 (gpt2_error()) when malformed. */
int ex_parse_int(const char *opt, const char *v, int *out);
int ex_parse_double(const char *opt, const char *v, double *out);

/* One option with a value of one kind, parsed into *dst: an int, a float (parsed as a double,
   then rounded), a double, or the string itself. */
typedef enum { EX_OPT_INT, EX_OPT_FLOAT, EX_OPT_DOUBLE, EX_OPT_STR } ex_opt_kind;
typedef struct {
  const char *name; /* "--batch" */
  ex_opt_kind kind;
  void *dst; /* int *, float *, double * or const char ** after kind */
} ex_opt;
/* When k names one of the n options of t: sets *hit and parses v into it. 0, or -1 for a
   malformed value (gpt2_error()). */
int ex_opt_table(const ex_opt *t, size_t n, const char *k, const char *v, int *hit);

#endif
