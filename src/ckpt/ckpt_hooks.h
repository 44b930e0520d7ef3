/* The checkpoint test hooks, which exist only in the test build of the library (ZS_TEST_HOOKS:
 * the zshard_internal archive the tests link; CMakeLists.txt). The shipped libzshard compiles the
 * empty inline versions below, so it has no hook and reads no ZS_TEST_ variable (ctest exports
 * checks that the shipped .so contains no such string). */
#ifndef ZS_CKPT_CKPT_HOOKS_H
#define ZS_CKPT_CKPT_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef ZS_TEST_HOOKS
/* Counts n more bytes of data files written by this process to `path`. With
   ZS_TEST_CKPT_PAUSE_BYTES=k (and ZS_TEST_CKPT_PAUSE_RANK=r, default any rank) the write that
   reaches k bytes creates "<path>.paused" and the process stops for good (pause() until a
   signal kills it), so a test can SIGKILL a job in the middle of a save. */
void zs_ckpt_hook_write(size_t n, const char *path, int rank);
/* dflt, or ZS_TEST_CKPT_BLOCK_BYTES when set to 64 .. 2^30 (rounded down to a multiple of 4):
   small blocks give many blocks per file and ranges that start and end inside them. */
uint64_t zs_ckpt_hook_block_bytes(uint64_t dflt);
#else
static inline void zs_ckpt_hook_write(size_t n, const char *path, int rank) {
  (void)n;
  (void)path;
  (void)rank;
}
static inline uint64_t zs_ckpt_hook_block_bytes(uint64_t dflt) {
  return dflt;
}
#endif

#endif
