/* Internal error reporting: every failure path sets a thread-local sentence and returns a status.
 */
#ifndef ZS_CORE_ERROR_H
#define ZS_CORE_ERROR_H

#include "zshard.h"

#if defined(__GNUC__)
#define ZS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ZS_PRINTF(a, b)
#endif

/* Records "fmt ..." as the thread's last error and returns s (so: return zs_err(...);). */
zs_status zs_err(zs_status s, const char *fmt, ...) ZS_PRINTF(2, 3);
/* Prefixes the current message with "context: " (keeps the status); returns s. */
zs_status zs_err_wrap(zs_status s, const char *fmt, ...) ZS_PRINTF(2, 3);

/* Check-and-goto-cleanup: on failure stores the status in `rc` and jumps to `label`. */
#define ZS_CHECK_GOTO(call, rc, label)                                                             \
  do {                                                                                             \
    (rc) = (call);                                                                                 \
    if ((rc) != ZS_OK) goto label;                                                                 \
  } while (0)
/* Returns the status of a failing call. */
#define ZS_CHECK(call)                                                                             \
  do {                                                                                             \
    zs_status zs_check_rc_ = (call);                                                               \
    if (zs_check_rc_ != ZS_OK) return zs_check_rc_;                                                \
  } while (0)

#endif
