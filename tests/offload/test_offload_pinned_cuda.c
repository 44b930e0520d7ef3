/* On a GPU: host arena memory for a CUDA device is pinned (cudaPointerGetAttributes reports host
 * memory registered with CUDA) and a device<->host copy round-trips through it. Without a GPU it
 * prints "SKIP: no CUDA device" and passes (any other CUDA failure fails it). Built only with
 * CUDA. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "offload/host_arena.h"
#include "zs_test.h"

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* a test killed at its timeout still shows how far it got */
  if (zs_test_cuda_absent(1)) return 0; /* other CUDA failures: exit 1 */
  zs_host_arena *a;
  ZS_OK_OR_DIE(zs_host_arena_create(0, 0, 0, &a)); /* CUDA's context is created here */
  printf("arena: %s\n", zs_host_arena_info(a));
  ZS_EXPECT(zs_host_arena_pinned(a), "a GPU arena must pin");
  const size_t sizes[] = {64, 5000, (size_t)3 << 20, (size_t)70 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *h;
    printf("size %zu: alloc\n", sizes[i]);
    ZS_OK_OR_DIE(zs_host_arena_alloc(a, sizes[i], &h));
    printf("size %zu: copies\n", sizes[i]);
    struct cudaPointerAttributes at;
    cudaError_t ce = cudaPointerGetAttributes(&at, h);
    ZS_EXPECT(ce == cudaSuccess && at.type == cudaMemoryTypeHost,
              "size %zu: %s, type %d (want cudaMemoryTypeHost = registered)", sizes[i],
              cudaGetErrorString(ce), (int)at.type);
    memset(h, 0x3c, sizes[i]);
    void *d;
    ZS_EXPECT(cudaMalloc(&d, sizes[i]) == cudaSuccess, "cudaMalloc");
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemcpyAsync(d, h, sizes[i], cudaMemcpyHostToDevice, s);
    cudaMemsetAsync(d, 0x5a, 1, s);
    cudaMemcpyAsync(h, d, sizes[i], cudaMemcpyDeviceToHost, s);
    ZS_EXPECT(cudaStreamSynchronize(s) == cudaSuccess, "copies");
    unsigned char *c = h;
    ZS_EXPECT(c[0] == 0x5a && c[sizes[i] - 1] == 0x3c, "round trip %zu", sizes[i]);
    cudaStreamDestroy(s);
    cudaFree(d);
    ZS_OK_OR_DIE(zs_host_arena_free(a, h));
  }
  zs_host_arena *u;
  ZS_OK_OR_DIE(zs_host_arena_create(0, 0, ZS_HOST_ARENA_NO_PIN, &u));
  ZS_EXPECT(!zs_host_arena_pinned(u) && strstr(zs_host_arena_info(u), "NO_PIN"), "info: %s",
            zs_host_arena_info(u));
  void *h;
  ZS_OK_OR_DIE(zs_host_arena_alloc(u, 1 << 20, &h));
  struct cudaPointerAttributes at;
  cudaPointerGetAttributes(&at, h);
  (void)cudaGetLastError();
  ZS_EXPECT(at.type == cudaMemoryTypeUnregistered, "NO_PIN memory is registered (type %d)",
            (int)at.type);
  zs_host_arena_destroy(u);
  zs_host_arena_destroy(a);
  if (!zs_test_failures) printf("test_offload_pinned_cuda: ok\n");
  ZS_TEST_END("test_offload_pinned_cuda");
}
