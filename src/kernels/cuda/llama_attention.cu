/* Causal attention with grouped-query heads (Llama, Qwen2, Mistral) on CUDA: q, out, dout
 * [B,T,NH*D]; key, val [B,T,NKV*D]; lse [B,NH,T]; query head h reads kv head h / G, G = NH / NKV.
 * The separate buffers are handed to the one strided attention of attention.cuh (row strides
 * NH*D and NKV*D). D <= 128. The tensor cores run bf16 with D a multiple of 16 when q, key, val
 * (and dout) are 16-byte aligned, the device is sm_80+ and grants the shared memory; everything
 * else runs on the SIMT kernels (attention.cuh has the full list; attention_launch.cu picks, by
 * ZS_CUDA_ATTN). */
#include "llama_cuda.h"

#include "attention.cuh"

/* The GQA layout as strided arguments (inputs only). */
static zs_attn_args gqa_args(const void *q, const void *key, const void *val, int B, int T, int NH,
                             int NKV, int D) {
  zs_attn_args a = {};
  a.q = q, a.k = key, a.v = val;
  a.qs = a.os = (size_t)NH * D;
  a.ks = (size_t)NKV * D;
  a.B = B, a.T = T, a.NH = NH, a.G = NH / NKV, a.D = D;
  a.scale = 1.0f / sqrtf((float)D);
  return a;
}

/* Refuses head dims beyond the kernels' 128. */
static zs_status gqa_check_d(const char *fn, int D) {
  if (D > 128)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: head dim D = %d > 128 is not supported on CUDA", fn, D);
  return ZS_OK;
}

extern "C" zs_status zs_cuda_gqa_attention_fwd(zs_cuda_kctx *k, void *out, float *lse,
                                               const void *q, const void *key, const void *val,
                                               int B, int T, int NH, int NKV, int D) {
  static const char fn[] = "zs_cuda_gqa_attention_fwd";
  ZS_CHECK(gqa_check_d(fn, D));
  zs_attn_args a = gqa_args(q, key, val, B, T, NH, NKV, D);
  a.o = out;
  a.lse = lse;
  return zs_attn_fwd(k, fn, &a);
}

extern "C" zs_status zs_cuda_gqa_attention_bwd(zs_cuda_kctx *k, void *dq, void *dkey, void *dval,
                                               const void *dout, const void *q, const void *key,
                                               const void *val, const void *out, const float *lse,
                                               int B, int T, int NH, int NKV, int D) {
  static const char fn[] = "zs_cuda_gqa_attention_bwd";
  ZS_CHECK(gqa_check_d(fn, D));
  zs_attn_args a = gqa_args(q, key, val, B, T, NH, NKV, D);
  a.out = out;
  a.dout = dout;
  a.lse = (float *)lse; /* read only in the backward */
  a.dq = dq, a.dk = dkey, a.dv = dval;
  return zs_attn_bwd(k, fn, &a);
}
