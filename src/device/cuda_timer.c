/* The GPU timing of a step (device.h: zs_dev_timer_*): pairs of timing events on the engine's
 * streams, read at the step's end with cudaEventQuery and cudaEventElapsedTime only, so the
 * timing adds no wait. A pair whose events fail to record, or have not completed when read, is
 * left out and counted. */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdlib.h>

#include "base/error.h"
#include "device/device_cuda.h"

#define TIMER_PAIRS 1024 /* per step; more are counted as missed */

enum { KIND_COLL, KIND_WAIT };

struct zs_dev_timer {
  cudaEvent_t ev[2 * TIMER_PAIRS]; /* pair i: ev[2i] before, ev[2i + 1] after */
  unsigned char kind[TIMER_PAIRS];
  unsigned char ok[TIMER_PAIRS]; /* both ends recorded */
  int n;                         /* pairs begun this step */
  int on;                        /* between zs_dev_timer_begin and zs_dev_timer_end */
  int open;                      /* a collective's pair begun, its end not recorded: its index */
  int missed;                    /* pairs that did not fit or failed to record */
  int broken;                    /* its events could not be made: every step goes untimed */
};

zs_status zs_cuda_timer_begin(zs_dev *d) {
  zs_dev_timer *t = d->timer;
  if (!t) {
    t = calloc(1, sizeof *t);
    if (!t) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the step's GPU timer");
    d->timer = t;
    for (int i = 0; i < 2 * TIMER_PAIRS && !t->broken; i++)
      if (cudaEventCreate(&t->ev[i]) != cudaSuccess) {
        (void)cudaGetLastError();
        for (int j = 0; j < i; j++)
          cudaEventDestroy(t->ev[j]);
        t->broken = 1; /* not tried again: every step reports itself untimed */
      }
  }
  if (t->broken) {
    t->on = 0;
    return zs_err(ZS_ERR_DEVICE, "the step's timing events could not be made: steps go untimed");
  }
  t->n = t->missed = 0;
  t->open = -1;
  t->on = 1;
  return ZS_OK;
}

/* Records end `end` of a new (end 0) or the open (end 1) pair of kind on stream. */
static void mark(zs_dev_timer *t, int kind, void *stream, int end) {
  if (!t || !t->on) return;
  if (!end) {
    if (t->n == TIMER_PAIRS) {
      t->missed++;
      t->open = -1;
      return;
    }
    const int i = t->n++;
    t->kind[i] = (unsigned char)kind;
    t->ok[i] = cudaEventRecord(t->ev[2 * i], (cudaStream_t)stream) == cudaSuccess;
    if (!t->ok[i]) (void)cudaGetLastError(); /* a missed pair, not the caller's next error */
    t->open = i;
  } else if (t->open >= 0) {
    const int i = t->open;
    const int ok = cudaEventRecord(t->ev[2 * i + 1], (cudaStream_t)stream) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();
    t->ok[i] = t->ok[i] && ok;
    t->open = -1;
  }
}

void zs_cuda_timer_coll(zs_dev *d, void *stream, int end) {
  mark(d->timer, KIND_COLL, stream, end);
}

void zs_cuda_timer_wait(zs_dev *d, void *waiter, int end) {
  if (waiter == d->compute_stream) mark(d->timer, KIND_WAIT, waiter, end);
}

void zs_cuda_timer_end(zs_dev *d, double *coll_s, double *wait_s, int *missed) {
  zs_dev_timer *t = d->timer;
  *coll_s = *wait_s = 0;
  *missed = 0;
  if (t && t->broken) *missed = INT_MAX; /* untimed */
  if (!t || !t->on) return;
  t->on = 0;
  int lost = t->missed + (t->open >= 0);
  for (int i = 0; i < t->n; i++) {
    float ms = 0;
    if (i == t->open || !t->ok[i] || cudaEventQuery(t->ev[2 * i + 1]) != cudaSuccess ||
        cudaEventElapsedTime(&ms, t->ev[2 * i], t->ev[2 * i + 1]) != cudaSuccess) {
      (void)cudaGetLastError();
      lost += i != t->open;
      continue;
    }
    *(t->kind[i] == KIND_COLL ? coll_s : wait_s) += 1e-3 * (double)ms;
  }
  *missed = lost;
}

void zs_cuda_timer_free(zs_dev *d) {
  zs_dev_timer *t = d->timer;
  if (!t) return;
  for (int i = 0; i < 2 * TIMER_PAIRS && !t->broken; i++)
    cudaEventDestroy(t->ev[i]); /* a pending record: CUDA releases it once it completes */
  free(t);
  d->timer = NULL;
}
