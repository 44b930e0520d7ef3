/* AdamW (torch.optim.AdamW's semantics; docs/OPTIMIZER.md §3) as an optimizer module. Its state:
 * exp_avg (m) and exp_avg_sq (v), in zs_config.moment_dtype. Every precision mode. */
#ifndef ZS_OPTIM_ADAMW_ADAMW_H
#define ZS_OPTIM_ADAMW_ADAMW_H

#include "optim/optimizer.h"

/* Its registry entry (base/opt_shape.h). */
extern const zs_opt_entry zs_opt_adamw;

#endif
