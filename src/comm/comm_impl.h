/* Internal to src/comm: what a zs_comm's impl points to. MPI is always linked (the CPU multi-rank
 * path needs it), so the MPI types appear here even for communicators bootstrapped from env. */
#ifndef ZS_COMM_COMM_IMPL_H
#define ZS_COMM_COMM_IMPL_H

#include <mpi.h>

#include "comm/comm.h"
#include "comm/mpi_wait.h"
#include "comm/rendezvous.h"

typedef struct zs_comm_impl {
  /* zs_comm_init_mpi */
  MPI_Comm world;         /* dup of MPI_COMM_WORLD, errors return; MPI_COMM_NULL when from env */
  MPI_Datatype bf16_type; /* 2-byte contiguous type the bf16 sum is defined on */
  MPI_Op bf16_sum;        /* float-accumulating, round-to-nearest-even bf16 sum */
  zs_mpi_pending pending; /* bootstrap requests that timed out (drained at destroy) */
  /* This comm counts in MPI_COMM_WORLD's handler replacement (mpi_wait.h: MPI's fatal default
     becomes MPI_ERRORS_RETURN while a comm lives; Open MPI reports some failed requests of other
     communicators there); released by zs_comm_destroy. */
  int world_errh_held;
  /* zs_comm_init_env */
  char master_addr[256];
  int master_port;
  double boot_timeout_s; /* bound on the TCP rendezvous and on zs_comm_allreduce
                            (ZS_COMM_TIMEOUT_S, default 300 s; zs_comm_set_timeout) */
  zs_rdv *rdv; /* opened lazily by the first CUDA coll or zs_comm_allreduce when size > 1 */
  /* Both bootstraps */
  int host_broken;   /* a zs_comm_allreduce failed mid-way: the ranks' streams of calls disagree */
  unsigned host_seq; /* zs_comm_allreduce calls so far (tags the env path's messages) */
  /* nccl.c's list of this comm's live nccl groups: a wait reads every one's divergence check
     (a group's stuck collective blocks a stream the others wait on too). So a comm's nccl groups
     are used by one thread at a time, as an engine uses its groups. */
  void *nccl_groups;
} zs_comm_impl;

/* Default bound of bootstrap waits: ZS_COMM_TIMEOUT_S when set and valid, else 300 s. */
double zs_boot_timeout_default(void);

#endif
