/* Host waits on CUDA work bounded by a timeout (CUDA builds only): polling instead of
 * cudaStreamSynchronize, so that work stuck behind a collective of a silent peer becomes
 * ZS_ERR_TIMEOUT instead of a hang. Header-only (static inline): the engine and the kernels
 * library each compile their own copy. */
#ifndef ZS_DEVICE_CUDA_POLL_H
#define ZS_DEVICE_CUDA_POLL_H

#include <cuda_runtime.h>
#include <sched.h>
#include <time.h>

#include "base/clock.h"
#include "zshard.h"

/* The library's error function: zs_err in libzshard, zs_kerr in the kernels library (each
   records its message in the thread's last error and returns the status). */
typedef zs_status (*zs_cuda_poll_report)(zs_status s, const char *fmt, ...);

/* Polls query(obj) until it is not cudaErrorNotReady or timeout_s passed: spins with sched_yield
   for the first 10 ms (short waits stay fast), then sleeps growing to 1 ms. Returns ZS_OK,
   ZS_ERR_TIMEOUT naming `what` (the message recorded through report), or ZS_ERR_DEVICE with the
   CUDA error in *err (message left to the caller). timeout_s <= 0: no bound. */
static inline zs_status zs_cuda_poll(cudaError_t (*query)(void *), void *obj, double timeout_s,
                                     const char *what, cudaError_t *err,
                                     zs_cuda_poll_report report) {
  const double t0 = zs_clock_now_s();
  long ns = 0;
  for (;;) {
    const cudaError_t e = query(obj);
    if (e == cudaSuccess) return ZS_OK;
    if (e != cudaErrorNotReady) {
      *err = e;
      return ZS_ERR_DEVICE;
    }
    const double el = zs_clock_now_s() - t0;
    if (timeout_s > 0 && el > timeout_s)
      return report(ZS_ERR_TIMEOUT,
                    "%s: GPU work queued before it was still running after %.1f s (comm_timeout_s "
                    "%g): a collective it depends on waits for a peer that stopped answering; the "
                    "engine's communicators are aborted: end the job, check the other ranks, and "
                    "restart from a checkpoint",
                    what, el, timeout_s);
    if (el < 0.01) {
      sched_yield();
      continue;
    }
    ns = ns ? (ns < 1000000 ? 2 * ns : 1000000) : 10000;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
  }
}

static inline cudaError_t zs_cuda_query_stream(void *s) {
  return cudaStreamQuery((cudaStream_t)s);
}

#endif
