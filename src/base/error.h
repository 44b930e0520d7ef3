/* Internal error reporting: every failure path sets a thread-local sentence and returns a status.
 */
#ifndef ZS_BASE_ERROR_H
#define ZS_BASE_ERROR_H

#include "zshard.h"

#include "base/check.h"

/* Records "fmt ..." as the thread's last error and returns s (so: return zs_err(...);). */
zs_status zs_err(zs_status s, const char *fmt, ...) ZS_PRINTF(2, 3);
/* Prefixes the current message with "context: " (keeps the status); returns s. */
zs_status zs_err_wrap(zs_status s, const char *fmt, ...) ZS_PRINTF(2, 3);

#endif
