/* Polling waits on MPI requests with a deadline, and the keeping of requests a timeout abandoned.
 */
#include <stdio.h>
#include <stdlib.h>

#include "comm/backoff.h"
#include "base/error.h"
#include "comm/mpi_wait.h"

static int leaked; /* MPI is used from one thread (MPI_THREAD_FUNNELED) */

/* Requests drains gave up on. */
int zs_mpi_leaked_requests(void) {
  return leaked;
}

/* MPI's description of an error code. */
const char *zs_mpi_errstr(int code, char *buf, size_t len) {
  char tmp[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(code, tmp, &n) != MPI_SUCCESS) n = 0;
  tmp[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = '\0';
  snprintf(buf, len, "%s", n ? tmp : "unknown MPI error");
  return buf;
}

/* Live zs_comm_init_mpi comms, and whether the first replaced MPI_ERRORS_ARE_FATAL (MPI is used
   from one thread). */
static int errh_users, errh_replaced;

void zs_mpi_world_errhandler_acquire(void) {
  if (errh_users++ > 0) return;
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &h) != MPI_SUCCESS) return;
  if (h == MPI_ERRORS_ARE_FATAL) { /* MPI's default; a handler of the program's stays */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    errh_replaced = 1;
  }
  MPI_Errhandler_free(&h);
}

void zs_mpi_world_errhandler_release(void) {
  if (errh_users == 0 || --errh_users > 0 || !errh_replaced) return;
  errh_replaced = 0;
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &h) != MPI_SUCCESS) return;
  if (h == MPI_ERRORS_RETURN) /* unless the program changed it meanwhile */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&h);
}

/* Tests until done, error or deadline; sleeps between tests so peers sharing the core can run. */
zs_status zs_mpi_wait(MPI_Request *req, double timeout_s, const char *what) {
  double deadline = timeout_s > 0 ? zs_clock_now_s() + timeout_s : 0;
  zs_backoff bo;
  zs_backoff_init(&bo);
  for (;;) {
    int done = 0;
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      char msg[MPI_MAX_ERROR_STRING + 16];
      return zs_err(ZS_ERR_COMM,
                    "%s failed in MPI: %s: a peer died, the network failed, or the ranks "
                    "called different collectives (a truncated message is that); end the job "
                    "and check the other ranks' output",
                    what, zs_mpi_errstr(rc, msg, sizeof msg));
    }
    if (done) return ZS_OK;
    if (deadline > 0 && zs_clock_now_s() > deadline)
      return zs_err(ZS_ERR_TIMEOUT,
                    "%s timed out after %.1f s: a peer stopped answering (it "
                    "crashed, hangs, or calls a different collective); the group "
                    "is now unusable: destroy it and end the job, or raise "
                    "comm_timeout_s if the peer is only slow",
                    what, timeout_s);
    zs_backoff_wait(&bo);
  }
}

/* Appends to the abandoned list; leaks on OOM (freeing a pending request is not allowed). */
void zs_mpi_pending_add(zs_mpi_pending *p, MPI_Request req, void *owned) {
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 4;
    zs_mpi_abandoned *v = realloc(p->v, (size_t)cap * sizeof *v);
    if (!v) return;
    p->v = v;
    p->cap = cap;
  }
  p->v[p->n].req = req;
  p->v[p->n].owned = owned;
  p->n++;
}

/* Bounded completion of abandoned requests; returns the number still stuck (leaked). */
int zs_mpi_pending_drain(zs_mpi_pending *p, double max_s) {
  double deadline = zs_clock_now_s() + max_s;
  zs_backoff bo;
  zs_backoff_init(&bo);
  while (p->n > 0) {
    for (int i = 0; i < p->n;) {
      int done = 0;
      int rc = MPI_Test(&p->v[i].req, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS || done) {
        /* On error the request is finished too (MPI gave up on it): its buffer is free again. */
        free(p->v[i].owned);
        p->v[i] = p->v[--p->n];
      } else {
        i++;
      }
    }
    if (p->n == 0 || zs_clock_now_s() > deadline) break;
    zs_backoff_wait(&bo);
  }
  int left = p->n;
  leaked += left;
  if (left == 0) {
    free(p->v);
    p->v = NULL;
    p->cap = 0;
  }
  /* Still pending: the array and buffers are leaked on purpose (MPI may still write into them). */
  return left;
}
