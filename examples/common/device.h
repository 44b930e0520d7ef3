/* Memory on the device the model runs on (host memory for ZS_DEVICE_CPU, device memory ordered on
 * the engine's stream for ZS_DEVICE_CUDA): a thin wrapper over zshard's zs_k_alloc / _free /
 * _zero / _copy that records failures as the example's error (gpt2_error()). */
#ifndef COMMON_DEVICE_H
#define COMMON_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "zshard_kernels.h"

typedef struct {
  zs_kernels *k; /* the kernels context: its device and stream own every buffer */
  zs_dtype dt;   /* dtype of activations, params and grads */
  size_t esz;    /* bytes per element of dt */
} gpt2_dev;

/* Zero-filled device buffer of `bytes`, or NULL (gpt2_error() says why). */
void *gpt2_dev_alloc(const gpt2_dev *d, size_t bytes);
/* Frees a gpt2_dev_alloc buffer, ordered after queued work; NULL is a no-op. */
void gpt2_dev_free(const gpt2_dev *d, void *p);
/* Sets bytes to 0, ordered on the stream. */
int gpt2_dev_zero(const gpt2_dev *d, void *p, size_t bytes);
/* Host -> device and device -> host copies; both return after the copy completed. */
int gpt2_dev_upload(const gpt2_dev *d, void *dst, const void *src, size_t bytes);
int gpt2_dev_download(const gpt2_dev *d, void *dst, const void *src, size_t bytes);

/* Host conversions between fp32 and the dtype (bf16 rounds to nearest even). */
void gpt2_to_f32(zs_dtype dt, float *dst, const void *src, size_t n);
void gpt2_from_f32(zs_dtype dt, void *dst, const float *src, size_t n);
/* Reads n elements of a device tensor in dt into host fp32. */
int gpt2_dev_read_f32(const gpt2_dev *d, float *dst, const void *src, size_t n);

/* Byte offset of element i in dt. */
static inline void *gpt2_at(const gpt2_dev *d, void *p, size_t i) {
  return (char *)p + i * d->esz;
}

#endif
