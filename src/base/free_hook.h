/* The test hook of the free-memory measurement behind zs_config.offload_budget_bytes =
 * ZS_BUDGET_FREE: a test makes each rank "measure" the bytes it chooses (ranks of one test may
 * choose differently), so that the agreement on the least and the placement that follows can be
 * checked against a known number. The switch exists only in the test build of the library
 * (ZS_TEST_HOOKS: the zshard_internal archive the tests link; CMakeLists.txt); the shipped
 * libzshard always measures. */
#ifndef ZS_BASE_FREE_HOOK_H
#define ZS_BASE_FREE_HOOK_H

#include <stddef.h>

/* 1 and *bytes = the test's number while a test has set one, else 0 (always 0 in libzshard). */
int zs_hook_free_bytes(size_t *bytes);

/* Test build only (zshard_internal): this process's commits measure `bytes` (0 included: "none
   free") while on is non-zero; on = 0 measures for real again. Set it before zs_engine_commit. */
void zs_test_hook_free_bytes(int on, size_t bytes);

#endif
