/* The master's precision modes (master_mode.h), indexed by zs_config.master. */
#include "base/master_mode.h"

static const zs_master_mode modes[] = {
    [ZS_MASTER_FP32] = {"master fp32 copy", 0, 0, 0, 4},
    [ZS_MASTER_PARAMS] = {"master params (the fp32 params)", 1, 0, 0, 4},
    [ZS_MASTER_REMAINDER] = {"remainder master (bf16 params + 16-bit remainder)", 0, 0, 1, 2},
    [ZS_MASTER_LEAN] = {"master lean (the bf16 params, stochastic rounding)", 1, 1, 0, 0},
};

const zs_master_mode *zs_master_mode_of(int m) {
  return m >= 0 && m < (int)(sizeof modes / sizeof modes[0]) ? &modes[m] : &modes[0];
}
