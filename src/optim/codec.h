/* The master codec: an optimizer's fp32 update run in any precision mode. An optimizer module
 * without fused per-mode kernels stores its fp32 kernel at the head of its coefficients and takes
 * zs_codec_host_fn as its host_fn; each host update decodes a tile's master into fp32 (the fp32
 * array in place; the bf16 params joined with their remainders, ZS_MASTER_REMAINDER; the bf16
 * params widened, ZS_MASTER_LEAN), runs the kernel, and encodes the result back (the compute copy
 * rounded to nearest even; the split into params and remainders; lean mode's stochastic rounding
 * with the bits of optim/lean.h keyed by unit element). The tiles are elementwise, so the bits
 * depend on neither the pool, its size, nor the chunking. */
#ifndef ZS_OPTIM_CODEC_H
#define ZS_OPTIM_CODEC_H

#include <stddef.h>

#include "optim/optimizer.h"

/* An optimizer's fp32 kernel: n elements of the master p (fp32, updated in place) from the fp32
   gradient g, with its state arrays state[i] (dtype sdt, element 0 = p's element 0). */
typedef void (*zs_codec_kernel)(const void *coef, float *p, void *const *state, zs_dtype sdt,
                                const float *g, size_t n);

/* A codec module's coefficients begin with this: its prepare stores its kernel there, and the
   host updates zs_codec_host_fn hands out run it. */
typedef struct {
  zs_codec_kernel kernel;
} zs_codec_coef;

/* The host update of mode m (zs_opt_host_fn's contract) that runs the kernel of the coefficients
   it is given (zs_codec_coef) through the codec: every master mode with fp32 or bf16 state. A
   module's host_fn. */
zs_status zs_codec_host_fn(const zs_opt_mode *m, zs_opt_host_fn *out);

#endif
