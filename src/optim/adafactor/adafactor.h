/* Adafactor (N. Shazeer and M. Stern, "Adafactor: Adaptive Learning Rates with Sublinear Memory
 * Cost", 2018; torch.optim.Adafactor's semantics) as an optimizer module (docs/OPTIMIZER.md §3):
 * factored second moments (a row and a column statistic per matrix, packed into its state), the
 * relative step and update clipping, which need each tensor whole (optimizer.h: gather, whole,
 * store). Its state: variance. The fp32 and params master modes; the CPU and CUDA devices. */
#ifndef ZS_OPTIM_ADAFACTOR_ADAFACTOR_H
#define ZS_OPTIM_ADAFACTOR_ADAFACTOR_H

#include "optim/optimizer.h"

/* Its registry entry (base/opt_shape.h). */
extern const zs_opt_entry zs_opt_adafactor;

#endif
