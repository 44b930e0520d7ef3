/* Error plumbing and small helpers of the training examples (train_gpt2, train_llama; the gpt2_
 * prefix is where they began). Example functions return 0 on success and -1 on failure, leaving a
 * sentence in gpt2_error(); main prints it and exits non-zero. */
#ifndef COMMON_UTIL_H
#define COMMON_UTIL_H

#include <stddef.h>

#include "zshard.h"

#if defined(__GNUC__)
#define GPT2_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GPT2_PRINTF(a, b)
#endif

/* Records the message and returns -1. */
int gpt2_fail(const char *fmt, ...) GPT2_PRINTF(1, 2);
/* The last recorded message ("" if none). */
const char *gpt2_error(void);
/* Records "what: ZS_ERR_X: <zs_last_error()>" for a failed engine call and returns -1. */
int gpt2_fail_zs(const char *what, zs_status s);
/* The path of `name` in the directory of `file` ("dir/model.safetensors" -> "dir/config.json"). */
void gpt2_path_beside(const char *file, const char *name, char *out, size_t n);
/* Monotonic wall clock in seconds. */
double gpt2_now(void);

/* Checks a zshard call; on failure records it (with the call's text) and returns -1. */
#define ZS_TRY(call)                                                                               \
  do {                                                                                             \
    zs_status zs_try_rc_ = (call);                                                                 \
    if (zs_try_rc_ != ZS_OK) return gpt2_fail_zs(#call, zs_try_rc_);                               \
  } while (0)
/* Propagates an example failure (-1). */
#define TRY(call)                                                                                  \
  do {                                                                                             \
    if ((call) != 0) return -1;                                                                    \
  } while (0)

#endif
