/* Thread-local last-error message and status names. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ZS_ERRMSG_MAX 1024
static _Thread_local char zs_errmsg[ZS_ERRMSG_MAX];

const char *zs_status_str(zs_status s) {
  switch (s) {
  case ZS_OK:
    return "ZS_OK";
  case ZS_ERR_INVALID_ARG:
    return "ZS_ERR_INVALID_ARG";
  case ZS_ERR_OUT_OF_MEMORY:
    return "ZS_ERR_OUT_OF_MEMORY";
  case ZS_ERR_COMM:
    return "ZS_ERR_COMM";
  case ZS_ERR_DEVICE:
    return "ZS_ERR_DEVICE";
  case ZS_ERR_IO:
    return "ZS_ERR_IO";
  case ZS_ERR_CORRUPT:
    return "ZS_ERR_CORRUPT";
  case ZS_ERR_TIMEOUT:
    return "ZS_ERR_TIMEOUT";
  case ZS_ERR_STATE:
    return "ZS_ERR_STATE";
  case ZS_ERR_UNSUPPORTED:
    return "ZS_ERR_UNSUPPORTED";
  }
  return "ZS_ERR_UNKNOWN";
}

const char *zs_last_error(void) {
  return zs_errmsg;
}

zs_status zs_error_report(zs_status s, const char *message) {
  snprintf(zs_errmsg, sizeof zs_errmsg, "%s", message ? message : "");
  return s;
}

zs_status zs_err(zs_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(zs_errmsg, sizeof zs_errmsg, fmt, ap);
  va_end(ap);
  return s;
}

zs_status zs_err_wrap(zs_status s, const char *fmt, ...) {
  char prev[ZS_ERRMSG_MAX];
  memcpy(prev, zs_errmsg, sizeof prev);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(zs_errmsg, sizeof zs_errmsg, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n + 3 < sizeof zs_errmsg) {
    /* ": " and as much of the previous message as fits (the copy is bounded by hand: the
       compiler cannot prove a snprintf "%s" of it fits). */
    char *out = zs_errmsg + n;
    size_t room = sizeof zs_errmsg - (size_t)n - 3, len = strnlen(prev, sizeof prev);
    if (len > room) len = room;
    out[0] = ':';
    out[1] = ' ';
    memcpy(out + 2, prev, len);
    out[2 + len] = '\0';
  }
  return s;
}
