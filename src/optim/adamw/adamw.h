/* AdamW (torch.optim.AdamW's semantics; docs/OPTIMIZER.md §3) as an optimizer module. Its state:
 * exp_avg (m) and exp_avg_sq (v), in zs_config.moment_dtype. Every precision mode. */
#ifndef ZS_OPTIM_ADAMW_ADAMW_H
#define ZS_OPTIM_ADAMW_ADAMW_H

#include "optim/optimizer.h"

/* The module (static; never NULL). */
const zs_optimizer *zs_optimizer_adamw(void);

#endif
