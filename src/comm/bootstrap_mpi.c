/* zs_comm_init_mpi: the bootstrap for mpirun/srun launches.
 *
 * Every wait on the other ranks is bounded by ZS_COMM_TIMEOUT_S (else 300 s; there is no engine
 * config yet): MPI_COMM_WORLD is duplicated with MPI_Comm_idup, and the blocking
 * MPI_Comm_split_type (no nonblocking twin) is entered only after a timed MPI_Ibarrier on the new
 * communicator has seen every rank arrive (mpi.c's v_split guards MPI_Comm_split the same way).
 * Both are polled with zs_mpi_wait (sleeping back-off), so a rank that never comes gives
 * ZS_ERR_TIMEOUT, never a hang at 100% CPU. What stays outside: MPI_Init_thread itself, and a
 * rank that dies in the instant between the guard and MPI_Comm_split_type. */
#include <stdlib.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "comm/mpi_ops.h"
#include "base/config.h"
#include "base/error.h"

/* Requests a timed-out zs_comm_init_mpi had to abandon (MPI forbids freeing a pending collective),
   kept reachable here for the life of the process, and whether one timed out: MPI_COMM_WORLD's
   collectives then no longer line up across the ranks, so later calls are refused. MPI is used
   from one thread (MPI_THREAD_FUNNELED). */
static zs_mpi_pending abandoned;
static int timed_out;

/* Waits for one start-up request against timeout_s. On a timeout the request is kept (with owned,
   the buffer it may still write) and counted as leaked, so that no zs_comm_destroy finalises MPI
   (that could wait for the missing rank forever); the message names the step, the bound, the
   likely cause (why) and what to do. */
static zs_status boot_wait(MPI_Request *req, void *owned, double timeout_s, const char *step,
                           const char *why) {
  zs_status rc = zs_mpi_wait(req, timeout_s, step);
  if (rc == ZS_ERR_COMM) return zs_err_wrap(rc, "zs_comm_init_mpi");
  if (rc != ZS_ERR_TIMEOUT) return rc;
  zs_mpi_pending_add(&abandoned, *req, owned);
  zs_mpi_pending_drain(&abandoned, 0.0); /* one test: counts it in zs_mpi_leaked_requests */
  timed_out = 1;
  int rank = -1, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return zs_err(ZS_ERR_TIMEOUT,
                "zs_comm_init_mpi (rank %d of %d): %s timed out after %.1f s: %s; end the job "
                "and check the other ranks' output (zshard does not finalise MPI now: MPI_Finalize "
                "could wait for that rank forever), or raise ZS_COMM_TIMEOUT_S if a rank is only "
                "slow to start",
                rank, size, step, timeout_s, why);
}

/* Duplicates MPI_COMM_WORLD with MPI_Comm_idup, bounded by timeout_s. */
static zs_status dup_world(double timeout_s, MPI_Comm *out) {
  char msg[MPI_MAX_ERROR_STRING + 16];
  /* MPI writes the handle when the dup completes: heap memory, so a timed-out dup can be
     abandoned safely (as in zs_mpi_open). */
  MPI_Comm *mc = malloc(sizeof *mc);
  if (!mc) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory creating the communicator");
  *mc = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Comm_idup(MPI_COMM_WORLD, mc, &req);
  if (r != MPI_SUCCESS) {
    free(mc);
    return zs_err(ZS_ERR_COMM, "zs_comm_init_mpi: MPI_Comm_idup(MPI_COMM_WORLD) failed: %s",
                  zs_mpi_errstr(r, msg, sizeof msg));
  }
  zs_status rc = boot_wait(&req, mc, timeout_s, "duplicating MPI_COMM_WORLD (MPI_Comm_idup)",
                           "a rank did not reach zs_comm_init_mpi (it was not started, crashed, "
                           "or is stuck or slow before it)");
  if (rc == ZS_ERR_TIMEOUT) return rc; /* mc stays with the abandoned request */
  *out = *mc;
  free(mc);
  return rc;
}

/* Local rank and size: ranks sharing this host's memory (MPI_COMM_TYPE_SHARED). A timed barrier
   first sees every rank arrive, so the blocking split cannot wait for a rank that gave up. */
