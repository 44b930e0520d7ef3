/* Creation and destruction of the CUDA kernel context: cuBLASLt handle, workspace, scratch. */
#include <stdlib.h>
#include <string.h>

#include "kctx.cuh"

/* Stream-ordered allocation on the context's stream (the only stream its kernels use), reporting
   ZS_ERR_OUT_OF_MEMORY / ZS_ERR_DEVICE naming the buffer. Stream-ordered so that destroy can free
   with cudaFreeAsync: a plain cudaFree waits for the whole device, and would hang behind a
   collective of a silent peer that the engine has not timed out yet. */
static zs_status kctx_alloc(void **p, size_t bytes, cudaStream_t s, const char *what) {
  cudaError_t e = cudaMallocAsync(p, bytes, s);
  if (e == cudaSuccess) return ZS_OK;
  *p = NULL;
  (void)cudaGetLastError(); /* not sticky: clear it so later launches do not report it */
  return zs_kerr(e == cudaErrorMemoryAllocation ? ZS_ERR_OUT_OF_MEMORY : ZS_ERR_DEVICE,
                 "zs_cuda_kctx_create: cudaMallocAsync of the %s (%zu bytes) failed: %s", what,
                 bytes, cudaGetErrorString(e));
}

/* The attention path of environment variable ZS_CUDA_ATTN: unset, "" or auto, tc, simt; anything
   else is ZS_ERR_INVALID_ARG (a typo must not silently test the wrong path). */
static zs_status kctx_attn_mode(zs_attn_mode *m) {
  const char *s = getenv("ZS_CUDA_ATTN");
  *m = ZS_ATTN_AUTO;
  if (!s || !*s || !strcmp(s, "auto")) return ZS_OK;
  if (!strcmp(s, "tc") || !strcmp(s, "simt")) {
    *m = s[0] == 't' ? ZS_ATTN_TC : ZS_ATTN_SIMT;
    return ZS_OK;
  }
  return zs_kerr(ZS_ERR_INVALID_ARG,
                 "zs_cuda_kctx_create: ZS_CUDA_ATTN=%s: use auto (the default), tc or simt", s);
}

extern "C" zs_status zs_cuda_kctx_create(zs_dtype dt, void *stream, zs_cuda_kctx **out) {
  if (!out) return zs_kerr(ZS_ERR_INVALID_ARG, "zs_cuda_kctx_create: out is NULL");
  *out = NULL;
  if (!zs_dt_ok(dt))
    return zs_kerr(ZS_ERR_INVALID_ARG, "zs_cuda_kctx_create: dtype %d: use ZS_F32 or ZS_BF16",
                   (int)dt);
  zs_attn_mode attn;
  ZS_CHECK(kctx_attn_mode(&attn));
  zs_cuda_kctx *k = (zs_cuda_kctx *)calloc(1, sizeof *k);
  if (!k) return zs_kerr(ZS_ERR_OUT_OF_MEMORY, "zs_cuda_kctx_create: cannot allocate the context");
  k->dt = dt;
  k->stream = (cudaStream_t)stream;
  const char *g = getenv("ZS_CUDA_GEMM");
  k->gemm_simt = g && !strcmp(g, "simt");
  k->attn = attn;
  zs_status rc = ZS_OK;
  cublasStatus_t bs = cublasLtCreate(&k->lt);
  if (bs != CUBLAS_STATUS_SUCCESS) {
    k->lt = NULL;
    rc = zs_kerr(ZS_ERR_DEVICE, "zs_cuda_kctx_create: cublasLtCreate failed: %s",
                 cublasLtGetStatusName(bs));
    goto fail;
  }
  ZS_CHECK_GOTO(kctx_alloc(&k->workspace, ZS_LT_WORKSPACE_BYTES, k->stream, "cuBLASLt workspace"),
                rc, fail);
  ZS_CHECK_GOTO(kctx_alloc(&k->scratch, ZS_SCRATCH_BYTES, k->stream, "kernel scratch"), rc, fail);
  *out = k;
  return ZS_OK;
fail:
  zs_cuda_kctx_destroy(k);
  return rc;
}

/* Frees after the work queued on the stream (never a device-wide wait: see kctx_alloc). */
extern "C" void zs_cuda_kctx_destroy(zs_cuda_kctx *k) {
  if (!k) return;
  if (k->scratch && cudaFreeAsync(k->scratch, k->stream) != cudaSuccess) (void)cudaGetLastError();
  if (k->workspace && cudaFreeAsync(k->workspace, k->stream) != cudaSuccess)
    (void)cudaGetLastError();
  if (k->lt) cublasLtDestroy(k->lt);
  free(k);
}

extern "C" void *zs_cuda_kctx_stream(zs_cuda_kctx *k) {
  return k ? (void *)k->stream : NULL;
}
