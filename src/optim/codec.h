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

#include "optim/codec_coef.h"
#include "optim/codec_dev.h"
#include "optim/optimizer.h"

/* The host update of mode m (zs_opt_host_fn's contract) that runs the kernel of the coefficients
   it is given (zs_codec_coef) through the codec: every master mode with fp32 or bf16 state. A
   module's host_fn. */
zs_status zs_codec_host_fn(const zs_opt_mode *m, zs_opt_host_fn *out);

/* The device update's arguments (zs_optimizer.dev_update's) as the CUDA codec takes them. */
zs_codec_dev zs_codec_dev_of(const zs_opt_mode *m, const zs_opt_state *s, const void *grad,
                             zs_dtype gdt, void *param, zs_dtype pdt, size_t n, void *stream);

#endif
