/* SGD with momentum as an optimizer module, torch.optim.SGD's semantics (docs/OPTIMIZER.md §3):
 * coupled weight decay, momentum with dampening (the first step's buffer is the gradient itself),
 * nesterov. Its state: momentum_buffer, only with momentum > 0. Every precision mode, through the
 * master codec (optim/codec.h); the CPU and CUDA devices (sgd_cuda.h). */
#ifndef ZS_OPTIM_SGD_SGD_H
#define ZS_OPTIM_SGD_SGD_H

#include "optim/optimizer.h"

/* Its registry entry (base/opt_shape.h). */
extern const zs_opt_entry zs_opt_sgd;

#endif
