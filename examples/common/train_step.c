/* The parts of a training step that both examples' loops use (see train_run.h): --resume, the
 * end step, the step's log line and record, and the periodic checkpoint and validation. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_run.h"
#include "util.h"
#include "zshard_facts.h"

int ex_resume(ex_run *r, int *start) {
  *start = 0;
  if (!r->a.resume) return 0;
  ZS_TRY(zs_engine_load(r->eng, r->a.resume));
  *start = (int)zs_engine_steps_done(r->eng);
  if (r->rank == 0) printf("resumed from %s at step %d\n", r->a.resume, *start);
  return 0;
}

int ex_last_step(const ex_run *r) {
  const ex_train_args *a = &r->a;
  return a->stop_after > 0 && a->stop_after < a->steps ? a->stop_after : a->steps;
}

/* Every rank's step time (one all-reduce of world numbers): the largest and its rank. */
static int slowest_rank(ex_run *r, double ms, double *max_ms, int *rank) {
  double *t = calloc((size_t)r->world, sizeof *t);
  if (!t) return gpt2_fail("out of host memory for the step times");
  t[r->rank] = ms;
  const zs_status rc = zs_comm_allreduce(r->comm, t, t, (size_t)r->world, ZS_HOST_F64, ZS_RED_MAX);
  *rank = 0;
  for (int i = 1; i < r->world; i++)
    if (t[i] > t[*rank]) *rank = i;
  *max_ms = t[*rank];
  free(t);
  if (rc != ZS_OK) return gpt2_fail_zs("zs_comm_allreduce (step times)", rc);
  return 0;
}

/* --tensorboard: every rank's largest ledger bytes per category and, on CUDA, GPU counters (zeros
   where NVML is missing), in one all-reduce of 12 or 15 numbers (the device is every rank's). */
static int log_memory(ex_run *r, int step) {
  zs_memory mem;
  ZS_TRY(zs_engine_memory(r->eng, &mem));
  zs_bytes *c[6] = {&mem.params,  &mem.grads,       &mem.optimizer,
                    &mem.buffers, &mem.host_pinned, &mem.total};
  double v[15] = {0};
  for (int i = 0; i < 6; i++)
    v[2 * i] = (double)c[i]->cur, v[2 * i + 1] = (double)c[i]->peak;
  const int gpu = r->a.device == ZS_DEVICE_CUDA;
  zs_device_usage u;
  if (gpu && zs_engine_device_usage(r->eng, &u) == ZS_OK)
    v[12] = (double)u.used_bytes, v[13] = (double)u.total_bytes, v[14] = u.util_gpu_pct;
  ZS_TRY(zs_comm_allreduce(r->comm, v, v, gpu ? 15 : 12, ZS_HOST_F64, ZS_RED_MAX));
  for (int i = 0; i < 6; i++)
    c[i]->cur = (size_t)v[2 * i], c[i]->peak = (size_t)v[2 * i + 1];
  TRY(gpt2_metrics_memory(&r->met, step, &mem));
  return gpu ? gpt2_metrics_gpu(&r->met, step, v + 12) : 0;
}

int ex_log_step(ex_run *r, int step, float lr, double loss, const zs_step_stats *st,
                double seconds) {
  const ex_train_args *a = &r->a;
  double tokens = (double)a->batch * a->seq * a->micro_steps * r->dp_world;
  gpt2_step_log lg;
  memset(&lg, 0, sizeof lg);
  lg.step = step + 1;
  double mean = loss;
  ZS_TRY(zs_comm_allreduce(r->comm, &mean, &mean, 1, ZS_HOST_F64, ZS_RED_MEAN));
  lg.loss = (float)mean;
  lg.lr = lr;
  lg.grad_norm = st->grad_norm;
  lg.skipped = st->skipped_nonfinite;
  lg.ms = 1e3 * seconds;
  lg.check_ms = 1e3 * st->check_seconds;
  lg.comm_ms = 1e3 * st->comm_seconds;
  lg.update_ms = 1e3 * st->update_seconds;
  lg.io_ms = 1e3 * st->io_seconds;
  lg.gpu_comm_ms = 1e3 * st->gpu_comm_seconds;
  lg.gpu_exposed_ms = 1e3 * st->gpu_exposed_seconds;
  lg.gpu_missed = st->gpu_missed > INT_MAX ? INT_MAX : (int)st->gpu_missed;
  lg.ckpt_writing = r->writing; /* as the step began: its begin_step may have committed it */
  lg.data_ms = 1e3 * r->data_s;
  r->data_s = 0;
  zs_engine_facts f = {.struct_size = sizeof f};
  ZS_TRY(zs_engine_facts_get(r->eng, &f));
  lg.comm_mb = (double)(f.comm_bus_bytes - r->comm_seen) * 1e-6;
  lg.tp_comm_mb = (double)(f.comm_tp_bus_bytes - r->tp_comm_seen) * 1e-6;
  r->comm_seen = f.comm_bus_bytes;
  r->tp_comm_seen = f.comm_tp_bus_bytes;
  lg.compute_ms = lg.ms - lg.check_ms - lg.comm_ms - lg.update_ms - lg.io_ms - lg.data_ms;
  if (lg.compute_ms < 0) lg.compute_ms = 0;
  TRY(slowest_rank(r, lg.ms, &lg.max_ms, &lg.slowest));
  lg.tokens_per_s = tokens / seconds;
  lg.mfu = r->flops_per_token > 0
               ? r->flops_per_token * lg.tokens_per_s / r->world / (r->peak_tflops * 1e12)
               : -1.0;
  if (r->log_full_loss) { /* for comparisons with other implementations (the JSONL has 6 digits) */
    char ev[160];
    snprintf(ev, sizeof ev, "{\"event\":\"loss\",\"step\":%d,\"loss\":%.9g}", step + 1, mean);
    gpt2_metrics_event(&r->met, ev);
  }
  TRY(gpt2_metrics_step(&r->met, &lg, a->steps, a->log_every));
  r->last_loss = lg.loss;
  if (a->tensorboard) TRY(log_memory(r, step + 1));
  return 0;
}

