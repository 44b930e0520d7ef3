/* What a training example reports around its loop (see train_run.h): the memory table, the final
 * validation and loss curve, the batch shape. */
#include <math.h>
#include <stdio.h>

#include "precision.h"
#include "train_run.h"
#include "util.h"

int ex_report_memory(ex_run *r, const char *when) {
  const ex_train_args *a = &r->a;
  zs_memory mem;
  ZS_TRY(zs_engine_memory(r->eng, &mem));
  char mode[128];
  /* The engine's budget: with --offload-budget free, the number measured at commit. */
  const size_t budget = zs_engine_config(r->eng)->offload_budget_bytes;
  gpt2_precision_describe(a->master, a->moment_dtype, budget, mode, sizeof mode);
  gpt2_print_memory(&mem, r->rank, r->world, when, mode, *r->act_bytes);
  if (a->device == ZS_DEVICE_CUDA) { /* the device's own view beside the ledger (NVML) */
    zs_device_usage u;
    if (zs_engine_device_usage(r->eng, &u) == ZS_OK)
      printf("rank %d GPU (%s, NVML): %.2f of %.2f GiB used by every process (the engine's "
             "ledger: %.2f GiB), %u%% busy\n",
             r->rank, when, (double)u.used_bytes / 1073741824.0,
             (double)u.total_bytes / 1073741824.0, (double)mem.total.cur / 1073741824.0,
             u.util_gpu_pct);
    else if (r->rank == 0)
      printf("GPU counters: %s\n", zs_last_error());
  }
  char js[768], ev[1280];
  gpt2_memory_json(&mem, js, sizeof js);
  snprintf(ev, sizeof ev,
           "{\"event\":\"memory\",\"when\":\"%s\",\"rank\":0,\"bytes\":%s,\"activations\":%zu,"
           "\"master\":\"%s\",\"moment_dtype\":\"%s\",\"offload_budget\":%zu}",
           when, js, *r->act_bytes, gpt2_master_name(a->master),
           a->moment_dtype == ZS_BF16 ? "bf16" : "fp32", budget);
  gpt2_metrics_event(&r->met, ev);
  return 0;
}

int ex_report_end(ex_run *r, const char *title) {
  const ex_train_args *a = &r->a;
  r->last_val = NAN;
  if (a->val_frac > 0 && a->steps > 0) {
    TRY(ex_evaluate(r, &r->last_val));
    if (isfinite(r->last_val)) TRY(gpt2_metrics_val(&r->met, a->steps, r->last_val));
  }
  TRY(ex_report_memory(r, "end"));
  if (a->plot && r->rank == 0) {
    TRY(gpt2_plot_svg(&r->met, a->plot, title, r->unigram));
    printf("loss curve: %s\n", a->plot);
  }
  return 0;
}

void ex_print_batch_shape(const ex_run *r) {
  const ex_train_args *a = &r->a;
  if (r->rank != 0) return;
  printf("batch: %d x %d tokens x %d micro-steps x %d data-parallel ranks = %d tokens/step | %d "
         "steps\n",
         a->batch, a->seq, a->micro_steps, r->dp_world,
         a->batch * a->seq * a->micro_steps * r->dp_world, a->steps);
}