static zs_status local_ranks(MPI_Comm world, double timeout_s, int *lrank, int *lsize) {
  char msg[MPI_MAX_ERROR_STRING + 16];
  MPI_Request req = MPI_REQUEST_NULL;
  int r = MPI_Ibarrier(world, &req);
  if (r != MPI_SUCCESS)
    return zs_err(ZS_ERR_COMM, "zs_comm_init_mpi: MPI_Ibarrier failed: %s",
                  zs_mpi_errstr(r, msg, sizeof msg));
  ZS_CHECK(boot_wait(&req, NULL, timeout_s,
                     "the arrival check before MPI_Comm_split_type (an MPI_Ibarrier)",
                     "a rank gave up on the duplication of MPI_COMM_WORLD (its own timeout ran "
                     "out first) or stopped inside zs_comm_init_mpi"));
  MPI_Comm node = MPI_COMM_NULL;
  r = MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (r == MPI_SUCCESS) r = MPI_Comm_rank(node, lrank);
  if (r == MPI_SUCCESS) r = MPI_Comm_size(node, lsize);
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  if (r != MPI_SUCCESS)
    return zs_err(ZS_ERR_COMM, "finding the ranks of this host (MPI_Comm_split_type) failed: %s",
                  zs_mpi_errstr(r, msg, sizeof msg));
  return ZS_OK;
}

/* Initialises MPI when needed (then finalised by zs_comm_destroy) and dups the world; every wait
   on the other ranks is bounded by ZS_COMM_TIMEOUT_S (see the top of this file). */
/* The launcher's pid: this process's parent when a launcher's variables say one started it (Open
   MPI, PMIx, PMI/MPICH Hydra, Slurm); 0 otherwise. */
static int launcher(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                     "SLURM_PROCID"};
  const pid_t p = getppid();
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (zs_env(vars[i]) && p > 1) return (int)p;
  return 0;
}

zs_status zs_comm_init_mpi(int *argc, char ***argv, zs_comm **out) {
  zs_status rc = ZS_OK;
  zs_comm *c = NULL;
  zs_comm_impl *ci = NULL;
  int inited = 0, finalized = 0, here = 0, r;
  if (!out) return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_init_mpi: out must not be NULL");
  *out = NULL;
  if (timed_out)
    return zs_err(ZS_ERR_STATE,
                  "zs_comm_init_mpi after an earlier one timed out in this process: the ranks' "
                  "collectives on MPI_COMM_WORLD no longer line up; end the job and start it "
                  "again (raise ZS_COMM_TIMEOUT_S if a rank is only slow to start)");
  MPI_Finalized(&finalized);
  if (finalized)
    return zs_err(ZS_ERR_STATE, "zs_comm_init_mpi after MPI_Finalize: MPI cannot be restarted, "
                                "create the communicator before finalising MPI");
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    r = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (r != MPI_SUCCESS)
      return zs_err(ZS_ERR_COMM,
                    "MPI_Init_thread failed (error %d): launch with mpirun/srun and "
                    "check the MPI installation",
                    r);
    here = 1;
  }
  const double timeout_s = zs_boot_timeout_default();
  c = calloc(1, sizeof *c);
  ci = calloc(1, sizeof *ci);
  if (!c || !ci) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory creating the communicator");
    goto fail;
  }
  ci->world = MPI_COMM_NULL;
  ci->bf16_type = MPI_DATATYPE_NULL;
  ci->bf16_sum = MPI_OP_NULL;
  /* Open MPI 4.1 reports a failed nonblocking collective of our own communicators (a truncated
     message) through MPI_COMM_WORLD's handler, fatal by default: errors must return instead
     (a handler the program installed is its choice and stays). */
  zs_mpi_world_errhandler_acquire();
  ci->world_errh_held = 1;
  ZS_CHECK_GOTO(dup_world(timeout_s, &ci->world), rc, fail);
  MPI_Comm_set_errhandler(ci->world, MPI_ERRORS_RETURN);
  MPI_Comm_rank(ci->world, &c->rank);
  MPI_Comm_size(ci->world, &c->size);
  ZS_CHECK_GOTO(local_ranks(ci->world, timeout_s, &c->local_rank, &c->local_size), rc, fail);
  ZS_CHECK_GOTO(zs_mpi_bf16_create(&ci->bf16_type, &ci->bf16_sum), rc, fail);
  ci->boot_timeout_s = timeout_s;
  c->mpi_initialized_here = here;
  c->from_env = 0;
  c->launcher_pid = launcher();
  c->impl = ci;
  *out = c;
  return ZS_OK;
fail:
  if (ci) {
    zs_mpi_bf16_free(&ci->bf16_type, &ci->bf16_sum);
    /* After a timeout the new communicator (if any) stays with the abandoned request. */
    if (ci->world != MPI_COMM_NULL && rc != ZS_ERR_TIMEOUT) MPI_Comm_free(&ci->world);
    if (ci->world_errh_held) zs_mpi_world_errhandler_release();
  }
  free(ci);
  free(c);
  /* After a timeout MPI_Finalize could wait for the missing rank forever: MPI stays initialised. */
  if (here && rc != ZS_ERR_TIMEOUT) MPI_Finalize();
  return rc;
}
