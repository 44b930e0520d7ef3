/* Adafactor on the CUDA device (adafactor_cuda.cu): adafactor.c's gather, store and update bit for
 * bit, and its whole step with the same float operations in the same order but its double sums
 * (the RMS of the master and of U, the rows' and columns' means of G^2, the mean of R) in fixed
 * orders instead of element order: the CPU's values to the last bits of those sums, and the same
 * bits whatever the rank, split or GPU. Everything is device memory, queued on stream. */
#ifndef ZS_OPTIM_ADAFACTOR_ADAFACTOR_CUDA_H
#define ZS_OPTIM_ADAFACTOR_ADAFACTOR_CUDA_H

#include <stdint.h>

#include "optim/adafactor/adafactor_coef.h"
#include "optim/codec_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The gather of n elements: in[0] the scaled gradient, in[1] the master, in[2] the state (state
   NULL: a tail the tensor keeps no state for, in[2] left as it is: zeros). */
zs_status zs_adafactor_cuda_gather(const zs_adafactor_coef *c, const float *master,
                                   const void *state, int s_bf16, const void *grad, zs_dtype gdt,
                                   float *const *in, size_t n, void *stream);
/* The whole step of one tensor (rows x cols) on its channels ch (0, 1, 2) with work (adafactor.c's
   work_floats): ch[0] becomes the update, ch[1] the new state, -0 made +0. */
zs_status zs_adafactor_cuda_whole(const zs_adafactor_coef *c, float *const *ch, int64_t rows,
                                  int64_t cols, float *work, void *stream);
/* The store of n elements of out[1] into state (NULL: nothing). */
zs_status zs_adafactor_cuda_store(void *state, int s_bf16, const float *const *out, size_t n,
                                  void *stream);
/* The update of a (its gradient: the whole step's update). */
zs_status zs_adafactor_cuda_update(const void *coef, const zs_codec_dev *a);

#ifdef __cplusplus
}
#endif

#endif
