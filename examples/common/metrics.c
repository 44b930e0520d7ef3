/* Schedule, step log, JSONL and memory table. */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb_events.h"
#include "util.h"

float gpt2_lr_at(int step, int steps, int warmup, float lr, float min_frac) {
  if (warmup > 0 && step < warmup) return lr * (float)(step + 1) / (float)warmup;
  int span = steps - warmup;
  if (span <= 1) return lr;
  double p = (double)(step - warmup) / (double)(span - 1);
  double c = 0.5 * (1.0 + cos(3.14159265358979323846 * (p > 1 ? 1 : p)));
  return (float)(lr * (min_frac + (1.0 - min_frac) * c));
}

int gpt2_metrics_open(gpt2_metrics *m, const char *path, int rank, int world) {
  memset(m, 0, sizeof *m);
  m->rank = rank;
  m->world = world;
  m->t0 = gpt2_now();
  if (path && rank == 0) {
    m->jsonl = fopen(path, "w");
    if (!m->jsonl) return gpt2_fail("cannot write --metrics file %s", path);
  }
  return 0;
}

int gpt2_metrics_tensorboard(gpt2_metrics *m, const char *dir) {
  if (m->rank != 0) return 0;
  TRY(ex_tb_open(dir, &m->tb));
  printf("tensorboard: %s (view: tensorboard --logdir %s)\n", ex_tb_path(m->tb), dir);
  return 0;
}

void gpt2_metrics_close(gpt2_metrics *m) {
  if (m->jsonl) fclose(m->jsonl);
  ex_tb_close(m->tb);
  free(m->loss);
  free(m->val_step);
  free(m->val_loss);
  memset(m, 0, sizeof *m);
}

/* Grows a float array to hold at least n + 1 entries. */
static int grow(void **p, int *cap, int n, size_t esz) {
  if (n < *cap) return 0;
  int nc = *cap ? *cap * 2 : 256;
  void *q = realloc(*p, (size_t)nc * esz);
  if (!q) return gpt2_fail("out of host memory for metrics");
  *p = q;
  *cap = nc;
  return 0;
}

