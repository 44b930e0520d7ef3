/* zs_comm_init_mpi: the bootstrap for mpirun/srun launches. */
#include <stdlib.h>

#include "comm/comm_impl.h"
#include "comm/mpi_ops.h"
#include "base/error.h"

/* Local rank and size: ranks sharing this host's memory (MPI_COMM_TYPE_SHARED). */
static zs_status local_ranks(MPI_Comm world, int *lrank, int *lsize) {
  char msg[MPI_MAX_ERROR_STRING + 16];
  MPI_Comm node = MPI_COMM_NULL;
  int r = MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (r == MPI_SUCCESS) r = MPI_Comm_rank(node, lrank);
  if (r == MPI_SUCCESS) r = MPI_Comm_size(node, lsize);
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  if (r != MPI_SUCCESS)
    return zs_err(ZS_ERR_COMM, "finding the ranks of this host (MPI_Comm_split_type) failed: %s",
                  zs_mpi_errstr(r, msg, sizeof msg));
  return ZS_OK;
}

/* Initialises MPI when needed (then finalised by zs_comm_destroy) and dups the world. */
zs_status zs_comm_init_mpi(int *argc, char ***argv, zs_comm **out) {
  char msg[MPI_MAX_ERROR_STRING + 16];
  zs_status rc = ZS_OK;
  zs_comm *c = NULL;
  zs_comm_impl *ci = NULL;
  int inited = 0, finalized = 0, here = 0, r;
  if (!out) return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_init_mpi: out must not be NULL");
  *out = NULL;
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
  r = MPI_Comm_dup(MPI_COMM_WORLD, &ci->world);
  if (r != MPI_SUCCESS) {
    rc = zs_err(ZS_ERR_COMM, "MPI_Comm_dup(MPI_COMM_WORLD) failed: %s",
                zs_mpi_errstr(r, msg, sizeof msg));
    goto fail;
  }
  MPI_Comm_set_errhandler(ci->world, MPI_ERRORS_RETURN);
  MPI_Comm_rank(ci->world, &c->rank);
  MPI_Comm_size(ci->world, &c->size);
  ZS_CHECK_GOTO(local_ranks(ci->world, &c->local_rank, &c->local_size), rc, fail);
  ZS_CHECK_GOTO(zs_mpi_bf16_create(&ci->bf16_type, &ci->bf16_sum), rc, fail);
  ci->boot_timeout_s = zs_boot_timeout_default();
  c->mpi_initialized_here = here;
  c->from_env = 0;
  c->impl = ci;
  *out = c;
  return ZS_OK;
fail:
  if (ci) {
    zs_mpi_bf16_free(&ci->bf16_type, &ci->bf16_sum);
    if (ci->world != MPI_COMM_NULL) MPI_Comm_free(&ci->world);
    if (ci->world_errh_held) zs_mpi_world_errhandler_release();
  }
  free(ci);
  free(c);
  if (here) MPI_Finalize();
  return rc;
}
