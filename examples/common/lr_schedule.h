/* The learning-rate schedules of the training examples (--lr-schedule). Every schedule starts
 * with the same linear warm-up: step s < W gets lr * (s + 1) / W (step 0 already trains at
 * lr / W, step W - 1 at the peak lr; not the warm-up from zero some trainers use). After it:
 *   cosine    (default) half a cosine from lr at step W down to lr * min_frac at the last step
 *   linear    a straight line from lr at step W down to lr * min_frac at the last step
 *   constant  lr
 *   wsd       warm-up, stable, decay: lr until the last D = max(1, steps / 5) steps, which fall
 *             in a straight line to lr * min_frac at the last step (step steps - D - 1 is lr) */
#ifndef COMMON_LR_SCHEDULE_H
#define COMMON_LR_SCHEDULE_H

typedef enum { EX_LR_COSINE = 0, EX_LR_LINEAR, EX_LR_CONSTANT, EX_LR_WSD } ex_lr_schedule;

/* The schedule named name ("cosine", "linear", "constant", "wsd") into *out. 0, or -1 for an
   unknown name (gpt2_error()). */
int ex_lr_schedule_parse(const char *name, ex_lr_schedule *out);
/* The name of schedule s. */
const char *ex_lr_schedule_name(ex_lr_schedule s);
/* The learning rate of step (0-based) of a run of `steps` steps with `warmup` warm-up steps,
   peak lr and final lr * min_frac; cosine is gpt2_lr_at (common/metrics.h) bit for bit. */
float ex_lr_at(ex_lr_schedule s, int step, int steps, int warmup, float lr, float min_frac);

#endif
