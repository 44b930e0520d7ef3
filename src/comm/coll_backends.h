/* Internal to src/comm: the backends' constructors, for the dispatcher (coll.c) that picks one,
 * and for the wrapper backend that opens the one it calls down to. Backends themselves include
 * coll_impl.h, never this. */
#ifndef ZS_COMM_COLL_BACKENDS_H
#define ZS_COMM_COLL_BACKENDS_H

#include "comm/coll_impl.h"

/* Each opens the world group of comm for device (collective over comm); ZS_ERR_* with the
   reason, *out untouched on failure. */
zs_status zs_self_open(zs_comm *comm, zs_device device, double timeout_s, zs_coll **out);
/* Host memory only (device ZS_DEVICE_CPU); needs zs_comm_init_mpi. */
zs_status zs_mpi_open(zs_comm *comm, zs_device device, double timeout_s, zs_coll **out);
#ifdef ZS_HAVE_CUDA
zs_status zs_nccl_open(zs_comm *comm, double timeout_s, zs_coll **out);
/* "mpi-staged": device buffers through pinned host copies, on top of an mpi group it opens. */
zs_status zs_mpi_staged_open(zs_comm *comm, double timeout_s, zs_coll **out);
#endif

#endif
