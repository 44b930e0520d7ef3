/* Public GPT-2 training kernels (zs_kernels_* and zs_k_*): argument validation, then dispatch to
 * the CPU reference (src/kernels/cpu, fp32) or the CUDA twins (src/kernels/cuda, fp32 or bf16).
 *
 * Every argument problem is reported here, once, for both devices, as ZS_ERR_INVALID_ARG with a
 * sentence naming the function, the argument and the fix; the device kernels then trust their
 * arguments. Pointers are never dereferenced here except on the CPU, where targets of the
 * cross-entropy are range-checked (a wrong id would read outside the row).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kerr.h"
#include "kernels/cpu/gpt2_cpu.h"
#include "zshard_kernels.h"
#include "kernels/kernels_ctx.h"
#include "kernels/kernels_watch.h"
#ifdef ZS_HAVE_CUDA
#include "kernels/cuda/gpt2_cuda.h"
#include "kernels/kernels_mem.h"
#endif

/* Validates device and dtype (the CPU is fp32 only), then builds the CUDA context when asked. On
   failure *out is NULL and nothing is left allocated. */
zs_status zs_k_create(zs_device dev, zs_dtype dt, void *stream, zs_kernels **out) {
  static const char fn[] = "zs_k_create";
  REQ(out != NULL, "%s: out is NULL: pass the address of a zs_kernels pointer", fn);
  *out = NULL;
  REQ(dev == ZS_DEVICE_CPU || dev == ZS_DEVICE_CUDA,
      "%s: device %d is not a device: use ZS_DEVICE_CPU or ZS_DEVICE_CUDA", fn, (int)dev);
  REQ(dt == ZS_F32 || dt == ZS_BF16, "%s: dtype %d is not a dtype: use ZS_F32 or ZS_BF16", fn,
      (int)dt);
  if (dev == ZS_DEVICE_CPU && dt != ZS_F32)
    return zs_kerr(ZS_ERR_UNSUPPORTED,
                   "%s: the CPU kernels are fp32 only: use ZS_F32 on ZS_DEVICE_CPU (ZS_BF16 needs "
                   "ZS_DEVICE_CUDA)",
                   fn);
#ifndef ZS_HAVE_CUDA
  if (dev == ZS_DEVICE_CUDA)
    return zs_kerr(ZS_ERR_UNSUPPORTED,
                   "%s: zshard was built without CUDA: use ZS_DEVICE_CPU, or rebuild with a CUDA "
                   "compiler (ZS_CUDA=ON)",
                   fn);
#endif
  zs_kernels *k = calloc(1, sizeof *k);
  if (!k) return zs_kerr(ZS_ERR_OUT_OF_MEMORY, "%s: cannot allocate the context", fn);
  k->dev = dev;
  k->dt = dt;
#ifdef ZS_HAVE_CUDA
  if (dev == ZS_DEVICE_CUDA) {
    zs_status rc = zs_cuda_kctx_create(dt, stream, &k->cuda);
    if (rc != ZS_OK) {
      free(k);
      return zs_kerr_wrap(rc, "%s", fn);
    }
  }
#endif
  *out = k;
  return ZS_OK;
}

/* Releases the context (and its CUDA half). NULL is a no-op. */
void zs_k_destroy(zs_kernels *k) {
  if (!k) return;
#ifdef ZS_HAVE_CUDA
  zs_cuda_kctx_destroy(k->cuda);
#endif
  free(k);
}

/* ---- The user's buffers: zs_k_alloc / _free / _zero / _copy / _sync ----
   CPU: aligned host memory, memset, memmove (the CPU "stream" is synchronous). CUDA: the twins in
   kernels_mem_cuda.c, ordered on the context's stream. */

#define ZS_KERNELS_ALIGN 256 /* bytes; what cudaMalloc guarantees, so both devices promise it */

