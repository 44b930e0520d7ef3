/* Internal to src/comm: the MPI datatype and reduction op for bf16 sums. */
#ifndef ZS_COMM_MPI_OPS_H
#define ZS_COMM_MPI_OPS_H

#include <mpi.h>

#include "zshard.h"

/* Creates a committed 2-byte datatype and a commutative sum op on it that adds in float and rounds
   to nearest even. Both are MPI_DATATYPE_NULL / MPI_OP_NULL on failure. */
zs_status zs_mpi_bf16_create(MPI_Datatype *type, MPI_Op *op);
/* Frees what zs_mpi_bf16_create made (NULL handles are skipped). */
void zs_mpi_bf16_free(MPI_Datatype *type, MPI_Op *op);

#endif
