/* Muon on the CUDA device (muon_cuda.cu): muon.c's gather (momentum and direction, bit-identical
 * to the CPU's), its whole step (Newton-Schulz through cuBLAS's fp32 GEMMs: the CPU's operations
 * in the same order, but the GEMMs' sums in cuBLAS's order, so close to the CPU's bits, not equal;
 * deterministic on one GPU type) and its update (the CUDA codec, bit-identical). Everything is
 * device memory, queued on stream. */
#ifndef ZS_OPTIM_MUON_MUON_CUDA_H
#define ZS_OPTIM_MUON_MUON_CUDA_H

#include <stdint.h>

#include "optim/codec_dev.h"
#include "optim/muon/muon_coef.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The gather: dir[i] from grad (gdt) and the momentum m (bf16 when m_bf16), m updated. */
zs_status zs_muon_cuda_gather(const zs_muon_coef *c, void *m, int m_bf16, const void *grad,
                              zs_dtype gdt, float *dir, size_t n, void *stream);
/* The whole step of x (rows x cols, row-major, in place) with work (muon.c's work_floats) and
   the cuBLAS handle blas (set to stream). */
zs_status zs_muon_cuda_whole(const zs_muon_coef *c, float *x, int64_t rows, int64_t cols,
                             float *work, void *blas, void *stream);
/* The update of a (its gradient: the whole step's direction). */
zs_status zs_muon_cuda_update(const void *coef, const zs_codec_dev *a);

#ifdef __cplusplus
}
#endif

#endif
