/* The nccl divergence check's device side (nccl_sig.cu): the verdict layout and the two kernels
 * that nccl_sig.c queues. Plain C, callable from the C backend. */
#ifndef ZS_COMM_NCCL_SIG_KERNELS_H
#define ZS_COMM_NCCL_SIG_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZS_NSIG_MAXW 16 /* header words the kernels carry (ZS_SIG_WORDS fits) */

/* One header, by value into the kernel that writes it. */
typedef struct {
  uint64_t w[ZS_NSIG_MAXW];
} zs_nsig_row;

/* One collective's verdict, written by the device into mapped host memory: q (the first other
   rank whose header differs, -1 none) and that header, then `done` (the check's number + 1). */
typedef struct {
  int64_t q;
  uint64_t theirs[ZS_NSIG_MAXW];
  uint64_t done;
} zs_nsig_verdict;

/* Kernels (nccl_sig.cu), queued on stream; 0 or the cudaError_t of the launch. Writes h's first
   nw words to row. */
int zs_nsig_put(uint64_t *row, zs_nsig_row h, int nw, void *stream);
/* Compares the first ncmp words of every rank's row (nw words apart) with rank's own and writes
   the verdict to v (a device pointer to mapped host memory), `done` last. */
int zs_nsig_compare(const uint64_t *rows, int size, int rank, int nw, int ncmp, zs_nsig_verdict *v,
                    uint64_t done, void *stream);

#ifdef __cplusplus
}
#endif

#endif
