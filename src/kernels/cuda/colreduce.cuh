/* Deterministic column sums over N rows (bias, layernorm and RMSNorm weight gradients). Internal.
 */
#ifndef ZS_KERNELS_CUDA_COLREDUCE_CUH
#define ZS_KERNELS_CUDA_COLREDUCE_CUH

#include "kctx.cuh"

/* dsum[c] += sum_r dout[r, c]; when dsum_n != NULL also dsum_n[c] += sum_r dout[r, c] * n[r, c]
   with n = (inp - mean[r]) * rstd[r] (the normalised layernorm input). Rows are cut into a fixed
   number of slices (a function of N and C only), each slice summed into the context's scratch,
   then the slices are added in order: the same bits on every run. dsum/dsum_n and dout are in the
   context's dtype. dsum may be NULL (only dsum_n is wanted) and mean may be NULL (taken as 0:
   the RMSNorm weight gradient, n = inp * rrms). */
zs_status zs_cuda_colreduce(zs_cuda_kctx *k, void *dsum, void *dsum_n, const void *dout,
                            const void *inp, const float *mean, const float *rstd, int N, int C);

#endif
