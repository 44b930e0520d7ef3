/* Device buffers for activations and token ids, on zshard's zs_kernels_* memory calls. */
#include "device.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void *gpt2_dev_alloc(const gpt2_dev *d, size_t bytes) {
  void *p = NULL;
  zs_status rc = zs_k_alloc(d->k, bytes ? bytes : 1, &p);
  if (rc != ZS_OK) gpt2_fail_zs("zs_k_alloc of activations", rc);
  return p;
}

void gpt2_dev_free(const gpt2_dev *d, void *p) {
  zs_k_free(d->k, p);
}

int gpt2_dev_zero(const gpt2_dev *d, void *p, size_t bytes) {
  zs_status rc = zs_k_zero(d->k, p, bytes);
  return rc == ZS_OK ? 0 : gpt2_fail_zs("zs_k_zero", rc);
}

int gpt2_dev_upload(const gpt2_dev *d, void *dst, const void *src, size_t bytes) {
  zs_status rc = zs_k_copy(d->k, dst, src, bytes);
  return rc == ZS_OK ? 0 : gpt2_fail_zs("upload to the device (zs_k_copy)", rc);
}

int gpt2_dev_download(const gpt2_dev *d, void *dst, const void *src, size_t bytes) {
  zs_status rc = zs_k_copy(d->k, dst, src, bytes);
  return rc == ZS_OK ? 0 : gpt2_fail_zs("download from the device (zs_k_copy)", rc);
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