int gpt2_metrics_step(gpt2_metrics *m, const gpt2_step_log *s, int steps, int every) {
  int cap = m->cap;
  TRY(grow((void **)&m->loss, &cap, m->n, sizeof(float)));
  m->cap = cap;
  m->loss[m->n++] = s->loss;
  if (m->rank != 0) return 0;
  if (m->jsonl) {
    fprintf(m->jsonl,
            "{\"step\":%d,\"loss\":%.9g,\"lr\":%.9g,\"grad_norm\":%.9g,\"ms\":%.17g,"
            "\"tokens_per_s\":%.17g,\"mfu\":%.17g,\"skipped\":%d,\"check_ms\":%.17g,"
            "\"comm_ms\":%.17g,\"update_ms\":%.17g,\"io_ms\":%.17g,\"data_ms\":%.17g,"
            "\"compute_ms\":%.17g,\"max_ms\":%.17g,\"slowest_rank\":%d,\"comm_mb\":%.17g,"
            "\"tp_comm_mb\":%.17g,\"gpu_comm_ms\":%.17g,\"gpu_exposed_ms\":%.17g,"
            "\"gpu_missed\":%d,\"ckpt_writing\":%d}\n",
            s->step, s->loss, s->lr, s->grad_norm, s->ms, s->tokens_per_s,
            s->mfu < 0 ? 0.0 : s->mfu, s->skipped, s->check_ms, s->comm_ms, s->update_ms, s->io_ms,
            s->data_ms, s->compute_ms, s->max_ms, s->slowest, s->comm_mb, s->tp_comm_mb,
            s->gpu_comm_ms, s->gpu_exposed_ms, s->gpu_missed, s->ckpt_writing);
    fflush(m->jsonl);
  }
  if (m->tb) {
    const struct {
      const char *tag;
      double v;
    } sc[] = {{"train/loss", s->loss},
              {"train/lr", s->lr},
              {"train/grad_norm", s->grad_norm},
              {"train/skipped_nonfinite", s->skipped},
              {"perf/step_ms", s->ms},
              {"perf/tokens_per_s", s->tokens_per_s},
              {"perf/check_ms", s->check_ms},
              {"time/comm_ms", s->comm_ms},
              {"time/update_ms", s->update_ms},
              {"time/io_ms", s->io_ms},
              {"time/data_ms", s->data_ms},
              {"time/compute_ms", s->compute_ms},
              {"time/max_ms", s->max_ms},
              {"time/slowest_rank", s->slowest},
              {"comm/bus_mb", s->comm_mb},
              {"comm/tp_bus_mb", s->tp_comm_mb},
              {"time/gpu_comm_ms", s->gpu_comm_ms},
              {"time/gpu_exposed_ms", s->gpu_exposed_ms},
              {"time/gpu_missed", s->gpu_missed},
              {"ckpt/writing", s->ckpt_writing},
              {"perf/mfu", s->mfu}};
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
      if (sc[i].v >= 0 || strcmp(sc[i].tag, "perf/mfu") != 0) /* MFU only where there is one */
        TRY(ex_tb_scalar(m->tb, sc[i].tag, s->step, sc[i].v));
    TRY(ex_tb_flush(m->tb));
  }
  if (s->step != steps && (every <= 0 || s->step % every != 0)) return 0; /* 0: last only */
  double elapsed = gpt2_now() - m->t0, eta = elapsed / s->step * (steps - s->step);
  printf("step %5d/%d | loss %.4f | lr %.2e | norm %6.3f | %8.1f ms | %9.0f tok/s", s->step, steps,
         s->loss, s->lr, s->grad_norm, s->ms, s->tokens_per_s);
  if (s->mfu >= 0) printf(" | MFU %5.1f%%", 100.0 * s->mfu);
  if (m->world > 1) printf(" | slowest r%d %.1f ms", s->slowest, s->max_ms);
  printf(" | eta %.0fs%s\n", eta, s->skipped ? " | SKIPPED (non-finite grads)" : "");
  fflush(stdout);
  return 0;
}

int gpt2_metrics_memory(gpt2_metrics *m, int step, const zs_memory *max) {
  if (m->rank != 0 || !m->tb) return 0;
  const struct {
    const char *name;
    zs_bytes b;
  } c[] = {{"params", max->params},           {"grads", max->grads},
           {"optimizer", max->optimizer},     {"buffers", max->buffers},
           {"host_pinned", max->host_pinned}, {"total", max->total}};
  char tag[64];
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    snprintf(tag, sizeof tag, "memory/%s", c[i].name);
    TRY(ex_tb_scalar(m->tb, tag, step, (double)c[i].b.cur));
    snprintf(tag, sizeof tag, "memory/%s_peak", c[i].name);
    TRY(ex_tb_scalar(m->tb, tag, step, (double)c[i].b.peak));
  }
  TRY(ex_tb_flush(m->tb));
  if (m->jsonl) {
    char js[512];
    gpt2_memory_json(max, js, sizeof js);
    fprintf(m->jsonl, "{\"step\":%d,\"memory_max\":%s}\n", step, js);
    fflush(m->jsonl);
  }
  return 0;
}

int gpt2_metrics_gpu(gpt2_metrics *m, int step, const double v[3]) {
  if (m->rank != 0 || !m->tb) return 0;
  TRY(ex_tb_scalar(m->tb, "gpu/used_bytes", step, v[0]));
  TRY(ex_tb_scalar(m->tb, "gpu/total_bytes", step, v[1]));
  TRY(ex_tb_scalar(m->tb, "gpu/util_pct", step, v[2]));
  TRY(ex_tb_flush(m->tb));
  if (m->jsonl) {
    fprintf(m->jsonl, "{\"step\":%d,\"gpu_max\":{\"used\":%.17g,\"total\":%.17g,\"util\":%.17g}}\n",
            step, v[0], v[1], v[2]);
    fflush(m->jsonl);
  }
  return 0;
}

