/* The public zs_comm accessors and its destruction (both bootstraps). */
#include <stdlib.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "comm/backoff.h"
#include "base/config.h"
#include "base/error.h"
#include "comm/mpi_ops.h"

/* ZS_COMM_TIMEOUT_S when it is a positive number, else 300 s. */
double zs_boot_timeout_default(void) {
  const char *s = zs_env("ZS_COMM_TIMEOUT_S");
  if (s && *s) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end && *end == '\0' && v > 0 && v < 1e9) return v;
  }
  return 300.0;
}

int zs_comm_rank(const zs_comm *c) {
  return c ? c->rank : -1;
}
int zs_comm_size(const zs_comm *c) {
  return c ? c->size : -1;
}

/* Releases MPI handles / rendezvous sockets, and finalises MPI if zs_comm_init_mpi started it
   (unless a timed-out request had to be leaked, see zs_mpi_leaked_requests). Every coll opened
   from c must be destroyed first. */
void zs_comm_destroy(zs_comm *c) {
  if (!c) return;
  zs_comm_impl *ci = c->impl;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (ci) {
    zs_rdv_close(ci->rdv);
    if (!finalized) {
      if (ci->pending.n > 0) zs_mpi_pending_drain(&ci->pending, zs_drain_seconds());
      zs_mpi_bf16_free(&ci->bf16_type, &ci->bf16_sum);
      if (ci->world != MPI_COMM_NULL) MPI_Comm_free(&ci->world);
      if (ci->world_errh_held) zs_mpi_world_errhandler_release();
    }
    free(ci);
  }
  /* With a request stuck on a dead peer, MPI_Finalize could wait forever: skip it (never hang). */
  if (c->mpi_initialized_here && !finalized && zs_mpi_leaked_requests() == 0) MPI_Finalize();
  free(c);
}

int zs_comm_launcher_gone(const zs_comm *c) {
  return c && c->launcher_pid > 1 && getppid() != (pid_t)c->launcher_pid;
}
