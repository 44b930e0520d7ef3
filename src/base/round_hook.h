/* The test hook of the compute-copy rounding. In ZS_MASTER_REMAINDER the bf16 compute copy is
 * the master rounded to nearest with ties away from zero (base/bf16_rem.h); ZS_MASTER_FP32
 * rounds it to nearest even. With the hook on, ZS_MASTER_FP32 rounds its compute copy ties away
 * too (on the CPU device, without offload: the optimizer refuses the rest), so a test can show the
 * remainder mode bit-identical to that run. The switch exists only in the test build of the
 * library (ZS_TEST_HOOKS: the zshard_internal archive the tests link; CMakeLists.txt); the
 * shipped libzshard always answers 0. */
#ifndef ZS_BASE_ROUND_HOOK_H
#define ZS_BASE_ROUND_HOOK_H

/* 1 while a test has the hook on, else 0 (always 0 in libzshard). */
int zs_hook_fp32_ties_away(void);

/* Test build only (zshard_internal): turns the hook on or off for the whole process. Set it
   before zs_engine_create and leave it for the engine's life. */
void zs_test_hook_fp32_ties_away(int on);

#endif
