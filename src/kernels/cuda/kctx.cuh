/* The CUDA kernel context (zs_cuda_kctx): what every GPT-2 kernel call shares. Internal.
 *
 * Invariants: everything runs on `stream`, so the scratch buffer can be reused by consecutive
 * calls without synchronisation; the workspace and scratch are allocated once in
 * zs_cuda_kctx_create and never resized (kernels that would need more split their work). */
#ifndef ZS_KERNELS_CUDA_KCTX_CUH
#define ZS_KERNELS_CUDA_KCTX_CUH

#include <cublasLt.h>

#include "device/cuda/cuda_common.cuh"
#include "gpt2_cuda.h"
#include "kernels/kerr.h"

#define ZS_LT_WORKSPACE_BYTES ((size_t)32 << 20) /* cuBLASLt's recommendation for Hopper */
#define ZS_SCRATCH_BYTES ((size_t)32 << 20)      /* partial sums, attention row terms, sorting */
#define ZS_LT_CACHE_SIZE 32                      /* cached GEMM algorithms (distinct shapes) */

/* Which attention path runs (environment ZS_CUDA_ATTN, read at zs_cuda_kctx_create): AUTO the
   tensor cores where they can run a call, else SIMT; TC the tensor cores wherever the dtype and
   head size allow, refusing (ZS_ERR_UNSUPPORTED) what else prevents them; SIMT always SIMT. */
typedef enum { ZS_ATTN_AUTO = 0, ZS_ATTN_TC, ZS_ATTN_SIMT } zs_attn_mode;

/* One cached cuBLASLt heuristic answer; key fields identify the problem completely. */
typedef struct {
  int used;
  int m, n, k, ta, tb, epilogue, accumulate;
  int align[4]; /* byte alignment of A, B, C, D (it limits which algorithms apply) */
  cublasLtMatmulAlgo_t algo;
} zs_lt_entry;

struct zs_cuda_kctx {
  zs_dtype dt;
  cudaStream_t stream;
  cublasLtHandle_t lt;
  void *workspace; /* ZS_LT_WORKSPACE_BYTES, device */
  void *scratch;   /* ZS_SCRATCH_BYTES, device, 256-byte aligned */
  zs_lt_entry cache[ZS_LT_CACHE_SIZE];
  int cache_next;    /* round-robin replacement */
  int gemm_simt;     /* environment ZS_CUDA_GEMM=simt: always use the fallback GEMM (tests) */
  zs_attn_mode attn; /* environment ZS_CUDA_ATTN: auto (unset), tc or simt */
};

/* Status of a CUDA runtime call: ZS_OK, or ZS_ERR_DEVICE naming `what` (through zs_kerr). */
static inline zs_status zs_kcu_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return ZS_OK;
  return zs_kerr(ZS_ERR_DEVICE, "%s failed: %s (%s)", what, cudaGetErrorName(e),
                 cudaGetErrorString(e));
}
/* Status of the kernel launch just made (configuration errors, earlier sticky faults). */
static inline zs_status zs_kcu_launched(const char *kernel) {
  return zs_kcu_check(cudaGetLastError(), kernel);
}

#endif
