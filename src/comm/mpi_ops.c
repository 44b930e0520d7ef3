/* bf16 sum for MPI: MPI has no bfloat16, so a user op adds pairs in float and rounds back. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "comm/mpi_ops.h"
#include "comm/mpi_wait.h"
#include "base/error.h"
#include "base/bf16.h"

/* inout[i] = bf16(float(in[i]) + float(inout[i])), i < *len (elements of our 2-byte type). */
static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *len; i++)
    b[i] = zs_f32_to_bf16(zs_bf16_to_f32(a[i]) + zs_bf16_to_f32(b[i]));
}

/* Type + op; on failure frees whatever was made. */
zs_status zs_mpi_bf16_create(MPI_Datatype *type, MPI_Op *op) {
  char msg[MPI_MAX_ERROR_STRING + 16];
  *type = MPI_DATATYPE_NULL;
  *op = MPI_OP_NULL;
  int rc = MPI_Type_contiguous(2, MPI_BYTE, type);
  if (rc == MPI_SUCCESS) rc = MPI_Type_commit(type);
  if (rc == MPI_SUCCESS) rc = MPI_Op_create(bf16_sum, 1, op);
  if (rc != MPI_SUCCESS) {
    zs_mpi_bf16_free(type, op);
    return zs_err(ZS_ERR_COMM, "creating the MPI bf16 sum failed: %s: check the MPI installation",
                  zs_mpi_errstr(rc, msg, sizeof msg));
  }
  return ZS_OK;
}

/* Frees type and op if they exist. */
void zs_mpi_bf16_free(MPI_Datatype *type, MPI_Op *op) {
  if (*op != MPI_OP_NULL) MPI_Op_free(op);
  if (*type != MPI_DATATYPE_NULL) MPI_Type_free(type);
  *op = MPI_OP_NULL;
  *type = MPI_DATATYPE_NULL;
}
