/* The master codec: an optimizer's fp32 update run in any precision mode. An optimizer module
 * without fused per-mode kernels hands its fp32 kernel to zs_codec_host_update, which decodes each
 * tile's master into fp32 (the fp32 array in place; the bf16 params joined with their remainders,
 * ZS_MASTER_REMAINDER; the bf16 params widened, ZS_MASTER_LEAN), runs the kernel, and encodes the
 * result back (the compute copy rounded to nearest even; the split into params and remainders;
 * lean mode's stochastic rounding with the bits of optim/lean.h keyed by unit element). The tiles
 * are elementwise, so the bits depend on neither the pool, its size, nor the chunking. */
#ifndef ZS_OPTIM_CODEC_H
#define ZS_OPTIM_CODEC_H

#include <stddef.h>

#include "optim/optimizer.h"

/* An optimizer's fp32 kernel: n elements of the master p (fp32, updated in place) from the fp32
   gradient g, with its state arrays state[i] (dtype sdt, element 0 = p's element 0). */
typedef void (*zs_codec_kernel)(const void *coef, float *p, void *const *state, zs_dtype sdt,
                                const float *g, size_t n);

/* The host update (zs_opt_host_fn's contract) of mode m built from kernel k: elements
   [lo, lo + len) of s, grad and out as zs_opt_host_fn says, over pool's workers (NULL: the
   calling thread). */
void zs_codec_host_update(zs_pool *pool, zs_codec_kernel k, const zs_opt_mode *m, const void *coef,
                          const zs_opt_state *s, size_t lo, size_t len, const void *grad,
                          zs_dtype gdt, void *out, zs_dtype pdt);

#endif
