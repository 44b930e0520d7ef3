/* CUDA errors as libzshard statuses, for the engine's CUDA kernels (the kernels library has its
 * own, kernels/cuda/kctx.cuh, that reports through zs_kerr). */
#ifndef ZS_DEVICE_CUDA_CUDA_CHECK_CUH
#define ZS_DEVICE_CUDA_CUDA_CHECK_CUH

#include <cuda_runtime.h>

extern "C" {
#include "base/error.h"
}

/* Status of a CUDA runtime call: ZS_OK, or ZS_ERR_DEVICE naming `what`. */
static inline zs_status zs_cu_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return ZS_OK;
  return zs_err(ZS_ERR_DEVICE, "%s failed: %s (%s)", what, cudaGetErrorName(e),
                cudaGetErrorString(e));
}
/* Status of the kernel launch just made (configuration errors, earlier sticky faults). */
static inline zs_status zs_cu_launched(const char *kernel) {
  return zs_cu_check(cudaGetLastError(), kernel);
}

#endif
