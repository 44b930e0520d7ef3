/* Error reporting of the kernels library (see kerr.h): the message is formatted here and handed
 * to libzshard's error channel (zs_error_report), so zs_last_error() says what failed, whichever
 * library failed. */
#include <stdarg.h>
#include <stdio.h>

#include "kernels/kerr.h"

zs_status zs_kerr(zs_status s, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return zs_error_report(s, msg);
}

zs_status zs_kerr_wrap(zs_status s, const char *fmt, ...) {
  char prev[1024], msg[1024]; /* the size of zs_last_error()'s buffer */
  snprintf(prev, sizeof prev, "%s", zs_last_error());
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < sizeof msg)
    snprintf(msg + n, sizeof msg - (size_t)n, ": %.*s", (int)(sizeof msg - (size_t)n), prev);
  return zs_error_report(s, msg);
}
