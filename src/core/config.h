/* Config validation (zs_config_default is public). */
#ifndef ZS_CORE_CONFIG_H
#define ZS_CORE_CONFIG_H

#include "zshard.h"

/* Checks every field that does not depend on the world size; returns ZS_ERR_INVALID_ARG with a
   sentence naming the field and the fix. */
zs_status zs_config_validate(const zs_config *c);

#endif
