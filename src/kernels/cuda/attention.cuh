/* Causal attention on CUDA, one implementation for multi-head (GPT-2) and grouped-query (Llama)
 * heads. Internal.
 *
 * A problem is base pointers plus row strides (in elements): element d of head h of token t of
 * sequence b of q is q[(b*T + t)*qs + h*D + d]; k and v (and dk, dv) use ks and kv head g = h / G,
 * out and dout use os, lse and the row terms are [B, NH, T] fp32. GPT-2's packed qkv[B,T,3C] is
 * q = qkv, k = qkv + C, v = qkv + 2C, qs = ks = 3C, os = C, G = 1; Llama's separate buffers are
 * qs = os = NH*D, ks = NKV*D.
 *
 * Two paths share this contract (attention_launch.cu picks one per call):
 *  - tensor cores (attention_tc.cu): bf16, D a multiple of 16 (<= 128), 16-byte aligned rows;
 *    bf16 products with fp32 accumulation, softmax statistics in fp32, P and dS rounded to bf16
 *    for their matrix products.
 *  - SIMT (attention_simt.cu): fp32 storage, other head sizes, or a device that cannot run the
 *    tensor-core kernels; fp32 arithmetic throughout.
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
   batch chunks that fit one launch and the scratch. The caller has checked D <= 128 (with its
   own wording); fn names the public call in errors. */
zs_status zs_attn_fwd(zs_cuda_kctx *k, const char *fn, const zs_attn_args *a);
zs_status zs_attn_bwd(zs_cuda_kctx *k, const char *fn, const zs_attn_args *a);

/* SIMT path, one chunk (a->B sequences; grid.y limits are the caller's). a->Dv must be filled
   for the backward. */
zs_status zs_attn_simt_fwd(zs_cuda_kctx *k, const zs_attn_args *a);
zs_status zs_attn_simt_bwd(zs_cuda_kctx *k, const zs_attn_args *a);

/* Tensor-core path. zs_attn_tc_ready: 1 when it can run a (bf16, D % 16 == 0, aligned rows, a
   compute capability >= 8.0 device that grants the kernels' shared memory), else 0 with no error
   left pending. The launchers then run one chunk as the SIMT ones do. */
int zs_attn_tc_ready(const zs_cuda_kctx *k, const zs_attn_args *a, int bwd);
zs_status zs_attn_tc_fwd(zs_cuda_kctx *k, const zs_attn_args *a);
zs_status zs_attn_tc_bwd(zs_cuda_kctx *k, const zs_attn_args *a);

#endif
