/* Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms", 2023) as an optimizer module
 * (docs/OPTIMIZER.md §3): the sign of an interpolation of the momentum and the gradient, decoupled
 * weight decay. Its state: exp_avg. Every precision mode, through the master codec
 * (optim/codec.h); the CPU and CUDA devices (lion_cuda.h). */
#ifndef ZS_OPTIM_LION_LION_H
#define ZS_OPTIM_LION_LION_H

#include "optim/optimizer.h"

/* Its registry entry (base/opt_shape.h). */
extern const zs_opt_entry zs_opt_lion;

#endif
