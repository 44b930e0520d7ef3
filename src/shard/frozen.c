/* Frozen units (frozen.h). */
#include "shard/frozen.h"

void zs_state_table_freeze(zs_state_table *t) {
  static const zs_state gone[] = {ZS_ST_GRAD_FULL, ZS_ST_GRAD_SHARD, ZS_ST_GRAD_STAGE, ZS_ST_MASTER,
                                  ZS_ST_OPT0,      ZS_ST_OPT1,       ZS_ST_MASTER_REM};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
    t->s[gone[i]].life = ZS_LIFE_NONE;
}
