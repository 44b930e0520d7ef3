/* Config validation (zs_config_default is public). */
#ifndef ZS_BASE_CONFIG_H
#define ZS_BASE_CONFIG_H

#include <stddef.h>

#include "zshard.h"

/* Checks every field that does not depend on the world size; returns ZS_ERR_INVALID_ARG with a
   sentence naming the field and the fix. */
zs_status zs_config_validate(const zs_config *c);
/* `in` as this library's struct: an older, smaller caller struct completed with defaults, every
   tunable left unset given its default; no environment variables. ZS_ERR_INVALID_ARG for a
   struct zs_config_default did not fill (struct_size or struct_version 0). */
zs_status zs_config_complete(const zs_config *in, zs_config *out);
/* The config the engine runs with: `in` (completed as by zs_config_complete) with every tunable
   left unset given its environment variable when set, else its default.
   sources (n bytes, may be NULL) receives "field=value (origin), ..." for zs_engine_info.
   ZS_ERR_INVALID_ARG names a variable that does not parse or is out of range. */
zs_status zs_config_resolve(const zs_config *in, zs_config *out, char *sources, size_t n);
/* Room for the origins of every tunable field (a static assertion in config.c keeps it so). */
#define ZS_CONFIG_NORIGINS 40
/* zs_config_resolve that also records, when origins is not NULL, each tunable field's origin (a
   zs_origin of zshard_facts.h) at origins[zs_config_field_index(field)]. */
zs_status zs_config_resolve_origins(const zs_config *in, zs_config *out, char *sources, size_t n,
                                    unsigned char origins[ZS_CONFIG_NORIGINS]);
/* The index of tunable field `field` (a zs_config field an environment variable may set) in the
   origins of zs_config_resolve_origins; -1 for NULL or any other name. */
int zs_config_field_index(const char *field);
/* The value of environment variable `name` (getenv's: NULL when unset, possibly ""), for a
   variable of the tunables table in config.c only: every variable the library reads is listed
   there, and this is the only way the rest of src/ reads one. A name missing from the table
   gives NULL, as if unset. Not thread-safe against setenv. */
const char *zs_env(const char *name);

/* The dtype of the gradient accumulated over micro-steps and read by the optimizer: fp32 with
   grad_accum_fp32, else param_dtype (the dtype of the buffers the backward writes). */
static inline zs_dtype zs_grad_accum_dtype(const zs_config *c) {
  return c->grad_accum_fp32 ? ZS_F32 : c->param_dtype;
}

#endif
