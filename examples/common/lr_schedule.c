/* The learning-rate schedules (see lr_schedule.h). */
#include "lr_schedule.h"

#include <string.h>

#include "metrics.h"
#include "util.h"

static const char *const names[] = {"cosine", "linear", "constant", "wsd"};

int ex_lr_schedule_parse(const char *name, ex_lr_schedule *out) {
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(name, names[i]) == 0) return *out = (ex_lr_schedule)i, 0;
  return gpt2_fail("--lr-schedule %s: cosine, linear, constant or wsd", name);
}

const char *ex_lr_schedule_name(ex_lr_schedule s) {
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* Linear decay after the warm-up: lr at step warmup, lr * min_frac at the last step. */
static float linear_at(int step, int steps, int warmup, float lr, float min_frac) {
  int span = steps - warmup;
  if (span <= 1) return lr;
  double p = (double)(step - warmup) / (double)(span - 1);
  if (p > 1) p = 1;
  return (float)(lr * (1.0 - (1.0 - min_frac) * p));
}

/* Warm-up, stable, decay: lr, then the last D steps fall linearly to lr * min_frac. */
static float wsd_at(int step, int steps, float lr, float min_frac) {
  int d = steps / 5 > 1 ? steps / 5 : 1;
  int k = step - (steps - d) + 1; /* 1..d inside the decay */
  if (k <= 0) return lr;
  if (k > d) k = d;
  return (float)(lr * (1.0 - (1.0 - min_frac) * (double)k / (double)d));
}

float ex_lr_at(ex_lr_schedule s, int step, int steps, int warmup, float lr, float min_frac) {
  if (s == EX_LR_COSINE) return gpt2_lr_at(step, steps, warmup, lr, min_frac);
  if (warmup > 0 && step < warmup) return lr * (float)(step + 1) / (float)warmup;
  if (s == EX_LR_LINEAR) return linear_at(step, steps, warmup, lr, min_frac);
  if (s == EX_LR_WSD) return wsd_at(step, steps, lr, min_frac);
  return lr;
}
