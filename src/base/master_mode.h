/* The precision modes of the master (zs_config.master) as pure data: what each keeps and how
 * many bytes its own array takes. The state table, the planner and the engine's facts read the
 * mode from this alone; reading and writing the master is the codec's (src/tier/master_io.h) and
 * updating it the optimizer's (src/optim/codec.h). */
#ifndef ZS_BASE_MASTER_MODE_H
#define ZS_BASE_MASTER_MODE_H

#include "zshard.h"

typedef struct {
  const char *words; /* in zs_engine_info: "master fp32 copy" */
  int params_master; /* the params are the master where they live with the optimizer state */
  int lean;          /* the bf16 params are the master on every tier (stochastic rounding) */
  int remainder;     /* a 16-bit remainder completes the bf16 params to the fp32 master */
  int master_bytes;  /* bytes per element of the master's own array: 4, 2 (remainders), 0 */
} zs_master_mode;

/* The mode of zs_config.master m; ZS_MASTER_FP32's for an unknown m (zs_config_validate refuses
   it). */
const zs_master_mode *zs_master_mode_of(int m);

#endif