/* A checkpoint figure: JSONL key key, TensorBoard tag tag. */
static int ckpt_scalar(gpt2_metrics *m, int step, const char *key, const char *tag, double v) {
  if (m->rank != 0) return 0;
  if (m->tb) {
    TRY(ex_tb_scalar(m->tb, tag, step, v));
    TRY(ex_tb_flush(m->tb));
  }
  if (m->jsonl) {
    fprintf(m->jsonl, "{\"step\":%d,\"%s\":%.17g}\n", step, key, v);
    fflush(m->jsonl);
  }
  return 0;
}

int gpt2_metrics_ckpt(gpt2_metrics *m, int step, double seconds) {
  return ckpt_scalar(m, step, "ckpt_s", "ckpt/blocking_s", seconds);
}

int gpt2_metrics_ckpt_wait(gpt2_metrics *m, int step, double seconds) {
  return ckpt_scalar(m, step, "ckpt_wait_s", "ckpt/wait_s", seconds);
}

int gpt2_metrics_val(gpt2_metrics *m, int step, float loss) {
  int cap = m->capval;
  TRY(grow((void **)&m->val_step, &cap, m->nval, sizeof(int)));
  cap = m->capval;
  TRY(grow((void **)&m->val_loss, &cap, m->nval, sizeof(float)));
  m->capval = cap;
  m->val_step[m->nval] = step;
  m->val_loss[m->nval++] = loss;
  if (m->rank != 0) return 0;
  printf("step %5d | val loss %.4f\n", step, loss);
  if (m->jsonl) {
    fprintf(m->jsonl, "{\"step\":%d,\"val_loss\":%.9g}\n", step, loss); /* float's bits */
    fflush(m->jsonl);
  }
  if (m->tb) {
    TRY(ex_tb_scalar(m->tb, "val/loss", step, loss));
    TRY(ex_tb_flush(m->tb));
  }
  return 0;
}

void gpt2_metrics_event(gpt2_metrics *m, const char *json_object) {
  if (m->jsonl) {
    fprintf(m->jsonl, "%s\n", json_object);
    fflush(m->jsonl);
  }
}

/* Bytes in MiB. */
static double mib(size_t b) {
  return (double)b / (1024.0 * 1024.0);
}

void gpt2_print_memory(const zs_memory *mem, int rank, int world, const char *when,
                       const char *mode, size_t act_bytes) {
  long ns = 150000000L * rank; /* ranks print in turn without a collective */
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  nanosleep(&ts, NULL);
  char out[1024];
  const struct {
    const char *name;
    zs_bytes b;
  } rows[] = {{"params", mem->params},           {"grads", mem->grads},
              {"optimizer", mem->optimizer},     {"buffers", mem->buffers},
              {"host_pinned", mem->host_pinned}, {"total", mem->total}};
  int len = snprintf(out, sizeof out, "memory of rank %d/%d (%s; %s), MiB\n  %-12s %10s %10s\n",
                     rank, world, when, mode, "category", "current", "peak");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0] && len < (int)sizeof out; i++)
    len += snprintf(out + len, sizeof out - (size_t)len, "  %-12s %10.2f %10.2f\n", rows[i].name,
                    mib(rows[i].b.cur), mib(rows[i].b.peak));
  if (len < (int)sizeof out)
    snprintf(out + len, sizeof out - (size_t)len, "  %-12s %10.2f  (example's buffers)\n",
             "activations", mib(act_bytes));
  fputs(out, stdout);
  fflush(stdout);
}

void gpt2_memory_json(const zs_memory *mem, char *out, size_t n) {
  snprintf(out, n,
           "{\"params\":[%zu,%zu],\"grads\":[%zu,%zu],\"optimizer\":[%zu,%zu],"
           "\"buffers\":[%zu,%zu],\"host_pinned\":[%zu,%zu],\"total\":[%zu,%zu]}",
           mem->params.cur, mem->params.peak, mem->grads.cur, mem->grads.peak, mem->optimizer.cur,
           mem->optimizer.peak, mem->buffers.cur, mem->buffers.peak, mem->host_pinned.cur,
           mem->host_pinned.peak, mem->total.cur, mem->total.peak);
}
