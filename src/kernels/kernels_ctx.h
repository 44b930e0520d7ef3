/* The kernel context (struct zs_kernels) and the argument checks shared by the public dispatch
 * files (kernels_api.c: GPT-2 kernels and buffers; llama_api.c: Llama-family kernels;
 * vocab_api.c, tp_layers.c).
 * Internal to src/kernels. */
#ifndef ZS_KERNELS_KERNELS_CTX_H
#define ZS_KERNELS_KERNELS_CTX_H

#include "kernels/kerr.h"
#include "zshard_kernels.h"
#ifdef ZS_HAVE_CUDA
#include "kernels/cuda/gpt2_cuda.h"
#endif

/* A kernel context. On the CPU it only records the device and dtype (always ZS_F32 there). */
struct zs_kernels {
  zs_device dev;
  zs_dtype dt;
  /* Host waits (sync, copies to/from host) are bounded by wait_timeout_s when > 0; a timeout
     calls on_timeout(watch_ctx) (the engine aborts its collectives) before returning. */
  double wait_timeout_s;
  void (*on_timeout)(void *ctx);
  void *watch_ctx;
#ifdef ZS_HAVE_CUDA
  zs_cuda_kctx *cuda; /* non-NULL exactly when dev == ZS_DEVICE_CUDA */
#endif
};

/* Validation helpers: each returns from the calling zs_k_* with ZS_ERR_INVALID_ARG. `fn` is the
   calling function's name (a local static string in each of them). */
#define REQ(cond, ...)                                                                             \
  do {                                                                                             \
    if (!(cond)) return zs_kerr(ZS_ERR_INVALID_ARG, __VA_ARGS__);                                  \
  } while (0)
#define REQ_CTX(k)                                                                                 \
  REQ((k) != NULL, "%s: the kernels context is NULL: create one with zs_k_create", fn)
#define REQ_PTR(p) REQ((p) != NULL, "%s: %s is NULL: pass a buffer on the kernels' device", fn, #p)
#define REQ_DIM(d) REQ((d) > 0, "%s: %s = %lld must be > 0", fn, #d, (long long)(d))
/* Aliasing a header forbids, caught when the pointers are equal (overlap at an offset cannot be
   seen and stays the caller's duty). */
#define REQ_DISTINCT(a, b)                                                                         \
  REQ((const void *)(a) != (const void *)(b),                                                      \
      "%s: %s and %s are the same buffer: pass separate buffers (%s is written while the other "   \
      "is still read or written)",                                                                 \
      fn, #a, #b, #a)

/* Host ids (CPU only: device ids cannot be inspected here) name one of V rows: what[i] in
   [0, V), else ZS_ERR_INVALID_ARG saying which and "pass <fix>". */
static inline zs_status zs_k_ids_in_range(const char *fn, const char *what, const int *id, int N,
                                          int V, const char *fix) {
  for (int i = 0; i < N; i++)
    REQ(id[i] >= 0 && id[i] < V, "%s: %s[%d] = %d is outside [0, V = %d): pass %s", fn, what, i,
        id[i], V, fix);
  return ZS_OK;
}

/* The CUDA branch of a dispatch: the twin zs_cuda_X, or an error in a build without CUDA (where
   no CUDA context can exist, so this is only reached through a corrupted handle). */
#ifdef ZS_HAVE_CUDA
#define CUDA_CALL(name, ...) return zs_cuda_##name(k->cuda, __VA_ARGS__)
#else
#define CUDA_CALL(name, ...)                                                                       \
  return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: zshard was built without CUDA: use ZS_DEVICE_CPU", fn)
#endif

#endif