/* A save's outcome rc (what: which part; committed: whether ZS_OK means the checkpoint is
   committed, not only staged). A failure of the disk (ZS_ERR_IO) or of host memory is survivable:
   the run says so and the next save point tries again, until --save-retries failures in a row;
   any other leaves the engine unusable and ends the run. */
static int save_outcome(ex_run *r, int step, zs_status rc, const char *what, int committed) {
  const ex_train_args *a = &r->a;
  if (rc == ZS_OK) {
    if (committed) r->save_failures = 0;
    return 0;
  }
  if (rc != ZS_ERR_IO && rc != ZS_ERR_OUT_OF_MEMORY) return gpt2_fail_zs(what, rc);
  r->save_failures++;
  if (r->rank == 0)
    fprintf(stderr,
            "checkpoint: %s of step %d failed (%d in a row; --save-retries %d): %s; training "
            "goes on, the last committed checkpoint stays the latest\n",
            what, step, r->save_failures, a->save_retries, zs_last_error());
  if (r->save_failures > a->save_retries)
    return gpt2_fail("%d saves in a row failed (more than --save-retries %d): stopping",
                     r->save_failures, a->save_retries);
  return 0;
}

/* With --ckpt-async: the outcome of the save still staged (or of one a step committed). */
static int settle_async(ex_run *r) {
  const int step = r->staged_step;
  const double t0 = gpt2_now();
  const zs_status rc = zs_engine_save_wait(r->eng);
  const double s = gpt2_now() - t0;
  r->staged_step = 0;
  if (rc == ZS_OK && step && r->rank == 0)
    printf("checkpoint: step %d committed to %s (waited %.2f s for its write)\n", step,
           r->a.ckpt_dir, s);
  if (rc == ZS_OK && step) TRY(gpt2_metrics_ckpt_wait(&r->met, step, s));
  return save_outcome(r, step, rc, "the background write", 1);
}

int ex_after_step(ex_run *r, int step, int end) {
  const ex_train_args *a = &r->a;
  const int done = step + 1;
  if (a->save_every > 0 && (done % a->save_every == 0 || done == end)) {
    const int async = r->staged_step || zs_engine_save_pending(r->eng);
    if (async) TRY(settle_async(r)); /* one save at a time: the last one's outcome first */
    double t0 = gpt2_now();
    const zs_status rc = zs_engine_save(r->eng, a->ckpt_dir);
    const double s = gpt2_now() - t0;
    if (rc == ZS_OK && zs_engine_save_pending(r->eng)) r->staged_step = done;
    TRY(save_outcome(r, done, rc, "the save", !r->staged_step));
    if (rc == ZS_OK) {
      if (r->rank == 0)
        printf("checkpoint: step %d %s %s in %.2f s%s\n", done,
               r->staged_step ? "staged for" : "saved to", a->ckpt_dir, s,
               r->staged_step ? " (written in the background)" : "");
      TRY(gpt2_metrics_ckpt(&r->met, done, s));
    }
    if (done == end && r->staged_step) TRY(settle_async(r)); /* the run's last checkpoint */
  }
  if (a->eval_every > 0 && done % a->eval_every == 0 && done < a->steps) {
    float v;
    TRY(ex_evaluate(r, &v));
    if (isfinite(v)) TRY(gpt2_metrics_val(&r->met, done, v));
  }
  r->writing = zs_engine_save_pending(r->eng); /* the next step's ckpt_writing */
  return 0;
}
