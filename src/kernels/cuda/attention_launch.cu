/* The one attention entry of the CUDA kernels (attention.cuh): splits the batch into chunks that
 * fit a launch (grid.y = sequences x heads <= 65535) and, in the backward, the scratch (its row
 * terms), computes the row terms D_t = dout_t . out_t, and runs each chunk on the path that
 * ZS_CUDA_ATTN and zs_attn_tc_ready pick (attn_pick). */
#include "attention.cuh"

#define AL_WARPS 8 /* row-term kernel: one warp per (sequence, token, head) */

/* Dv[(b*NH + h)*T + t] = dout_t . out_t over head h's D channels; one warp per row. */
template <typename E> __global__ void attn_rowdot_kernel(zs_attn_args a) {
  const E *dout = (const E *)a.dout, *out = (const E *)a.out;
  const int lane = threadIdx.x & 31, T = a.T, NH = a.NH;
  const size_t row = (size_t)blockIdx.x * AL_WARPS + (threadIdx.x >> 5);
  if (row >= (size_t)a.B * T * NH) return;
  const size_t bt = row / NH; /* b*T + t */
  const int h = (int)(row % NH);
  const size_t off = bt * a.os + (size_t)h * a.D;
  float s = 0.0f;
  for (int d = lane; d < a.D; d += 32)
    s += zs_ld(&dout[off + d]) * zs_ld(&out[off + d]);
  s = zs_warp_sum(s);
  const size_t b = bt / T, t = bt % T;
  if (lane == 0) a.Dv[(b * NH + h) * T + t] = s;
}

/* Sequences per chunk: grid.y = nb*NH <= 65535 and, in the backward (bwd), nb*NH*T row terms
   within the scratch; the forward uses no scratch and is not limited by it. */
static zs_status attn_chunk_size(const char *fn, const zs_attn_args *a, int bwd, int *bc) {
  const size_t per_b = (size_t)a->NH * a->T * sizeof(float); /* > 0: the callers check dims */
  const size_t grid_fit = 65535 / (size_t)a->NH;
  const size_t fit = bwd ? ZS_SCRATCH_BYTES / per_b : grid_fit;
  if (grid_fit < 1)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "%s: NH = %d heads exceed one launch's 65535 (grid.y)", fn,
                   a->NH);
  if (fit < 1)
    return zs_kerr(ZS_ERR_UNSUPPORTED,
                   "%s: NH * T = %d * %d row terms of one sequence exceed the backward's %zu-byte "
                   "scratch",
                   fn, a->NH, a->T, (size_t)ZS_SCRATCH_BYTES);
  const size_t c = fit < grid_fit ? fit : grid_fit;
  *bc = (int)((size_t)a->B < c ? (size_t)a->B : c);
  return ZS_OK;
}

/* Whether a runs on the tensor cores (*tc) under k's ZS_CUDA_ATTN: simt never; auto where
   zs_attn_tc_ready says they can; tc wherever the dtype and head size allow, and a call they
   cannot run then fails with ZS_ERR_UNSUPPORTED naming the condition instead of falling back. */
static zs_status attn_pick(const zs_cuda_kctx *k, const char *fn, const zs_attn_args *a, int bwd,
                           int *tc) {
  *tc = 0;
  if (k->attn == ZS_ATTN_SIMT || !zs_attn_tc_applies(k->dt, a->D)) return ZS_OK;
  char why[256] = "";
  ZS_CHECK(zs_attn_tc_ready(fn, a, bwd, tc, why, sizeof why));
  if (!*tc && k->attn == ZS_ATTN_TC)
    return zs_kerr(ZS_ERR_UNSUPPORTED,
                   "%s: ZS_CUDA_ATTN=tc, and the tensor cores cannot run this bf16 D = %d %s: %s "
                   "(ZS_CUDA_ATTN=auto falls back to the SIMT kernels)",
                   fn, a->D, bwd ? "backward" : "forward", why);
  return ZS_OK;
}

/* Byte address p + n elements (p may be NULL: a pointer the call does not use). */
static const void *attn_adv(const void *p, size_t n, size_t esize) {
  return p ? (const void *)((const char *)p + n * esize) : NULL;
}

/* The chunk of sequences b0 .. b0+nb-1 of a: every pointer moved to sequence b0. */
static zs_attn_args attn_chunk(const zs_attn_args *a, int b0, int nb, size_t esize) {
  zs_attn_args c = *a;
  const size_t bt = (size_t)b0 * a->T, lo = (size_t)b0 * a->NH * a->T;
  c.q = attn_adv(a->q, bt * a->qs, esize);
  c.k = attn_adv(a->k, bt * a->ks, esize);
  c.v = attn_adv(a->v, bt * a->ks, esize);
  c.out = attn_adv(a->out, bt * a->os, esize);
  c.dout = attn_adv(a->dout, bt * a->os, esize);
  c.o = (void *)attn_adv(a->o, bt * a->os, esize);
  c.dq = (void *)attn_adv(a->dq, bt * a->qs, esize);
  c.dk = (void *)attn_adv(a->dk, bt * a->ks, esize);
  c.dv = (void *)attn_adv(a->dv, bt * a->ks, esize);
  c.lse = a->lse ? a->lse + lo : NULL;
  c.B = nb;
  return c;
}

zs_status zs_attn_fwd(zs_cuda_kctx *k, const char *fn, const zs_attn_args *a) {
  int bc, tc;
  ZS_CHECK(attn_chunk_size(fn, a, 0, &bc));
  ZS_CHECK(attn_pick(k, fn, a, 0, &tc));
  const size_t es = k->dt == ZS_BF16 ? 2 : 4;
  for (int b0 = 0; b0 < a->B; b0 += bc) {
    const zs_attn_args c = attn_chunk(a, b0, a->B - b0 < bc ? a->B - b0 : bc, es);
    ZS_CHECK(tc ? zs_attn_tc_fwd(k, &c) : zs_attn_simt_fwd(k, &c));
    ZS_CHECK(zs_kcu_launched(fn));
  }
  return ZS_OK;
}

zs_status zs_attn_bwd(zs_cuda_kctx *k, const char *fn, const zs_attn_args *a) {
  int bc, tc;
  ZS_CHECK(attn_chunk_size(fn, a, 1, &bc));
  ZS_CHECK(attn_pick(k, fn, a, 1, &tc));
  const size_t es = k->dt == ZS_BF16 ? 2 : 4;
  for (int b0 = 0; b0 < a->B; b0 += bc) {
    zs_attn_args c = attn_chunk(a, b0, a->B - b0 < bc ? a->B - b0 : bc, es);
    c.Dv = (float *)k->scratch; /* the previous chunk's kernels precede on the stream */
    const size_t rows = (size_t)c.B * c.T * c.NH;
    const unsigned grid = (unsigned)((rows + AL_WARPS - 1) / AL_WARPS);
    ZS_DT_DISPATCH(k->dt, E, attn_rowdot_kernel<E><<<grid, AL_WARPS * 32, 0, k->stream>>>(c));
    ZS_CHECK(zs_kcu_launched(fn));
    ZS_CHECK(tc ? zs_attn_tc_bwd(k, &c) : zs_attn_simt_bwd(k, &c));
    ZS_CHECK(zs_kcu_launched(fn));
  }
  return ZS_OK;
}
