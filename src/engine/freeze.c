/* Frozen units: zs_unit_freeze and zs_unit_is_frozen (the table side is src/shard/frozen.h). */
#include "engine/engine_internal.h"
#include "base/error.h"

zs_status zs_unit_freeze(zs_unit *u, int frozen) {
  if (!u) return zs_err(ZS_ERR_INVALID_ARG, "zs_unit_freeze: unit is NULL");
  if (u->e->state != ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE,
                  "zs_unit_freeze('%s') after zs_engine_commit: freeze units before commit "
                  "(the commit allocates what a trainable unit needs)",
                  u->name);
  u->frozen = frozen != 0;
  return ZS_OK;
}

int zs_unit_is_frozen(const zs_unit *u) {
  return u ? u->frozen : 0;
}
