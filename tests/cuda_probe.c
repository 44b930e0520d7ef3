/* The GPU probe of the shell-driven GPU tests: exit 0 and "cuda: N device(s)" when the CUDA
 * runtime sees a device; exit 77 and nothing on stdout when no device is visible (the script then
 * prints the "SKIP: no CUDA device" line itself); exit 1 with the CUDA error on stderr for any
 * other failure (a broken driver must fail the test, not skip it: tests/zs_test_cuda.h's rule).
 * It asks the same runtime the engine uses, so CUDA_VISIBLE_DEVICES and a missing driver count as
 * they will for the test. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "zs_test_cuda.h"

int main(void) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  const int absent = zs_test_cuda_absent_from(e, n);
  if (absent > 0) return 77;
  if (absent < 0) {
    fprintf(stderr, "cuda_probe: cudaGetDeviceCount: %s (%s)\n", cudaGetErrorName(e),
            cudaGetErrorString(e));
    return 1;
  }
  printf("cuda: %d device(s)\n", n);
  return 0;
}
