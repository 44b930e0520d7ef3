/* When a GPU test may skip (tests/zs_test_cuda.h, CUDA builds): only when no CUDA device is
 * visible (no device, no driver, a count of 0). Any other answer of cudaGetDeviceCount, for
 * example a driver that fails to initialise or a stub libcuda, must fail the test instead of
 * reporting it as skipped. Runs without a GPU: the answers are given, not asked. */
#include <stdio.h>

#include "zs_test.h"

int main(void) {
  static const struct {
    cudaError_t e;
    int n, want;
  } cases[] = {
      {cudaErrorNoDevice, 0, 1},
      {cudaErrorInsufficientDriver, 0, 1},
      {cudaSuccess, 0, 1},
      {cudaSuccess, 1, 0},
      {cudaSuccess, 8, 0},
      {cudaErrorInitializationError, 0, -1},
      {cudaErrorStubLibrary, 0, -1},
      {cudaErrorSystemDriverMismatch, 0, -1},
      {cudaErrorDevicesUnavailable, 0, -1},
      {cudaErrorUnknown, 0, -1},
      {cudaErrorNotPermitted, 0, -1},
      {cudaErrorCompatNotSupportedOnDevice, 0, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int got = zs_test_cuda_absent_from(cases[i].e, cases[i].n);
    ZS_EXPECT(got == cases[i].want, "%s with %d devices: %d, want %d (1 skip, 0 run, -1 fail)",
              cudaGetErrorName(cases[i].e), cases[i].n, got, cases[i].want);
  }
  /* This machine's own answer: a skip or a device, never an exit (else the GPU tests fail here). */
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  printf("test_gpu_skip_rule: cudaGetDeviceCount here: %s, %d device(s): %s\n", cudaGetErrorName(e),
         n, zs_test_cuda_absent(0) ? "GPU tests skip" : "GPU tests run");
  ZS_TEST_END("test_gpu_skip_rule");
}
