/* The head of a codec module's coefficients (codec.h): its fp32 kernel. Apart so that the
 * modules' CUDA twins, which are C++, can see the coefficients' layout without the driver's
 * headers. */
#ifndef ZS_OPTIM_CODEC_COEF_H
#define ZS_OPTIM_CODEC_COEF_H

#include <stddef.h>

#include "zshard.h"

/* An optimizer's fp32 kernel: n elements of the master p (fp32, updated in place) from the fp32
   gradient g, with its state arrays state[i] (dtype sdt, element 0 = p's element 0). */
typedef void (*zs_codec_kernel)(const void *coef, float *p, void *const *state, zs_dtype sdt,
                                const float *g, size_t n);

/* A codec module's coefficients begin with this: its prepare stores its kernel there, and the
   host updates zs_codec_host_fn hands out run it (the CUDA codec ignores it). */
typedef struct {
  zs_codec_kernel kernel;
} zs_codec_coef;

#endif
