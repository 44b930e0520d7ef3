/* Config validation (zs_config_default is public). */
#ifndef ZS_CORE_CONFIG_H
#define ZS_CORE_CONFIG_H

#include <stddef.h>

#include "zshard.h"

/* Checks every field that does not depend on the world size; returns ZS_ERR_INVALID_ARG with a
   sentence naming the field and the fix. */
zs_status zs_config_validate(const zs_config *c);
/* `in` as this library's struct: an older, smaller caller struct completed with defaults; no
   environment variables. */
void zs_config_complete(const zs_config *in, zs_config *out);
/* The config the engine runs with: `in` (an older, smaller caller struct is completed with
   defaults) with every tunable left at its default replaced by its environment variable.
   sources (n bytes, may be NULL) receives "field=value (origin), ..." for zs_engine_info.
   ZS_ERR_INVALID_ARG names a variable that does not parse or is out of range. */
zs_status zs_config_resolve(const zs_config *in, zs_config *out, char *sources, size_t n);

#endif
