/* The checkpoint test hooks (see ckpt_hooks.h): compiled only into the test build of the library
 * (ZS_TEST_HOOKS), never into the shipped libzshard. They read their variables themselves: they
 * are not settings of the library, so they are not in config.c's table. */
#include "ckpt/ckpt_hooks.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Bytes of data files written by this process so far. */
static uint64_t hook_written;

void zs_ckpt_hook_write(size_t n, const char *path, int rank) {
  const char *k = getenv("ZS_TEST_CKPT_PAUSE_BYTES");
  if (!k || !*k) return;
  const char *r = getenv("ZS_TEST_CKPT_PAUSE_RANK");
  if (r && *r && atoi(r) != rank) return;
  const uint64_t limit = strtoull(k, NULL, 10);
  const uint64_t before = hook_written;
  hook_written += n;
  if (before < limit && hook_written >= limit) {
    char mark[4096];
    snprintf(mark, sizeof mark, "%s.paused", path);
    const int fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    for (;;)
      pause(); /* until the test's SIGKILL */
  }
}

uint64_t zs_ckpt_hook_block_bytes(uint64_t dflt) {
  const char *s = getenv("ZS_TEST_CKPT_BLOCK_BYTES");
  if (s && *s) {
    const unsigned long long v = strtoull(s, NULL, 10);
    if (v >= 64 && v <= (1ull << 30)) return v / 4 * 4;
  }
  return dflt;
}
