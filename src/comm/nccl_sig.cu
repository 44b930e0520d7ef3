/* The nccl divergence check's two kernels (nccl_sig_kernels.h): one thread each, a few hundred
 * words. */
#include <cuda_runtime.h>

#include "comm/nccl_sig_kernels.h"

__global__ void nsig_put(uint64_t *row, zs_nsig_row h, int nw) {
  for (int i = 0; i < nw; i++)
    row[i] = h.w[i];
}

/* The body first, then a system-wide fence, then `done`: the host reads done before the rest. */
__global__ void nsig_compare(const uint64_t *rows, int size, int rank, int nw, int ncmp,
                             zs_nsig_verdict *v, uint64_t done) {
  const uint64_t *mine = rows + (size_t)rank * nw;
  int64_t q = -1;
  for (int r = 0; r < size && q < 0; r++) {
    if (r == rank) continue;
    for (int i = 0; i < ncmp; i++)
      if (rows[(size_t)r * nw + i] != mine[i]) {
        q = r;
        break;
      }
  }
  if (q >= 0)
    for (int i = 0; i < nw; i++)
      v->theirs[i] = rows[(size_t)q * nw + i];
  v->q = q;
  __threadfence_system();
  *(volatile uint64_t *)&v->done = done;
}

extern "C" int zs_nsig_put(uint64_t *row, zs_nsig_row h, int nw, void *stream) {
  nsig_put<<<1, 1, 0, (cudaStream_t)stream>>>(row, h, nw);
  return (int)cudaGetLastError();
}

extern "C" int zs_nsig_compare(const uint64_t *rows, int size, int rank, int nw, int ncmp,
                               zs_nsig_verdict *v, uint64_t done, void *stream) {
  nsig_compare<<<1, 1, 0, (cudaStream_t)stream>>>(rows, size, rank, nw, ncmp, v, done);
  return (int)cudaGetLastError();
}
