/* Error reporting of the kernels library (libzshard_kernels), by its own names: libzshard's
 * zs_err is internal to libzshard (hidden), so the kernels format their sentence here and hand it
 * to libzshard's public zs_error_report, and zs_last_error() says what failed whichever library
 * failed. Kernels files include this, never base/error.h (ctest layers checks). */
#ifndef ZS_KERNELS_KERR_H
#define ZS_KERNELS_KERR_H

#include "base/check.h"
#include "zshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records "fmt ..." as the thread's last error (through zs_error_report) and returns s. */
zs_status zs_kerr(zs_status s, const char *fmt, ...) ZS_PRINTF(2, 3);
/* Prefixes the current last error with "fmt ...: " (keeps s); returns s. */
zs_status zs_kerr_wrap(zs_status s, const char *fmt, ...) ZS_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif

#endif
