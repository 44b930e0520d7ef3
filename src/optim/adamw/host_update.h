/* The host tier's AdamW, one function per optimizer-state precision mode (zs_config.master and
 * zs_config.moment_dtype): the optimizer chooses it once, when it is created
 * (zs_host_update_for), and every update of state in host memory (the offload arena, or the CPU
 * device's own memory) runs it, whole or chunk by chunk (the CUDA copy pipeline, pipeline.h). A
 * new mode is one more case of zs_host_update_for and, where its state differs, one more field of
 * zs_host_state. The bits never depend on the pool or the chunking: the update is elementwise. */
#ifndef ZS_OPTIM_ADAMW_HOST_UPDATE_H
#define ZS_OPTIM_ADAMW_HOST_UPDATE_H

#include <stddef.h>

#include "optim/adamw/cpu/adamw.h"
#include "optim/lean.h"
#include "offload/worker_pool.h"
#include "zshard.h"

/* One segment's optimizer state in host memory, element 0 = the segment's first element. */
typedef struct {
  float *master; /* the fp32 master: its own array, or the fp32 params that are it
                    (ZS_MASTER_PARAMS where they live with the moments); NULL in the modes whose
                    bf16 params are (part of) the master (ZS_MASTER_REMAINDER, ZS_MASTER_LEAN) */
  void *m, *v;   /* AdamW's moments, in the mode's dtype (fp32, or bf16 rounded to nearest even) */
  uint16_t *rem; /* ZS_MASTER_REMAINDER: the 16-bit remainders (base/bf16_rem.h); else unused */
  zs_lean_key key; /* ZS_MASTER_LEAN: the rounding's key (optim/lean.h) whose elem0 is the unit
                      element of the segment's element 0; else unused */
} zs_host_state;

/* Updates elements [lo, lo + len) of s: grad (gdt) and out (pdt) are host memory whose element 0
   is element lo; the updated params go to out, or nowhere when out is NULL (the master is the
   params, updated in place). In the modes whose bf16 params are the master
   (zs_host_update_reads_params) out is those params, read and written in place (never NULL) and
   grad is bf16. Over pool's workers (NULL: the calling thread). */
typedef void (*zs_host_update_fn)(zs_pool *pool, const zs_adamw_coef *c, const zs_host_state *s,
                                  size_t lo, size_t len, const void *grad, zs_dtype gdt, void *out,
                                  zs_dtype pdt);

/* The update of the mode (master: zs_config.master, moment_dt: zs_config.moment_dtype) into *out.
   ZS_ERR_INVALID_ARG, with the sentence, for a mode the host tier does not run. */
zs_status zs_host_update_for(int master, zs_dtype moment_dt, zs_host_update_fn *out);

/* Whether the mode's update reads the bf16 params as (part of) its master (ZS_MASTER_REMAINDER,
   ZS_MASTER_LEAN): then whoever stages the params must bring their current values in, not only
   take the new ones out (the CUDA copy pipeline, pipeline.h). */
static inline int zs_host_update_reads_params(int master) {
  return master == ZS_MASTER_REMAINDER || master == ZS_MASTER_LEAN;
}

#endif
