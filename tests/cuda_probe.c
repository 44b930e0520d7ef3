/* The GPU probe of the shell-driven GPU tests: exit 0 and "cuda: N device(s)" when the CUDA
 * runtime sees a device, else exit 77 and nothing on stdout (the script then prints the
 * "SKIP: no CUDA device" line itself). It asks the same runtime the engine uses, so
 * CUDA_VISIBLE_DEVICES and a missing driver count as they will for the test. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) return 77;
  printf("cuda: %d device(s)\n", n);
  return 0;
}
