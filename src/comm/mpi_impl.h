/* Internal to src/comm: the MPI backend's state and its host-memory operations, which the
 * CUDA staging path (mpi_staging_cuda.c) reuses on pinned host copies of device buffers. */
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
  void *stage;            /* pinned host staging buffer for device memory (CUDA builds) */
  size_t stage_bytes;
} zs_mpi_coll;

/* Host-memory collectives with the in-place rules of comm.h; they wait with c's timeout. */
zs_status zs_mpi_host_all_gather(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt);
zs_status zs_mpi_host_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count,
                                     zs_cdt dt);
zs_status zs_mpi_host_all_reduce(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt);
zs_status zs_mpi_host_all_to_all(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt);
zs_status zs_mpi_host_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root);

#ifdef ZS_HAVE_CUDA
/* Device-buffer versions: device -> pinned host on `stream`, MPI on the host copy, back. */
zs_status zs_mpi_staged_all_gather(zs_coll *c, const void *send, void *recv, size_t count,
                                   zs_cdt dt, void *stream);
zs_status zs_mpi_staged_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count,
                                       zs_cdt dt, void *stream);
zs_status zs_mpi_staged_all_reduce(zs_coll *c, const void *send, void *recv, size_t count,
                                   zs_cdt dt, void *stream);
zs_status zs_mpi_staged_all_to_all(zs_coll *c, const void *send, void *recv, size_t count,
                                   zs_cdt dt, void *stream);
zs_status zs_mpi_staged_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root,
                                  void *stream);
/* Frees the pinned staging buffer. */
void zs_mpi_stage_free(zs_mpi_coll *m);
#endif

#endif
