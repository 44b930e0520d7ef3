/* The examples' error message buffer, clock and path helper. */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static char g_err[1024];

int gpt2_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  return -1;
}

const char *gpt2_error(void) {
  return g_err;
}

int gpt2_fail_zs(const char *what, zs_status s) {
  return gpt2_fail("%s -> %s: %s", what, zs_status_str(s), zs_last_error());
}

double gpt2_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gpt2_path_beside(const char *file, const char *name, char *out, size_t n) {
  const char *slash = strrchr(file, '/');
  if (slash)
    snprintf(out, n, "%.*s/%s", (int)(slash - file), file, name);
  else
    snprintf(out, n, "%s", name);
}
