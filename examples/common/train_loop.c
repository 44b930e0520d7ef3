/* The validation pass and the step loop of a program that hands its micro-step to the run
 * (train_llama; train_gpt2 writes its loop itself), built from the parts in train_step.c. */
#include <math.h>

#include "data.h"
#include "lr_schedule.h"
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

int ex_train(ex_run *r) {
  const ex_train_args *a = &r->a;
  int start;
  TRY(ex_resume(r, &start));
  const int end = ex_last_step(r);
  for (int s = start; s < end; s++) {
    const float lr = ex_lr_at(a->lr_schedule, s, a->steps, a->warmup, a->lr, a->lr_min_frac);
    const double t0 = gpt2_now();
    double loss = 0.0;
    ZS_TRY(zs_engine_set_lr(r->eng, lr));
    ZS_TRY(zs_engine_begin_step(r->eng, a->micro_steps));
    for (int mi = 0; mi < a->micro_steps; mi++) {
      float l = 0.0f;
      TRY(r->micro(r->ctx, s, mi, &l));
      loss += l;
    }
    zs_step_stats st;
    ZS_TRY(zs_engine_step(r->eng, &st));
    TRY(ex_log_step(r, s, lr, loss / a->micro_steps, &st, gpt2_now() - t0));
    TRY(ex_after_step(r, s, end));
  }
  return 0;
}
