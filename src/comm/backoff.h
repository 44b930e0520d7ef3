/* Internal to src/comm: how every wait of the comm layer polls (MPI requests, NCCL, CUDA streams,
 * the TCP rendezvous) and how long destroy waits for abandoned requests. No collective object:
 * the bootstrap, the rendezvous and every backend include this. */
#ifndef ZS_COMM_BACKOFF_H
#define ZS_COMM_BACKOFF_H

#include "base/clock.h" /* zs_clock_now_s: the clock every wait is measured on */

/* Polling of a wait: MPI and CUDA progress only while we poll, so the first ZS_SPIN_S seconds
   spin with sched_yield (a large message needs many progress calls; yielding lets ranks that
   share a core run, as MPI's own blocking calls do), then sleeps grow to 1 ms (a stuck peer
   must not burn a core until the timeout). */
typedef struct {
  double t0;
  long ns;
} zs_backoff;
#define ZS_SPIN_S 1.0
/* Starts a wait's polling (its clock starts now). */
void zs_backoff_init(zs_backoff *b);
/* One pause between two polls. */
void zs_backoff_wait(zs_backoff *b);
/* Seconds coll/comm destroy waits for abandoned (timed-out) requests before leaking them. */
double zs_drain_seconds(void);

#endif
