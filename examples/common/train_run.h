/* What one process of a training example (train_gpt2, train_llama) holds beside its model, and the
 * run both programs share around it: start, data and end (run_lifecycle.c), the engine and
 * kernels set up from the shared options (engine_setup.c), the parts of a step loop (train_step.c)
 * and the loop made of them for a program that binds its micro-step (train_loop.c), and the
 * reports (run_report.c). The model-specific parts come in as callbacks. Every int function
 * returns 0 or -1 with the message in gpt2_error() (util.h) unless it says otherwise. */
#ifndef COMMON_TRAIN_RUN_H
#define COMMON_TRAIN_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "device.h"
#include "metrics.h"
#include "train_args.h"
#include "zshard_kernels.h"

/* Micro-step mi of `step` (ctx: the program's): fetches its batch into the run's tok/tgt and
   trains on it (forward, loss, backward with every unit's grads_ready); *loss = its mean loss.
   Only ex_train calls it: a program with its own loop binds NULL. */
typedef int (*ex_micro_fn)(void *ctx, int step, int mi, float *loss);
/* Forward and loss only of b sequences of tok/tgt (ctx: the program's); *loss = the mean loss. */
typedef int (*ex_eval_fn)(void *ctx, const int *tok, const int *tgt, int b, float *loss);

typedef struct {
  ex_train_args a; /* a copy of the program's parsed shared options */
  zs_comm *comm;
  int rank, world;
  /* The data-parallel rank and size (ex_engine_build; rank and world before, and without tensor
     parallelism): the batches are split over these, each tp group sharing its rank's. */
  int dp_rank, dp_world;
  gpt2_data data; /* token file or text (empty with a program's own batches: no validation) */
  zs_engine *eng;
  zs_kernels *k;
  gpt2_metrics met;
  int *tok, *tgt; /* host batch, B*T (ex_host_batch_alloc) */
  double unigram; /* nats: the training tokens' unigram entropy (NAN: unknown) */
  float last_loss, last_val;
  int save_failures;       /* failed saves in a row (--save-retries) */
  int staged_step;         /* the step of the asynchronous save still staged (0: none) */
  int writing;             /* a save was staged, not committed, as the last step ended */
  const size_t *act_bytes; /* the model's activation bytes (memory reports) */
  /* The model, as the loop calls it. */
  void *ctx;
  ex_micro_fn micro;
  ex_eval_fn eval;
  double flops_per_token; /* > 0: MFU is logged against peak_tflops; else not reported */
  double peak_tflops;
  int log_full_loss; /* each step also writes {"event":"loss"} with 9 digits to the metrics */
  double data_s;     /* this step's seconds reading batches (the micro functions add them) */
  uint64_t comm_seen, tp_comm_seen; /* zs_engine_facts' bus bytes at the last step record */
} ex_run;

/* Zeroes r, starts MPI (zs_comm_init_mpi) and fills comm, rank and world. 0, or -1 after
   printing why to stderr as `prog` (there is no run to report into yet). */
int ex_run_start(ex_run *r, int *argc, char ***argv, const char *prog);
/* After parsing: a copy of the shared options, and the model's callbacks with their ctx. */
void ex_run_bind(ex_run *r, const ex_train_args *a, void *ctx, ex_micro_fn micro, ex_eval_fn eval);
/* Loads --data (llm.c tokens) or --text (bytes) with --val-frac held out; r->unigram = the
   training tokens' unigram entropy. */
int ex_load_data(ex_run *r);
/* The end of main: prints gpt2_error() as `prog` on rank r->rank when rc < 0, calls
   free_model(r->ctx) (the program's buffers, while the kernels that own them still exist), then
   frees what r holds (kernels, engine, communicator, metrics, data, host batch). Returns main's
   exit status. */
int ex_run_end(ex_run *r, int rc, const char *prog, void (*free_model)(void *ctx));

/* Creates r->eng from the shared options (stage, device, dtypes, offload, precision, AdamW)
   with `held_units` units gathered at a time (the commit's fit check), lets add_units(r->ctx)
   register (and freeze) the model's units, and commits. */
int ex_engine_build(ex_run *r, int held_units, int (*add_units)(void *ctx));
/* After commit: r->k on the engine's stream, computing in fp32 on the CPU device (its kernels are
   fp32 only: bf16 params are widened, common/widen.h) and in the param dtype on CUDA, bounded by
   the engine's timeout; *dev = the activation memory of that dtype. */
int ex_kernels_open(ex_run *r, gpt2_dev *dev);
/* r->tok and r->tgt for one micro-batch of B x T. */
int ex_host_batch_alloc(ex_run *r);

/* Mean validation loss over --eval-batches held-out batches (the same on every rank); NAN when
   there are none. */
int ex_evaluate(ex_run *r, float *loss);

/* The parts of a step loop (train_step.c), in the order a loop calls them:
     ex_resume, then for step in [start, ex_last_step): the lr (ex_lr_at), zs_engine_set_lr,
     zs_engine_begin_step, the micro-steps, zs_engine_step, ex_log_step, ex_after_step.
   train_gpt2 writes that loop itself; ex_train is it for a program that binds a micro-step. */
/* --resume: the checkpoint's weights and optimizer state; *start = its step (the data order and
   the lr schedule are functions of the step), 0 without --resume. */
int ex_resume(ex_run *r, int *start);
/* The step the loop stops before: --stop-after when it is set and below --steps, else --steps. */
int ex_last_step(const ex_run *r);
/* After zs_engine_step of `step` (0-based) at learning rate lr, taking `seconds`: the mean of
   every rank's mean micro-step loss (one allreduce), the console line and JSONL record (st's
   gradient norm, skip and check time; MFU when flops_per_token > 0), the 9-digit loss event
   with log_full_loss; r->last_loss = that mean. */
int ex_log_step(ex_run *r, int step, float lr, double loss, const zs_step_stats *st,
                double seconds);
/* After ex_log_step: a checkpoint every --save-every steps and at `end`, and a validation pass
   every --eval-every steps before the last. */
int ex_after_step(ex_run *r, int step, int end);
/* The loop above with r->micro as each micro-step (train_llama's). */
int ex_train(ex_run *r);

/* Prints and records this rank's memory table (every rank prints its own in turn). */
int ex_report_memory(ex_run *r, const char *when);
/* After training: the final validation (into r->last_val, NAN without one), the memory table
   "end", and the loss curve (--plot) titled `title`. */
int ex_report_end(ex_run *r, const char *title);
/* Rank 0 prints the "batch:" line of the run's shape. */
void ex_print_batch_shape(const ex_run *r);

#endif
