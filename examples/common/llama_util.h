/* Error plumbing of the Llama-family parts (examples/llama/, and the common/llama_* files that
 * train_llama shares with zshard-plan). Functions return 0 on success and -1 on failure, leaving a
 * sentence in llama_error(); the caller prints it and exits. */
#ifndef COMMON_LLAMA_UTIL_H
#define COMMON_LLAMA_UTIL_H

#include <stddef.h>

#if defined(__GNUC__)
#define LLAMA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LLAMA_PRINTF(a, b)
#endif

/* Records the message (printf format) and returns -1. */
int llama_fail(const char *fmt, ...) LLAMA_PRINTF(1, 2);
/* The last recorded message ("" if none). Thread-local. */
const char *llama_error(void);
/* out = dir + "/" + name; -1 (recorded) when it does not fit in n bytes. */
int llama_join(const char *dir, const char *name, char *out, size_t n);

/* Propagates a failure (-1) of a call that already recorded its message. */
#define LL_TRY(call)                                                                               \
  do {                                                                                             \
    if ((call) != 0) return -1;                                                                    \
  } while (0)

#endif
