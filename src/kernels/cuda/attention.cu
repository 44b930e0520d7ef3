/* GPT-2's causal multi-head attention on CUDA: the packed qkv[B,T,3C] (q | k | v, head h at
 * channels h*hs .. h*hs+hs-1 of each) handed to the one strided attention of attention.cuh as
 * q = qkv, k = qkv + C, v = qkv + 2C with row stride 3C and groups of one head (G = 1); out,
 * dout [B,T,C], lse [B,NH,T]. hs <= 128. The tensor cores run bf16 with hs a multiple of 16 when
 * qkv (and dout) are 16-byte aligned (C % 16 == 0 then aligns the +C, +2C parts and the 3C rows),
 * the device is sm_80+ and grants the shared memory; everything else runs on the SIMT kernels
 * (attention.cuh has the full list; attention_launch.cu picks, by ZS_CUDA_ATTN). */
#include "attention.cuh"

/* The packed layout as strided arguments; element size es. */
static zs_attn_args attn_packed(const void *qkv, size_t es, int B, int T, int C, int NH) {
  zs_attn_args a = {};
  a.q = qkv;
  a.k = (const char *)qkv + (size_t)C * es;
  a.v = (const char *)qkv + 2 * (size_t)C * es;
  a.qs = a.ks = 3 * (size_t)C;
  a.os = (size_t)C;
  a.B = B, a.T = T, a.NH = NH, a.G = 1, a.D = C / NH;
  a.scale = 1.0f / sqrtf((float)(C / NH));
  return a;
}

/* Refuses head sizes beyond the kernels' 128. */
static zs_status attn_check_hs(const char *fn, int C, int NH) {
  const int hs = C / NH;
  if (hs > 128)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: head size %d > 128 is not supported on CUDA", fn, hs);
  return ZS_OK;
}

extern "C" zs_status zs_cuda_attention_fwd(zs_cuda_kctx *k, void *out, float *lse, const void *qkv,
                                           int B, int T, int C, int NH) {
  static const char fn[] = "zs_cuda_attention_fwd";
  ZS_CHECK(attn_check_hs(fn, C, NH));
  zs_attn_args a = attn_packed(qkv, k->dt == ZS_BF16 ? 2 : 4, B, T, C, NH);
  a.o = out;
  a.lse = lse;
  return zs_attn_fwd(k, fn, &a);
}

extern "C" zs_status zs_cuda_attention_bwd(zs_cuda_kctx *k, void *dqkv, const void *dout,
                                           const void *qkv, const void *out, const float *lse,
                                           int B, int T, int C, int NH) {
  static const char fn[] = "zs_cuda_attention_bwd";
  ZS_CHECK(attn_check_hs(fn, C, NH));
  const size_t es = k->dt == ZS_BF16 ? 2 : 4;
  zs_attn_args a = attn_packed(qkv, es, B, T, C, NH);
  a.out = out;
  a.dout = dout;
  a.lse = (float *)lse; /* read only in the backward */
  a.dq = dqkv;
  a.dk = (char *)dqkv + (size_t)C * es;
  a.dv = (char *)dqkv + 2 * (size_t)C * es;
  return zs_attn_bwd(k, fn, &a);
}
