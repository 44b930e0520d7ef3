/* On a GPU: the NVMe tier's staging slots opened with the flags the engine's tier uses on CUDA
 * (zs_nvme_staging_flags_for: pinned, cudaPointerGetAttributes reports registered host memory;
 * the engine's own staging is checked in engine_cuda_nvme_*, test_engine_nvme_train), and a READ
 * pass whose chunks go host -> device -> host from the slots gives back exactly what a WRITE pass
 * stored. Without a GPU it prints "SKIP: no CUDA device" and passes. Built only with
 * CUDA. Usage: test_offload_nvme_cuda [ROOT]   (a directory on a real disk; default "."; where it
 * cannot hold a tier, $TMPDIR, /tmp or /var/tmp: nvt_pick_root) */
#include <cuda_runtime_api.h>

#include "nvme_test_util.h"

int main(int argc, char **argv) {
  if (zs_test_cuda_absent(1)) return 0; /* other CUDA failures: exit 1 */
  char root[4096];
  nvt_pick_root(argc > 1 ? argv[1] : ".", root, sizeof root); /* a folder O_DIRECT works in */
  const size_t eb[3] = {4, 4, 4}, chunk = 1 << 18, n = 5 * chunk + 999;
  nvt_tier t;
  nvt_open(&t, root, 3, eb, n, chunk, 2);
  zs_nvme_staging_destroy(t.st); /* the same slots, opened as the engine's tier opens them */
  t.st = NULL;
  ZS_OK_OR_DIE(zs_nvme_staging_create(zs_nvme_stream_slot_bytes(&t.desc), zs_nvme_stream_slots(2),
                                      zs_nvme_dir_align(t.dir),
                                      zs_nvme_staging_flags_for(ZS_DEVICE_CUDA), &t.st));
  ZS_EXPECT(zs_nvme_staging_pinned(t.st), "the CUDA tier's staging flags did not pin");
  struct cudaPointerAttributes at;
  const cudaError_t ce = cudaPointerGetAttributes(&at, zs_nvme_staging_slot(t.st, 4));
  ZS_EXPECT(ce == cudaSuccess && at.type == cudaMemoryTypeHost, "slot 4: %s, type %d",
            cudaGetErrorString(ce), (int)at.type);
  void *src[3];
  for (unsigned i = 0; i < 3; i++) {
    src[i] = malloc(n * 4);
    nvt_fill(src[i], n * 4, 40 + i);
  }
  zs_nvme_stream *s = NULL;
  t.desc.mode = ZS_NVME_WRITE;
  ZS_OK_OR_DIE(zs_nvme_stream_open(&t.desc, t.ring, t.st, &s));
  for (zs_nvme_chunk c;;) {
    ZS_OK_OR_DIE(zs_nvme_stream_next(s, &c));
    if (!c.count) break;
    for (unsigned i = 0; i < 3; i++)
      memcpy(c.span[i], (char *)src[i] + c.first * 4, c.count * 4);
    ZS_OK_OR_DIE(zs_nvme_stream_commit(s));
  }
  ZS_OK_OR_DIE(zs_nvme_stream_finish(s));
  zs_nvme_stream_close(s);
  /* READ pass: each chunk to the device and back into a plain buffer, on one stream. */
  void *d = NULL;
  char *back = malloc(chunk * 4);
  cudaStream_t cs;
  ZS_EXPECT(cudaMalloc(&d, chunk * 4) == cudaSuccess && cudaStreamCreate(&cs) == cudaSuccess,
            "cudaMalloc / stream");
  t.desc.mode = ZS_NVME_READ;
  ZS_OK_OR_DIE(zs_nvme_stream_open(&t.desc, t.ring, t.st, &s));
  size_t bad = 0;
  for (zs_nvme_chunk c;;) {
    ZS_OK_OR_DIE(zs_nvme_stream_next(s, &c));
    if (!c.count) break;
    for (unsigned i = 0; i < 3; i++) {
      cudaMemcpyAsync(d, c.span[i], c.count * 4, cudaMemcpyHostToDevice, cs);
      cudaMemcpyAsync(back, d, c.count * 4, cudaMemcpyDeviceToHost, cs);
      ZS_EXPECT(cudaStreamSynchronize(cs) == cudaSuccess, "copies of chunk %zu", c.index);
      bad += memcmp(back, (char *)src[i] + c.first * 4, c.count * 4) != 0;
    }
    ZS_OK_OR_DIE(zs_nvme_stream_commit(s));
  }
  ZS_OK_OR_DIE(zs_nvme_stream_finish(s));
  zs_nvme_stream_close(s);
  ZS_EXPECT(bad == 0, "%zu chunk arrays differ after the device round trip", bad);
  cudaStreamDestroy(cs);
  cudaFree(d);
  free(back);
  for (unsigned i = 0; i < 3; i++)
    free(src[i]);
  nvt_close(&t);
  ZS_TEST_END("test_offload_nvme_cuda");
}
