/* Tiny test harness shared by the tests: failures print file:line and the engine's last error,
   and the process exits non-zero at the end (ZS_TEST_END). Tests are programs; ctest runs them. */
#ifndef ZS_TESTS_ZS_TEST_H
#define ZS_TESTS_ZS_TEST_H

#include <execinfo.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zshard_facts.h"
#include "zshard_kernels.h"
#ifdef ZS_HAVE_CUDA
#include "zs_test_cuda.h" /* zs_test_cuda_absent(): when a GPU test may skip */
#endif

static int zs_test_failures = 0;

/* ctest sends SIGUSR1 to a test at its timeout (TIMEOUT_SIGNAL_NAME, cmake/ZsTargets.cmake;
   mpirun forwards it to the ranks): the test prints its stack before the kill, so a hang on a
   machine lent for minutes says where it hung. stdout is line-buffered for the same reason (a
   killed test's buffered lines are lost). */
static void zs_test_on_timeout(int sig) {
  static const char msg[] = "zs_test: the timeout signal: stack of the test process\n";
  void *frames[64];
  (void)sig;
  if (write(2, msg, sizeof msg - 1) < 0) _exit(124);
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  _exit(124);
}

__attribute__((constructor)) static void zs_test_setup(void) {
  void *warm[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  (void)backtrace(warm, 1); /* loads the unwinder now, not inside the handler */
  signal(SIGUSR1, zs_test_on_timeout);
}

/* For an MPI test's --device cuda: 1 when no CUDA device can be used here (a build without CUDA,
   or none visible), after rank 0 printed one "SKIP: no CUDA device (why)" line; the caller then
   destroys its communicator and exits 0. Any other CUDA failure exits 1 (zs_test_cuda_absent). */
static inline int zs_test_cuda_skip(int rank) {
#ifdef ZS_HAVE_CUDA
  return zs_test_cuda_absent(rank == 0);
#else
  if (rank == 0) printf("SKIP: no CUDA device (a build without CUDA)\n");
  return 1;
#endif
}

#define ZS_EXPECT(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      zs_test_failures++;                                                                          \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                              \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
    }                                                                                              \
  } while (0)

/* A call that must succeed; on failure prints the status and zs_last_error() and exits 1. */
#define ZS_OK_OR_DIE(call)                                                                         \
  do {                                                                                             \
    zs_status zs_t_rc_ = (call);                                                                   \
    if (zs_t_rc_ != ZS_OK) {                                                                       \
      fprintf(stderr, "FATAL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,                    \
              zs_status_str(zs_t_rc_), zs_last_error());                                           \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* A call that must fail with `want` and leave a non-empty message. */
#define ZS_EXPECT_STATUS(call, want)                                                               \
  do {                                                                                             \
    zs_status zs_t_rc_ = (call);                                                                   \
    ZS_EXPECT(zs_t_rc_ == (want), "got %s, want %s (%s)", zs_status_str(zs_t_rc_),                 \
              zs_status_str(want), zs_last_error());                                               \
    ZS_EXPECT(zs_last_error()[0] != '\0', "empty error message for %s", #call);                    \
  } while (0)

#define ZS_TEST_END(name)                                                                          \
  do {                                                                                             \
    if (zs_test_failures) {                                                                        \
      fprintf(stderr, "%s: %d failure(s)\n", name, zs_test_failures);                              \
      return 1;                                                                                    \
    }                                                                                              \
    return 0;                                                                                      \
  } while (0)

/* zs_engine_save to its end: with ckpt_async (ZS_CKPT_ASYNC=1 runs the checkpoint tests that
   way) it also waits for the commit, so a test that then reads the files or checks the outcome
   holds under either mode. */
static inline zs_status zs_test_save(zs_engine *e, const char *dir) {
  const zs_status rc = zs_engine_save(e, dir);
  return rc == ZS_OK ? zs_engine_save_wait(e) : rc;
}

/* The engine's facts now (zs_engine_facts_get; exits 1 when it fails). */
static inline zs_engine_facts zs_test_facts(const zs_engine *e) {
  zs_engine_facts f = {.struct_size = sizeof f};
  ZS_OK_OR_DIE(zs_engine_facts_get(e, &f));
  return f;
}

/* Where tunable `field` of e got its value (zs_config_origin; exits 1 when it fails). */
static inline zs_origin zs_test_origin(const zs_engine *e, const char *field) {
  zs_origin o = ZS_ORIGIN_DEFAULT;
  ZS_OK_OR_DIE(zs_config_origin(e, field, &o));
  return o;
}

/* The next number of a xorshift64* stream (state *s, never 0): the tests' reproducible random
   source. */
static inline uint64_t zs_test_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

/* Copies n bytes between host memory and the engine's memory: device memory when cuda is non-zero
   (CUDA builds), plain memcpy otherwise. cudaMemcpy from pageable memory may return before its
   DMA lands, so the device is synchronised after it: the engine's non-blocking streams then see
   the data. A CUDA failure ends the test (exit 1). */
static inline void zs_test_copy(void *dst, const void *src, size_t n, int cuda) {
#ifdef ZS_HAVE_CUDA
  if (cuda) {
    if (cudaMemcpy(dst, src, n, cudaMemcpyDefault) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
      fprintf(stderr, "FATAL: cudaMemcpy failed\n");
      exit(1);
    }
    return;
  }
#endif
  (void)cuda;
  memcpy(dst, src, n);
}

#endif
