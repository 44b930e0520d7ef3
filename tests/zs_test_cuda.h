/* CUDA device detection shared by the GPU tests (CUDA builds only; zs_test.h includes it there).
   A GPU test may skip only when no CUDA device is visible, and then prints a line beginning
   "SKIP: no CUDA device" (ctest's SKIP_REGULAR_EXPRESSION for the gpu tests); any other CUDA
   failure (a broken driver, a GPU in a bad state, a stub libcuda) fails the test, so that a
   machine with a GPU never reports its GPU tests as skipped because something went wrong. */
#ifndef ZS_TESTS_ZS_TEST_CUDA_H
#define ZS_TESTS_ZS_TEST_CUDA_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

/* What cudaGetDeviceCount's answer (e, count n) means: 1 = no device is visible (no device, no
   driver at all, or 0 devices), 0 = a device is there, -1 = any other failure. */
static inline int zs_test_cuda_absent_from(cudaError_t e, int n) {
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return 1;
  if (e != cudaSuccess) return -1;
  return n < 1 ? 1 : 0;
}

/* 1 when no CUDA device is visible, after printing "SKIP: no CUDA device (why)" when print is
   non-zero (one rank of an MPI test prints); 0 when there is one. Any other failure of
   cudaGetDeviceCount prints a FAIL line and exits 1 (every rank sees the same answer). */
static inline int zs_test_cuda_absent(int print) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  const int absent = zs_test_cuda_absent_from(e, n);
  if (absent < 0) {
    fprintf(stderr, "FAIL: cudaGetDeviceCount: %s (%s): CUDA fails here, a GPU may be present\n",
            cudaGetErrorName(e), cudaGetErrorString(e));
    exit(1);
  }
  if (absent) {
    (void)cudaGetLastError();
    if (print) {
      printf("SKIP: no CUDA device (%s)\n", e == cudaSuccess ? "0 devices" : cudaGetErrorName(e));
      fflush(stdout);
    }
  }
  return absent;
}

#endif
