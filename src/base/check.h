/* The status-checking macros every part of the tree uses, with no error function of its own:
 * libzshard reports through base/error.h (zs_err), the kernels library through kernels/kerr.h
 * (zs_kerr); both include this. */
#ifndef ZS_BASE_CHECK_H
#define ZS_BASE_CHECK_H

#include "zshard.h"

#if defined(__GNUC__)
#define ZS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ZS_PRINTF(a, b)
#endif

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
