/* Public Llama-family kernels (zs_k_embedding_*, zs_k_rmsnorm_*, zs_k_rope_*, zs_k_swiglu_*,
 * zs_k_gqa_attention_*): argument validation, then dispatch to the CPU reference
 * (src/kernels/cpu/llama_*.c, fp32) or the CUDA twins (src/kernels/cuda/llama_*.cu, fp32/bf16).
 *
 * As in kernels_api.c, every argument problem is reported here, once, for both devices, as
 * ZS_ERR_INVALID_ARG naming the function, the argument and the fix. Pointers are dereferenced
 * only on the CPU (token ids range-checked there).
 */
#include <math.h>
#include <stddef.h>

#include "kernels/cpu/llama_cpu.h"
#include "kernels/kernels_ctx.h"
#include "kernels/kerr.h"
#include "zshard_kernels.h"
#ifdef ZS_HAVE_CUDA
#include "kernels/cuda/llama_cuda.h"
#endif

static zs_status tokens_in_range(const char *fn, const int *tok, int N, int V) {
  return zs_k_ids_in_range(fn, "tok", tok, N, V, "token ids of the embedding's vocabulary");
}

zs_status zs_k_embedding_fwd(zs_kernels *k, void *out, const int *tok, const void *wte, int N,
                             int C, int V) {
  static const char fn[] = "zs_k_embedding_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(tok);
  REQ_PTR(wte);
  REQ_DIM(N);
  REQ_DIM(C);
  REQ_DIM(V);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(embedding_fwd, out, tok, wte, N, C, V);
  ZS_CHECK(tokens_in_range(fn, tok, N, V));
  zs_cpu_embedding_fwd(out, tok, wte, N, C);
  return ZS_OK;
}

zs_status zs_k_embedding_bwd(zs_kernels *k, void *dwte, const void *dout, const int *tok, int N,
                             int C, int V) {
  static const char fn[] = "zs_k_embedding_bwd";
  REQ_CTX(k);
  REQ_PTR(dwte);
  REQ_PTR(dout);
  REQ_PTR(tok);
  REQ_DIM(N);
  REQ_DIM(C);
  REQ_DIM(V);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(embedding_bwd, dwte, dout, tok, N, C, V);
  ZS_CHECK(tokens_in_range(fn, tok, N, V));
  zs_cpu_embedding_bwd(dwte, dout, tok, N, C);
  return ZS_OK;
}

zs_status zs_k_rmsnorm_fwd(zs_kernels *k, void *out, float *rrms, const void *inp, const void *w,
                           float eps, int N, int C) {
  static const char fn[] = "zs_k_rmsnorm_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(rrms);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ(isfinite(eps) && eps >= 0.0f,
      "%s: eps = %g must be finite and >= 0: pass the config's rms_norm_eps (e.g. 1e-5)", fn,
      (double)eps);
  REQ_DIM(N);
  REQ_DIM(C);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(rmsnorm_fwd, out, rrms, inp, w, eps, N, C);
  zs_cpu_rmsnorm_fwd(out, rrms, inp, w, eps, N, C);
  return ZS_OK;
}

zs_status zs_k_rmsnorm_bwd(zs_kernels *k, void *dinp, void *dw, const void *dout, const void *inp,
                           const void *w, const float *rrms, int N, int C) {
  static const char fn[] = "zs_k_rmsnorm_bwd";
  REQ_CTX(k);
  REQ_PTR(dinp);
  REQ_PTR(dw);
  REQ_PTR(dout);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ_PTR(rrms);
  REQ_DISTINCT(dinp, dout);
  REQ_DIM(N);
  REQ_DIM(C);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(rmsnorm_bwd, dinp, dw, dout, inp, w, rrms, N, C);
  zs_cpu_rmsnorm_bwd(dinp, dw, dout, inp, w, rrms, N, C);
  return ZS_OK;
}

/* The rotary head dim: positive and even (the two halves rotate as pairs). */
static zs_status rope_dim(const char *fn, int D) {
  REQ_DIM(D);
  REQ(D % 2 == 0, "%s: head dim D = %d is odd: rotary embeddings rotate pairs, D must be even", fn,
      D);
  return ZS_OK;
}

/* Host only: no context. Validates theta and the Llama-3 scaling, then fills the tables. */
zs_status zs_k_rope_table(float *cos, float *sin, int T, int D, double theta,
                          const zs_k_rope_llama3 *llama3) {
  static const char fn[] = "zs_k_rope_table";
  REQ(cos != NULL, "%s: cos is NULL: pass a host array of T * D / 2 floats", fn);
  REQ(sin != NULL, "%s: sin is NULL: pass a host array of T * D / 2 floats", fn);
  REQ(cos != sin, "%s: cos and sin are the same array: pass two arrays", fn);
  REQ_DIM(T);
  ZS_CHECK(rope_dim(fn, D));
  REQ(isfinite(theta) && theta > 0.0,
      "%s: theta = %g must be finite and > 0: pass the config's rope_theta (e.g. 10000)", fn,
      theta);
  if (llama3) {
    const zs_k_rope_llama3 *s = llama3;
    REQ(isfinite(s->factor) && s->factor > 0.0,
        "%s: llama3 factor = %g must be finite and > 0 (rope_scaling.factor, e.g. 8)", fn,
        s->factor);
    REQ(isfinite(s->low_freq_factor) && isfinite(s->high_freq_factor) && s->low_freq_factor > 0.0 &&
            s->high_freq_factor > s->low_freq_factor,
        "%s: llama3 low_freq_factor = %g, high_freq_factor = %g: need 0 < low < high (e.g. 1 and "
        "4)",
        fn, s->low_freq_factor, s->high_freq_factor);
    REQ(s->original_max_position_embeddings > 0,
        "%s: llama3 original_max_position_embeddings = %d must be > 0 (e.g. 8192)", fn,
        s->original_max_position_embeddings);
  }
  zs_cpu_rope_table(cos, sin, T, D, theta, llama3);
  return ZS_OK;
}

