/* The version of the library actually loaded (include/zshard.h). */
#include "zshard.h"

const char *zs_version(void) {
  return ZSHARD_VERSION_STRING;
}