zs_status zs_k_alloc(zs_kernels *k, size_t bytes, void **p) {
  static const char fn[] = "zs_k_alloc";
  REQ(p != NULL, "%s: p is NULL: pass the address of a pointer to receive the buffer", fn);
  *p = NULL;
  REQ_CTX(k);
  REQ(bytes > 0, "%s: bytes = 0: ask for at least one byte", fn);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(mem_alloc, bytes, p);
  void *q = NULL;
  if (posix_memalign(&q, ZS_KERNELS_ALIGN, bytes) != 0 || !q)
    return zs_kerr(ZS_ERR_OUT_OF_MEMORY,
                   "%s: the host cannot allocate %zu bytes: use smaller buffers (batch, sequence)",
                   fn, bytes);
  memset(q, 0, bytes);
  *p = q;
  return ZS_OK;
}

void zs_k_free(zs_kernels *k, void *p) {
  if (!k || !p) return;
#ifdef ZS_HAVE_CUDA
  if (k->dev == ZS_DEVICE_CUDA) {
    zs_cuda_mem_free(k->cuda, p);
    return;
  }
#endif
  free(p);
}

zs_status zs_k_zero(zs_kernels *k, void *p, size_t bytes) {
  static const char fn[] = "zs_k_zero";
  REQ_CTX(k);
  REQ_PTR(p);
  if (bytes == 0) return ZS_OK;
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(mem_zero, p, bytes);
  memset(p, 0, bytes);
  return ZS_OK;
}

void zs_k_set_watch(zs_kernels *k, double timeout_s, void (*on_timeout)(void *ctx), void *ctx) {
  k->wait_timeout_s = timeout_s;
  k->on_timeout = on_timeout;
  k->watch_ctx = ctx;
}

#ifdef ZS_HAVE_CUDA
/* A timed-out host wait tells the watcher (which aborts the collectives) and keeps its status. */
static zs_status watched(zs_kernels *k, zs_status rc) {
  if (rc == ZS_ERR_TIMEOUT && k->on_timeout) k->on_timeout(k->watch_ctx);
  return rc;
}
#endif

zs_status zs_k_copy(zs_kernels *k, void *dst, const void *src, size_t bytes) {
  static const char fn[] = "zs_k_copy";
  REQ_CTX(k);
  REQ_PTR(dst);
  REQ_PTR(src);
  if (bytes == 0) return ZS_OK;
#ifdef ZS_HAVE_CUDA
  if (k->dev == ZS_DEVICE_CUDA)
    return watched(k, zs_cuda_mem_copy(k->cuda, dst, src, bytes, k->wait_timeout_s));
#else
  if (k->dev == ZS_DEVICE_CUDA)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: zshard was built without CUDA: use ZS_DEVICE_CPU", fn);
#endif
  memmove(dst, src, bytes);
  return ZS_OK;
}

zs_status zs_k_sync(zs_kernels *k) {
  static const char fn[] = "zs_k_sync";
  REQ_CTX(k);
  if (k->dev == ZS_DEVICE_CUDA) {
#ifdef ZS_HAVE_CUDA
    return watched(k, zs_cuda_mem_sync(k->cuda, k->wait_timeout_s));
#else
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: zshard was built without CUDA: use ZS_DEVICE_CPU", fn);
#endif
  }
  return ZS_OK;
}

/* Each zs_k_X below: the checks of its arguments (context, required pointers, dimensions), then
   the CUDA twin or the CPU kernel. Semantics are documented in include/zshard_kernels.h. */

zs_status zs_k_encoder_fwd(zs_kernels *k, void *out, const int *tok, const void *wte,
                           const void *wpe, int B, int T, int C) {
  static const char fn[] = "zs_k_encoder_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(tok);
  REQ_PTR(wte);
  REQ_PTR(wpe);
  REQ_DIM(B);
  REQ_DIM(T);
  REQ_DIM(C);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(encoder_fwd, out, tok, wte, wpe, B, T, C);
  zs_cpu_encoder_fwd(out, tok, wte, wpe, B, T, C);
  return ZS_OK;
}