/* Shape rules shared by the rotary forward and backward. */
static zs_status rope_dims(const char *fn, int B, int T, int H, int D) {
  REQ_DIM(B);
  REQ_DIM(T);
  REQ_DIM(H);
  return rope_dim(fn, D);
}

zs_status zs_k_rope_fwd(zs_kernels *k, void *out, const void *inp, const float *cos,
                        const float *sin, int B, int T, int H, int D) {
  static const char fn[] = "zs_k_rope_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(inp);
  REQ_PTR(cos);
  REQ_PTR(sin);
  ZS_CHECK(rope_dims(fn, B, T, H, D));
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(rope_fwd, out, inp, cos, sin, B, T, H, D);
  zs_cpu_rope_fwd(out, inp, cos, sin, B, T, H, D);
  return ZS_OK;
}

zs_status zs_k_rope_bwd(zs_kernels *k, void *dinp, const void *dout, const float *cos,
                        const float *sin, int B, int T, int H, int D) {
  static const char fn[] = "zs_k_rope_bwd";
  REQ_CTX(k);
  REQ_PTR(dinp);
  REQ_PTR(dout);
  REQ_PTR(cos);
  REQ_PTR(sin);
  REQ_DISTINCT(dinp, dout);
  ZS_CHECK(rope_dims(fn, B, T, H, D));
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(rope_bwd, dinp, dout, cos, sin, B, T, H, D);
  zs_cpu_rope_bwd(dinp, dout, cos, sin, B, T, H, D);
  return ZS_OK;
}

zs_status zs_k_swiglu_fwd(zs_kernels *k, void *out, const void *gate, const void *up, size_t n) {
  static const char fn[] = "zs_k_swiglu_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(gate);
  REQ_PTR(up);
  REQ_DIM(n);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(swiglu_fwd, out, gate, up, n);
  zs_cpu_swiglu_fwd(out, gate, up, n);
  return ZS_OK;
}

zs_status zs_k_swiglu_bwd(zs_kernels *k, void *dgate, void *dup, const void *dout, const void *gate,
                          const void *up, size_t n) {
  static const char fn[] = "zs_k_swiglu_bwd";
  REQ_CTX(k);
  REQ_PTR(dgate);
  REQ_PTR(dup);
  REQ_PTR(dout);
  REQ_PTR(gate);
  REQ_PTR(up);
  REQ_DISTINCT(dgate, dup);
  REQ_DISTINCT(dgate, dout);
  REQ_DISTINCT(dup, dout);
  REQ_DIM(n);
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(swiglu_bwd, dgate, dup, dout, gate, up, n);
  zs_cpu_swiglu_bwd(dgate, dup, dout, gate, up, n);
  return ZS_OK;
}

/* Shape rules shared by the GQA attention forward and backward: dims > 0, whole groups. */
static zs_status gqa_dims(const char *fn, int B, int T, int NH, int NKV, int D) {
  REQ_DIM(B);
  REQ_DIM(T);
  REQ_DIM(NH);
  REQ_DIM(NKV);
  REQ_DIM(D);
  REQ(NH % NKV == 0,
      "%s: NKV = %d key/value heads do not divide NH = %d query heads: each kv head must serve "
      "a whole group of NH / NKV query heads",
      fn, NKV, NH);
  return ZS_OK;
}

zs_status zs_k_gqa_attention_fwd(zs_kernels *k, void *out, float *lse, const void *q,
                                 const void *key, const void *val, int B, int T, int NH, int NKV,
                                 int D) {
  static const char fn[] = "zs_k_gqa_attention_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(lse);
  REQ_PTR(q);
  REQ_PTR(key);
  REQ_PTR(val);
  REQ_DISTINCT(out, q);
  REQ_DISTINCT(out, key);
  REQ_DISTINCT(out, val);
  ZS_CHECK(gqa_dims(fn, B, T, NH, NKV, D));
  if (k->dev == ZS_DEVICE_CUDA)
    CUDA_CALL(gqa_attention_fwd, out, lse, q, key, val, B, T, NH, NKV, D);
  zs_cpu_gqa_attention_fwd(out, lse, q, key, val, B, T, NH, NKV, D);
  return ZS_OK;
}

zs_status zs_k_gqa_attention_bwd(zs_kernels *k, void *dq, void *dkey, void *dval, const void *dout,
                                 const void *q, const void *key, const void *val, const void *out,
                                 const float *lse, int B, int T, int NH, int NKV, int D) {
  static const char fn[] = "zs_k_gqa_attention_bwd";
  REQ_CTX(k);
  REQ_PTR(dq);
  REQ_PTR(dkey);
  REQ_PTR(dval);
  REQ_PTR(dout);
  REQ_PTR(q);
  REQ_PTR(key);
  REQ_PTR(val);
  REQ_PTR(out);
  REQ_PTR(lse);
  REQ_DISTINCT(dq, dkey);
  REQ_DISTINCT(dq, dval);
  REQ_DISTINCT(dkey, dval);
  REQ_DISTINCT(dq, dout);
  ZS_CHECK(gqa_dims(fn, B, T, NH, NKV, D));
  if (k->dev == ZS_DEVICE_CUDA)
    CUDA_CALL(gqa_attention_bwd, dq, dkey, dval, dout, q, key, val, out, lse, B, T, NH, NKV, D);
  zs_cpu_gqa_attention_bwd(dq, dkey, dval, dout, q, key, val, out, lse, B, T, NH, NKV, D);
  return ZS_OK;
}
