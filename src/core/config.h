/* Config validation (zs_config_default is public). */
#ifndef ZS_CORE_CONFIG_H
#define ZS_CORE_CONFIG_H

#include <stddef.h>

#include "zshard.h"

/* Checks every field that does not depend on the world size; returns ZS_ERR_INVALID_ARG with a
   sentence naming the field and the fix. */
zs_status zs_config_validate(const zs_config *c);
/* Unsigned integer environment override (e.g. a byte count), or dflt when unset or malformed. */
size_t zs_env_size(const char *name, size_t dflt);

#endif
