/* Internal to src/comm: polling waits on MPI requests against a deadline, and the list of requests
 * abandoned by a timeout (MPI forbids cancelling or freeing a pending nonblocking collective, so
 * they are kept, with any buffer they still write into, until destroy drains or leaks them). */
#ifndef ZS_COMM_MPI_WAIT_H
#define ZS_COMM_MPI_WAIT_H

#include <mpi.h>

#include "zshard.h"

typedef struct {
  MPI_Request req;
  void *owned; /* heap buffer the request may still write into (freed once complete), or NULL */
} zs_mpi_abandoned;

typedef struct {
  zs_mpi_abandoned *v;
  int n, cap;
} zs_mpi_pending;

/* Polls *req with MPI_Test, sleeping 50 us growing to 1 ms between tests, until it completes
   (ZS_OK), MPI reports an error (ZS_ERR_COMM, *req left as MPI set it), or timeout_s > 0 elapses
   (ZS_ERR_TIMEOUT, *req still pending: the caller must keep it). `what` names the operation. */
zs_status zs_mpi_wait(MPI_Request *req, double timeout_s, const char *what);
/* Keeps a timed-out request (and owned, freed with it). On allocation failure the request is
   leaked (never freed early). */
void zs_mpi_pending_add(zs_mpi_pending *p, MPI_Request req, void *owned);
/* Tests the kept requests for up to max_s seconds; frees those that completed (and their owned
   buffers). Returns how many are still pending (then leaked with their buffers). */
int zs_mpi_pending_drain(zs_mpi_pending *p, double max_s);
/* Requests leaked by drains so far in this process (then zs_comm_destroy skips MPI_Finalize, which
   would wait for the stuck peer forever; mpirun then reports the job as failed, which it is). */
int zs_mpi_leaked_requests(void);
/* Counts a zs_comm_init_mpi comm; the first replaces MPI_COMM_WORLD's handler by
   MPI_ERRORS_RETURN if it is MPI_ERRORS_ARE_FATAL (a handler of the program's is kept). */
void zs_mpi_world_errhandler_acquire(void);
/* Uncounts one; the last puts MPI_ERRORS_ARE_FATAL back if the first replaced it. */
void zs_mpi_world_errhandler_release(void);
/* MPI's text for an error code, in a static-free caller buffer. */
const char *zs_mpi_errstr(int code, char *buf, size_t len);

#endif
