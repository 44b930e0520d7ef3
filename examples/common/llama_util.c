/* Error plumbing of the Llama-family parts (see llama_util.h). */
#include "llama_util.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

int llama_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return -1;
}

const char *llama_error(void) {
  return last_error;
}

int llama_join(const char *dir, const char *name, char *out, size_t n) {
  int k = snprintf(out, n, "%s/%s", dir, name);
  if (k < 0 || (size_t)k >= n) return llama_fail("path too long: %s/%s", dir, name);
  return 0;
}
