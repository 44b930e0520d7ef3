/* Causal attention on CUDA, one implementation for multi-head (GPT-2) and grouped-query (Llama)
 * heads. Internal.
 *
 * A problem is base pointers plus row strides (in elements): element d of head h of token t of
 * sequence b of q is q[(b*T + t)*qs + h*D + d]; k and v (and dk, dv) use ks and kv head g = h / G,
 * out and dout use os, lse and the row terms are [B, NH, T] fp32. GPT-2's packed qkv[B,T,3C] is
 * q = qkv, k = qkv + C, v = qkv + 2C, qs = ks = 3C, os = C, G = 1; Llama's separate buffers are
 * qs = os = NH*D, ks = NKV*D.
 *
 * Two paths share this contract (attention_launch.cu picks one per call, zs_attn_tc_ready):
 *  - tensor cores (attention_tc.cu), only when every one of these holds: bf16 storage; D a
 *    multiple of 16 up to 128; q, k, v (and dout in the backward) 16-byte aligned, which for
 *    GPT-2's packed qkv covers the +C and +2C offsets; row strides qs, ks, os multiples of 8
 *    elements; a device of compute capability >= 8.0; kernels compiled from compute_80 or later
 *    PTX (earlier targets get empty bodies that trap); the kernels' dynamic shared memory
 *    granted (up to 96768 bytes at D = 128). bf16 products with fp32 accumulation, softmax
 *    statistics in fp32, P and dS rounded to bf16 for their matrix products.
 *  - SIMT (attention_simt.cu): everything else (fp32, other head sizes, a condition above that
 *    fails); fp32 arithmetic throughout.
 * ZS_CUDA_ATTN (zs_attn_mode, kctx.cuh) overrides the pick: simt always takes SIMT; tc refuses
 * with ZS_ERR_UNSUPPORTED, naming the condition, a bf16 call with D % 16 == 0 that the tensor
 * cores cannot run, instead of falling back (the tests run under tc).
 * Backward on both: dq, dk, dv are accumulated (+=); every element is summed by one thread in a
 * fixed order (no atomics), so repeated runs give the same bits. */
#ifndef ZS_KERNELS_CUDA_ATTENTION_CUH
#define ZS_KERNELS_CUDA_ATTENTION_CUH

#include "kctx.cuh"

/* One attention call (or one batch chunk of it: the pointers then start at its first sequence). */
typedef struct {
  const void *q, *k, *v;  /* inputs, strides qs, ks, ks */
  const void *out, *dout; /* backward: the forward's output and its gradient, stride os */
  void *o;                /* forward: the output, stride os */
  void *dq, *dk, *dv;     /* backward: gradients (+=), strides qs, ks, ks */
  float *lse;             /* [B, NH, T]: written by the forward, read by the backward */
  float *Dv;              /* backward: row terms dout_t . out_t, [B, NH, T] (kernel scratch) */
  size_t qs, ks, os;      /* row strides in elements */
  int B, T, NH, G, D;     /* G = NH / NKV query heads per kv head */
  float scale;            /* 1 / sqrt(D) */
} zs_attn_args;

/* Runs the forward (writes o and lse) or the backward (adds into dq, dk, dv) on k's stream, in
   batch chunks that fit one launch (and, in the backward, the scratch's row terms). The caller
   has checked D <= 128 (with its own wording); fn names the public call in errors. */
zs_status zs_attn_fwd(zs_cuda_kctx *k, const char *fn, const zs_attn_args *a);
zs_status zs_attn_bwd(zs_cuda_kctx *k, const char *fn, const zs_attn_args *a);

/* SIMT path, one chunk (a->B sequences; grid.y limits are the caller's). a->Dv must be filled
   for the backward. */
zs_status zs_attn_simt_fwd(zs_cuda_kctx *k, const zs_attn_args *a);
zs_status zs_attn_simt_bwd(zs_cuda_kctx *k, const zs_attn_args *a);

/* Tensor-core path. zs_attn_tc_applies: the dtype and head sizes its kernels exist for.
   zs_attn_tc_ready, for a call they apply to: *ok = 1 when the tensor cores can run a, else
   *ok = 0 and why (n bytes) names the first condition of the list above that fails, with the
   errors of its own CUDA queries cleared; ZS_ERR_DEVICE (through zs_kerr, naming fn) for a CUDA
   error of earlier work found pending before those queries (taken, as a launch check would take
   it, not silently cleared). The launchers then run one chunk as the SIMT ones do. */
static inline int zs_attn_tc_applies(zs_dtype dt, int D) {
  return dt == ZS_BF16 && D >= 16 && D <= 128 && D % 16 == 0;
}
zs_status zs_attn_tc_ready(const char *fn, const zs_attn_args *a, int bwd, int *ok, char *why,
                           size_t n);
zs_status zs_attn_tc_fwd(zs_cuda_kctx *k, const zs_attn_args *a);
zs_status zs_attn_tc_bwd(zs_cuda_kctx *k, const zs_attn_args *a);

#endif
