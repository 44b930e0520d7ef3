/* The host tier's AdamW, one function per optimizer-state precision mode (zs_config.master and
 * zs_config.moment_dtype): the optimizer chooses it once, when it is created
 * (zs_host_update_for), and every update of state in host memory (the offload arena, or the CPU
 * device's own memory) runs it, whole or chunk by chunk (the CUDA copy pipeline, pipeline.h). c is
 * a zs_adamw_coef. The bits never depend on the pool or the chunking: the update is elementwise. */
#ifndef ZS_OPTIM_ADAMW_HOST_UPDATE_H
#define ZS_OPTIM_ADAMW_HOST_UPDATE_H

#include <stddef.h>

#include "optim/adamw/cpu/adamw.h"
#include "optim/optimizer.h"
#include "zshard.h"

/* The update of the mode (master: zs_config.master, moment_dt: zs_config.moment_dtype) into *out.
   ZS_ERR_INVALID_ARG, with the sentence, for a mode the host tier does not run. */
zs_status zs_host_update_for(int master, zs_dtype moment_dt, zs_opt_host_fn *out);

#endif
