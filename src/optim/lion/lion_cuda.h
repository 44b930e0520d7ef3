/* Lion on the CUDA device (lion_cuda.cu): the update of lion.c's kernel through the CUDA codec,
 * bit-identical to the CPU's in every precision mode. Queued on a->stream. */
#ifndef ZS_OPTIM_LION_LION_CUDA_H
#define ZS_OPTIM_LION_LION_CUDA_H

#include "optim/codec_dev.h"
#include "optim/lion/lion_coef.h"

#ifdef __cplusplus
extern "C" {
#endif

zs_status zs_lion_cuda(const void *coef, const zs_codec_dev *a);

#ifdef __cplusplus
}
#endif

#endif