zs_status zs_k_encoder_bwd(zs_kernels *k, void *dwte, void *dwpe, const void *dout, const int *tok,
                           int B, int T, int C) {
  static const char fn[] = "zs_k_encoder_bwd";
  REQ_CTX(k);
  REQ_PTR(dwte);
  REQ_PTR(dwpe);
  REQ_PTR(dout);
  REQ_PTR(tok);
  REQ_DIM(B);
  REQ_DIM(T);
  REQ_DIM(C);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(encoder_bwd, dwte, dwpe, dout, tok, B, T, C);
  zs_cpu_encoder_bwd(dwte, dwpe, dout, tok, B, T, C);
  return ZS_OK;
}

zs_status zs_k_layernorm_fwd(zs_kernels *k, void *out, float *mean, float *rstd, const void *inp,
                             const void *w, const void *b, int N, int C) {
  static const char fn[] = "zs_k_layernorm_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(mean);
  REQ_PTR(rstd);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ_PTR(b);
  REQ_DIM(N);
  REQ_DIM(C);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(layernorm_fwd, out, mean, rstd, inp, w, b, N, C);
  zs_cpu_layernorm_fwd(out, mean, rstd, inp, w, b, N, C);
  return ZS_OK;
}

zs_status zs_k_layernorm_bwd(zs_kernels *k, void *dinp, void *dw, void *db, const void *dout,
                             const void *inp, const void *w, const float *mean, const float *rstd,
                             int N, int C) {
  static const char fn[] = "zs_k_layernorm_bwd";
  REQ_CTX(k);
  REQ_PTR(dinp);
  REQ_PTR(dw);
  REQ_PTR(db);
  REQ_PTR(dout);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ_PTR(mean);
  REQ_PTR(rstd);
  REQ_DIM(N);
  REQ_DIM(C);
  if (k->dev == ZS_DEVICE_CUDA)
    CUDA_CALL(layernorm_bwd, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  zs_cpu_layernorm_bwd(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  return ZS_OK;
}

/* bias may be NULL (a layer without bias). */
zs_status zs_k_matmul_fwd(zs_kernels *k, void *out, const void *inp, const void *w,
                          const void *bias, int N, int C, int OC) {
  static const char fn[] = "zs_k_matmul_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ_DIM(N);
  REQ_DIM(C);
  REQ_DIM(OC);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(matmul_fwd, out, inp, w, bias, N, C, OC);
  zs_cpu_matmul_fwd(out, inp, w, bias, N, C, OC);
  return ZS_OK;
}

/* dbias may be NULL (a layer without bias), dinp too (no input gradient); dw is required. */
zs_status zs_k_matmul_bwd(zs_kernels *k, void *dinp, void *dw, void *dbias, const void *dout,
                          const void *inp, const void *w, int N, int C, int OC) {
  static const char fn[] = "zs_k_matmul_bwd";
  REQ_CTX(k);
  REQ_PTR(dw);
  REQ_PTR(dout);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ_DIM(N);
  REQ_DIM(C);
  REQ_DIM(OC);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(matmul_bwd, dinp, dw, dbias, dout, inp, w, N, C, OC);
  zs_cpu_matmul_bwd(dinp, dw, dbias, dout, inp, w, N, C, OC);
  return ZS_OK;
}

/* Shape rules shared by attention forward and backward: dims > 0 and whole heads. */
static zs_status attention_dims(const char *fn, int B, int T, int C, int NH) {
  REQ_DIM(B);
  REQ_DIM(T);
  REQ_DIM(C);
  REQ_DIM(NH);
  REQ(C % NH == 0, "%s: C = %d is not divisible by NH = %d: the head size C / NH must be whole", fn,
      C, NH);
  return ZS_OK;
}

zs_status zs_k_attention_fwd(zs_kernels *k, void *out, float *lse, const void *qkv, int B, int T,
                             int C, int NH) {
  static const char fn[] = "zs_k_attention_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(lse);
  REQ_PTR(qkv);
  ZS_CHECK(attention_dims(fn, B, T, C, NH));
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(attention_fwd, out, lse, qkv, B, T, C, NH);
  zs_cpu_attention_fwd(out, lse, qkv, B, T, C, NH);
  return ZS_OK;
}

zs_status zs_k_attention_bwd(zs_kernels *k, void *dqkv, const void *dout, const void *qkv,
                             const void *out, const float *lse, int B, int T, int C, int NH) {
  static const char fn[] = "zs_k_attention_bwd";
  REQ_CTX(k);
  REQ_PTR(dqkv);
  REQ_PTR(dout);
  REQ_PTR(qkv);
  REQ_PTR(out);
  REQ_PTR(lse);
  ZS_CHECK(attention_dims(fn, B, T, C, NH));
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(attention_bwd, dqkv, dout, qkv, out, lse, B, T, C, NH);
  zs_cpu_attention_bwd(dqkv, dout, qkv, out, lse, B, T, C, NH);
  return ZS_OK;
}

zs_status zs_k_gelu_fwd(zs_kernels *k, void *out, const void *inp, size_t n) {
  static const char fn[] = "zs_k_gelu_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(inp);
  REQ_DIM(n);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(gelu_fwd, out, inp, n);
  zs_cpu_gelu_fwd(out, inp, n);
  return ZS_OK;
}

zs_status zs_k_gelu_bwd(zs_kernels *k, void *dinp, const void *inp, const void *dout, size_t n) {
  static const char fn[] = "zs_k_gelu_bwd";
  REQ_CTX(k);
  REQ_PTR(dinp);
  REQ_PTR(inp);
  REQ_PTR(dout);
  REQ_DIM(n);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(gelu_bwd, dinp, inp, dout, n);
  zs_cpu_gelu_bwd(dinp, inp, dout, n);
  return ZS_OK;
}

zs_status zs_k_residual_fwd(zs_kernels *k, void *out, const void *a, const void *b, size_t n) {
  static const char fn[] = "zs_k_residual_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(a);
  REQ_PTR(b);
  REQ_DIM(n);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(residual_fwd, out, a, b, n);
  zs_cpu_residual_fwd(out, a, b, n);
  return ZS_OK;
}

zs_status zs_k_residual_bwd(zs_kernels *k, void *da, void *db, const void *dout, size_t n) {
  static const char fn[] = "zs_k_residual_bwd";
  REQ_CTX(k);
  REQ_PTR(da);
  REQ_PTR(db);
  REQ_PTR(dout);
  REQ_DIM(n);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(residual_bwd, da, db, dout, n);
  zs_cpu_residual_bwd(da, db, dout, n);
  return ZS_OK;
}

/* Host targets must index a real column: an id outside [0, V) would read past the row or into
   the padding. */
static zs_status targets_in_range(const char *fn, const int *targets, int N, int V) {
  return zs_k_ids_in_range(fn, "targets", targets, N, V, "token ids of the real vocabulary");
}

/* dlogits may be NULL (losses only) and may alias logits. */
zs_status zs_k_softmax_xent(zs_kernels *k, float *losses, void *dlogits, const void *logits,
                            const int *targets, float dloss, int N, int V, int Vp) {
  static const char fn[] = "zs_k_softmax_xent";
  REQ_CTX(k);
  REQ_PTR(losses);
  REQ_PTR(logits);
  REQ_PTR(targets);
  REQ_DIM(N);
  REQ_DIM(V);
  REQ_DIM(Vp);
  REQ(V <= Vp, "%s: V = %d exceeds the padded row stride Vp = %d: need V <= Vp", fn, V, Vp);
  if (k->dev == ZS_DEVICE_CUDA)
    CUDA_CALL(softmax_xent, losses, dlogits, logits, targets, dloss, N, V, Vp);
  ZS_CHECK(targets_in_range(fn, targets, N, V));
  zs_cpu_softmax_xent(losses, dlogits, logits, targets, dloss, N, V, Vp);
  return ZS_OK;
}
