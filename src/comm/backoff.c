/* The polling back-off and the drain bound of the comm layer's waits (see backoff.h). */
#include "comm/backoff.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "base/config.h"
#include "base/clock.h"

void zs_backoff_init(zs_backoff *b) {
  b->t0 = zs_clock_now_s();
  b->ns = 50000L;
}

/* A yield while the wait is young, then a sleep doubling up to 1 ms. */
void zs_backoff_wait(zs_backoff *b) {
  if (zs_clock_now_s() - b->t0 < ZS_SPIN_S) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, b->ns};
  nanosleep(&ts, NULL);
  b->ns = b->ns * 2 > 1000000L ? 1000000L : b->ns * 2;
}

/* ZS_COMM_DRAIN_S or 5 s. */
double zs_drain_seconds(void) {
  const char *s = zs_env("ZS_COMM_DRAIN_S");
  if (s && *s) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end && *end == '\0' && v >= 0 && v < 1e6) return v;
  }
  return 5.0;
}
