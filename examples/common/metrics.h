/* What the training loop reports: the learning-rate schedule, one console line and one JSONL
 * record per step, validation points, the per-rank memory table, and the loss curve as SVG. */
#ifndef COMMON_METRICS_H
#define COMMON_METRICS_H

#include <stdio.h>

#include "zshard.h"

/* Linear warmup over `warmup` steps, then cosine decay from lr to lr * min_frac at the end. */
float gpt2_lr_at(int step, int steps, int warmup, float lr, float min_frac);

typedef struct {
  int step;
  float loss, lr, grad_norm;
  double ms, tokens_per_s, mfu; /* mfu < 0: not reported (CPU) */
  double check_ms;              /* of ms, the divergence check's header exchanges */
  /* Of ms, this rank's waits in the engine's collectives, its optimizer update and its batch
     reading; compute_ms is the rest (forward, backward, the loop's own work). The slowest rank's
     ms (every rank's maximum) and which rank it is. */
  double comm_ms, update_ms, io_ms, data_ms, compute_ms, max_ms;
  /* MB (10^6 bytes) this rank's collectives moved on a ring since the previous record
     (zs_engine_facts' comm_bus_bytes), and of them the tp group's. */
  double comm_mb, tp_comm_mb;
  /* CUDA (0 on the CPU): the step's collectives' GPU time and the part of it the compute stream
     stood waiting for (exposed; the rest ran behind compute): zs_step_stats' gpu_* figures. */
  double gpu_comm_ms, gpu_exposed_ms;
  int gpu_missed;   /* timing pairs left out of those */
  int ckpt_writing; /* 1: an asynchronous save was staged, not committed, as the step began (its
                       write ran during the step, or its commit is in the step's time) */
  int slowest;
  int skipped;
} gpt2_step_log;

typedef struct {
  int rank, world;
  FILE *jsonl; /* rank 0 only, NULL without --metrics */
  int n, cap;  /* recorded steps */
  float *loss; /* train loss of step i */
  int nval, capval;
  int *val_step;
  float *val_loss;
  double t0;
  struct ex_tb *tb; /* rank 0 with --tensorboard (tb_events.h), else NULL */
} gpt2_metrics;

/* Opens the JSONL file (rank 0, when path != NULL). 0 or -1. */
int gpt2_metrics_open(gpt2_metrics *m, const char *path, int rank, int world);
void gpt2_metrics_close(gpt2_metrics *m);
/* Rank 0 also writes every step's and validation's scalars as TensorBoard events in dir (which
   exists) and prints the command that shows them. 0 or -1. */
int gpt2_metrics_tensorboard(gpt2_metrics *m, const char *dir);
/* Records a step; rank 0 prints a line every `every` steps (0: only the last) with an ETA. */
int gpt2_metrics_step(gpt2_metrics *m, const gpt2_step_log *s, int steps, int every);
/* With --tensorboard: every rank's largest ledger bytes per category after `step` steps (current
   and peak; the same on every rank) as JSONL records ({"step":N,"memory_max":{...}}) and
   TensorBoard scalars (memory/<category>, memory/<category>_peak). Rank 0 writes; 0 or -1. */
int gpt2_metrics_memory(gpt2_metrics *m, int step, const zs_memory *max);
/* A save's blocking seconds after `step` ({"step":N,"ckpt_s":x}, ckpt/blocking_s), and with
   --ckpt-async the seconds a later save point or the run's end waited for that save's write and
   commit ({"step":N,"ckpt_wait_s":x}, ckpt/wait_s): in the JSONL with --metrics, in the events
   with --tensorboard. Rank 0 writes; 0 or -1. */
int gpt2_metrics_ckpt(gpt2_metrics *m, int step, double seconds);
int gpt2_metrics_ckpt_wait(gpt2_metrics *m, int step, double seconds);
/* With --tensorboard on CUDA: every rank's largest GPU counters after `step` steps (NVML through
   zs_engine_device_usage: used and total bytes of the whole device, busy percent; zeros where a
   rank has none) as the scalars gpu/used_bytes, gpu/total_bytes and gpu/util_pct, and a
   {"step", "gpu_max"} JSONL line. Rank 0 writes. */
int gpt2_metrics_gpu(gpt2_metrics *m, int step, const double used_total_util[3]);
/* Records a validation loss after `step` steps. */
int gpt2_metrics_val(gpt2_metrics *m, int step, float loss);
/* Writes any JSON object line ({"event": ...}) to the metrics file (rank 0). */
void gpt2_metrics_event(gpt2_metrics *m, const char *json_object);
/* Every rank prints its memory table in turn (rank r after r * 150 ms: no collective needed);
   mode (gpt2_precision_describe) names the optimizer-state precision in the table's title. */
void gpt2_print_memory(const zs_memory *mem, int rank, int world, const char *when,
                       const char *mode, size_t act_bytes);
/* JSON of a memory snapshot ({"params":[cur,peak],...}) into out. */
void gpt2_memory_json(const zs_memory *mem, char *out, size_t n);
/* Loss curve (train, and validation points) as a standalone SVG; 0 or -1. */
int gpt2_plot_svg(const gpt2_metrics *m, const char *path, const char *title, double ref_nats);

#endif
