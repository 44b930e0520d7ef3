/* Device buffers for activations and token ids (CPU: malloc; CUDA: cudaMalloc on the stream). */
#include "device.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#ifdef ZS_HAVE_CUDA
#include <cuda_runtime.h>

/* Records a CUDA failure as the example's error. */
static int cuda_fail(const char *what, cudaError_t e) {
  return gpt2_fail("%s: %s", what, cudaGetErrorString(e));
}
#endif

void *gpt2_dev_alloc(const gpt2_dev *d, size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (d->kind == ZS_DEVICE_CPU) {
    void *p = calloc(1, bytes);
    if (!p) gpt2_fail("out of host memory allocating %zu bytes of activations", bytes);
    return p;
  }
#ifdef ZS_HAVE_CUDA
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    cuda_fail("cudaMalloc of activations", e);
    return NULL;
  }
  e = cudaMemsetAsync(p, 0, bytes, (cudaStream_t)d->stream);
  if (e != cudaSuccess) {
    cudaFree(p);
    cuda_fail("cudaMemsetAsync", e);
    return NULL;
  }
  return p;
#else
  gpt2_fail("this build has no CUDA: run with --device cpu");
  return NULL;
#endif
}

void gpt2_dev_free(const gpt2_dev *d, void *p) {
  if (!p) return;
  if (d->kind == ZS_DEVICE_CPU) {
    free(p);
    return;
  }
#ifdef ZS_HAVE_CUDA
  cudaFree(p);
#endif
}

int gpt2_dev_zero(const gpt2_dev *d, void *p, size_t bytes) {
  if (d->kind == ZS_DEVICE_CPU) {
    memset(p, 0, bytes);
    return 0;
  }
#ifdef ZS_HAVE_CUDA
  cudaError_t e = cudaMemsetAsync(p, 0, bytes, (cudaStream_t)d->stream);
  return e == cudaSuccess ? 0 : cuda_fail("cudaMemsetAsync", e);
#else
  return gpt2_fail("this build has no CUDA");
#endif
}

int gpt2_dev_upload(const gpt2_dev *d, void *dst, const void *src, size_t bytes) {
  if (d->kind == ZS_DEVICE_CPU) {
    memcpy(dst, src, bytes);
    return 0;
  }
#ifdef ZS_HAVE_CUDA
  cudaStream_t s = (cudaStream_t)d->stream;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s); /* src is pageable and may be reused */
  return e == cudaSuccess ? 0 : cuda_fail("upload to the device", e);
#else
  return gpt2_fail("this build has no CUDA");
#endif
}

int gpt2_dev_download(const gpt2_dev *d, void *dst, const void *src, size_t bytes) {
  if (d->kind == ZS_DEVICE_CPU) {
    memcpy(dst, src, bytes);
    return 0;
  }
#ifdef ZS_HAVE_CUDA
  cudaStream_t s = (cudaStream_t)d->stream;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  return e == cudaSuccess ? 0 : cuda_fail("download from the device", e);
#else
  return gpt2_fail("this build has no CUDA");
#endif
}

/* bf16 is the top half of an fp32. */
void gpt2_to_f32(zs_dtype dt, float *dst, const void *src, size_t n) {
  if (dt == ZS_F32) {
    memcpy(dst, src, n * sizeof(float));
    return;
  }
  const uint16_t *h = src;
  for (size_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)h[i] << 16;
    memcpy(&dst[i], &u, sizeof u);
  }
}

/* Round to nearest even; NaN stays NaN (quiet bit forced). */
void gpt2_from_f32(zs_dtype dt, void *dst, const float *src, size_t n) {
  if (dt == ZS_F32) {
    memcpy(dst, src, n * sizeof(float));
    return;
  }
  uint16_t *h = dst;
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &src[i], sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
      h[i] = (uint16_t)((u >> 16) | 0x40u);
    else
      h[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}

int gpt2_dev_read_f32(const gpt2_dev *d, float *dst, const void *src, size_t n) {
  if (d->dt == ZS_F32) return gpt2_dev_download(d, dst, src, n * sizeof(float));
  void *tmp = malloc(n * d->esz);
  if (!tmp) return gpt2_fail("out of host memory reading %zu elements", n);
  int rc = gpt2_dev_download(d, tmp, src, n * d->esz);
  if (rc == 0) gpt2_to_f32(d->dt, dst, tmp, n);
  free(tmp);
  return rc;
}
