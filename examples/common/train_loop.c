/* The step loop of a training example (see train_run.h): micro-steps between
 * zs_engine_begin_step and zs_engine_step, the logged loss, checkpoints, validation, resume. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train_run.h"
#include "util.h"

int ex_evaluate(ex_run *r, float *loss) {
  const ex_train_args *a = &r->a;
  double s = 0.0;
  int n = 0;
  for (int i = 0; r->data.tokens && i < a->eval_batches; i++) {
    if (gpt2_data_val_batch(&r->data, i, a->batch, a->seq, r->tok, r->tgt) != 0) break;
    float l = 0.0f;
    TRY(r->eval(r->ctx, r->tok, r->tgt, a->batch, &l));
    s += l;
    n++;
  }
  *loss = n ? (float)(s / n) : NAN;
  return 0;
}

/* One optimizer step: begin_step, micro-steps, zs_engine_step; fills the log entry. The logged
   loss is the mean over every rank's micro-batches (no MPI call of our own). */
static int train_step(ex_run *r, int step, gpt2_step_log *lg) {
  const ex_train_args *a = &r->a;
  float lr = ex_lr_at(a->lr_schedule, step, a->steps, a->warmup, a->lr, a->lr_min_frac);
  double t0 = gpt2_now(), loss = 0.0;
  ZS_TRY(zs_engine_set_lr(r->eng, lr));
  ZS_TRY(zs_engine_begin_step(r->eng, a->micro_steps));
  for (int mi = 0; mi < a->micro_steps; mi++) {
    float l = 0.0f;
    TRY(r->micro(r->ctx, step, mi, &l));
    loss += l;
  }
  zs_step_stats st;
  ZS_TRY(zs_engine_step(r->eng, &st));
  double dt = gpt2_now() - t0;
  double tokens = (double)a->batch * a->seq * a->micro_steps * r->world;
  memset(lg, 0, sizeof *lg);
  lg->step = step + 1;
  double mean = loss / a->micro_steps;
  ZS_TRY(zs_comm_allreduce(r->comm, &mean, &mean, 1, ZS_HOST_F64, ZS_RED_MEAN));
  lg->loss = (float)mean;
  lg->lr = lr;
  lg->grad_norm = st.grad_norm;
  lg->skipped = st.skipped_nonfinite;
  lg->ms = 1e3 * dt;
  lg->check_ms = 1e3 * st.check_seconds;
  lg->tokens_per_s = tokens / dt;
  lg->mfu = r->flops_per_token > 0
                ? r->flops_per_token * lg->tokens_per_s / r->world / (r->peak_tflops * 1e12)
                : -1.0;
  if (r->log_full_loss) { /* for comparisons with other implementations (the JSONL has 6 digits) */
    char ev[160];
    snprintf(ev, sizeof ev, "{\"event\":\"loss\",\"step\":%d,\"loss\":%.9g}", step + 1, mean);
    gpt2_metrics_event(&r->met, ev);
  }
  return 0;
}

/* --resume: the checkpoint's weights and optimizer state; the loop goes on from its step (the
   data order and the lr schedule are functions of the step). */
static int resume(ex_run *r, int *start) {
  *start = 0;
  if (!r->a.resume) return 0;
  ZS_TRY(zs_engine_load(r->eng, r->a.resume));
  *start = (int)zs_engine_steps_done(r->eng);
  if (r->rank == 0) printf("resumed from %s at step %d\n", r->a.resume, *start);
  return 0;
}

int ex_train(ex_run *r) {
  const ex_train_args *a = &r->a;
  int start;
  TRY(resume(r, &start));
  const int end = a->stop_after > 0 && a->stop_after < a->steps ? a->stop_after : a->steps;
  for (int s = start; s < end; s++) {
    gpt2_step_log lg;
    TRY(train_step(r, s, &lg));
    TRY(gpt2_metrics_step(&r->met, &lg, a->steps, a->log_every));
    r->last_loss = lg.loss;
    if (a->save_every > 0 && ((s + 1) % a->save_every == 0 || s + 1 == end)) {
      double t0 = gpt2_now();
      ZS_TRY(zs_engine_save(r->eng, a->ckpt_dir));
      if (r->rank == 0)
        printf("checkpoint: step %d saved to %s in %.2f s\n", s + 1, a->ckpt_dir, gpt2_now() - t0);
    }
    if (a->eval_every > 0 && (s + 1) % a->eval_every == 0 && s + 1 < a->steps) {
      float v;
      TRY(ex_evaluate(r, &v));
      if (isfinite(v)) TRY(gpt2_metrics_val(&r->met, s + 1, v));
    }
  }
  return 0;
}
