/* Internal to src/comm: the MPI backend's state and its host-memory operations. */
#ifndef ZS_COMM_MPI_IMPL_H
#define ZS_COMM_MPI_IMPL_H

#include <mpi.h>

#include "comm/coll_impl.h"
#include "comm/mpi_wait.h"

typedef struct {
  MPI_Comm comm;          /* owned; errors return instead of aborting */
  MPI_Datatype bf16;      /* borrowed from the zs_comm */
  MPI_Op bf16_sum;        /* borrowed from the zs_comm */
  zs_mpi_pending pending; /* requests a timeout abandoned, with the buffers they write into */
  MPI_Request sig_req;    /* the header exchange in flight (sig.c), or MPI_REQUEST_NULL */
} zs_mpi_coll;

/* Host-memory collectives with the in-place rules of comm.h; they wait with c's timeout. */
zs_status zs_mpi_host_all_gather(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt);
zs_status zs_mpi_host_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count,
                                     zs_cdt dt);
zs_status zs_mpi_host_all_reduce(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt);
zs_status zs_mpi_host_all_to_all(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt);
zs_status zs_mpi_host_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root);

#endif
