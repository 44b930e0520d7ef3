/* Tensor-parallel layers (zs_k_tp_*, include/zshard_kernels.h): the kernels' matmuls composed with
 * the engine's tp-group collectives (Megatron's f and g, their sequence-parallel forms). The
 * arguments are checked here on each rank alone (nothing is sent on a refusal: its peers then wait
 * in the collective until the engine's comm_timeout_s, as the engine's own calls do). */
#include <stddef.h>

#include "kernels/kernels_ctx.h"
#include "kernels/kerr.h"
#include "zshard_kernels.h"

/* The tp group's size T and this rank's place q; sp 0 or 1 with N a multiple of T under sp. */
static zs_status group(const char *fn, zs_kernels *k, zs_engine *e, int sp, int N, int *q, int *T) {
  REQ_CTX(k);
  REQ(e != NULL, "%s: the engine is NULL: pass the engine whose tp group the layer spans", fn);
  REQ(sp == 0 || sp == 1, "%s: sp = %d: 0 (every rank holds every row) or 1 (sequence parallel)",
      fn, sp);
  REQ_DIM(N);
  const zs_status st = zs_engine_mesh(e, ZS_MESH_TP, q, T);
  if (st != ZS_OK) return st;
  REQ(!sp || N % *T == 0,
      "%s: N = %d rows do not split over the tp group's %d ranks: sequence parallelism needs a "
      "multiple of it",
      fn, N, *T);
  return ZS_OK;
}

/* Bytes of n elements of k's dtype. */
static size_t bytes_of(const zs_kernels *k, size_t n) {
  return n * (k->dt == ZS_BF16 ? 2 : 4);
}

zs_status zs_k_tp_gather(zs_kernels *k, zs_engine *e, int sp, void *all, const void *rows, int N,
                         int C) {
  static const char fn[] = "zs_k_tp_gather";
  int q = 0, T = 1;
  ZS_CHECK(group(fn, k, e, sp, N, &q, &T));
  REQ_PTR(all);
  REQ_PTR(rows);
  REQ_DIM(C);
  if (!sp || T == 1)
    return all == rows ? ZS_OK : zs_k_copy(k, all, rows, bytes_of(k, (size_t)N * (size_t)C));
  REQ(all != rows, "%s: all and rows are the same buffer: gather into a separate buffer", fn);
  return zs_engine_all_gather(e, ZS_MESH_TP, rows, all, (size_t)(N / T) * (size_t)C, k->dt);
}

zs_status zs_k_tp_sum(zs_kernels *k, zs_engine *e, int sp, void *rows, void *part, int N, int C) {
  static const char fn[] = "zs_k_tp_sum";
  int q = 0, T = 1;
  ZS_CHECK(group(fn, k, e, sp, N, &q, &T));
  REQ_PTR(rows);
  REQ_PTR(part);
  REQ_DIM(C);
  const size_t n = (size_t)N * (size_t)C;
  if (!sp || T == 1) {
    if (T > 1) ZS_CHECK(zs_engine_all_reduce(e, ZS_MESH_TP, part, n, k->dt));
    return rows == part ? ZS_OK : zs_k_copy(k, rows, part, bytes_of(k, n));
  }
  REQ(rows != part, "%s: rows and part are the same buffer: sum into a separate buffer", fn);
  return zs_engine_reduce_scatter(e, ZS_MESH_TP, part, rows, n / (size_t)T, k->dt);
}

/* A failure of the kernel a layer runs, named by the layer. */
static zs_status layer_rc(zs_status rc, const char *fn) {
  return rc == ZS_OK ? rc : zs_kerr_wrap(rc, "%s", fn);
}

/* Every argument is checked before the collective, so that a refusal sends nothing. */
zs_status zs_k_tp_col_fwd(zs_kernels *k, zs_engine *e, int sp, void *out, void *all,
                          const void *inp, const void *w, const void *bias, int N, int C, int OCl) {
  static const char fn[] = "zs_k_tp_col_fwd";
  int q = 0, T = 1;
  ZS_CHECK(group(fn, k, e, sp, N, &q, &T));
  REQ_PTR(out);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ_DIM(C);
  REQ_DIM(OCl);
  if (sp) REQ_PTR(all); /* at T 1 too, so that a second layer may pass inp == all */
  if (sp && inp != all) ZS_CHECK(zs_k_tp_gather(k, e, sp, all, inp, N, C));
  return layer_rc(zs_k_matmul_fwd(k, out, sp ? all : inp, w, bias, N, C, OCl), fn);
}

/* The bias joins tp rank 0's part only, so that the sum holds it once. */
zs_status zs_k_tp_row_fwd(zs_kernels *k, zs_engine *e, int sp, void *out, void *part,
                          const void *inp, const void *w, const void *bias, int N, int Cl, int OC) {
  static const char fn[] = "zs_k_tp_row_fwd";
  int q = 0, T = 1;
  ZS_CHECK(group(fn, k, e, sp, N, &q, &T));
  REQ_PTR(out);
  if (sp) REQ_PTR(part);
  if (sp && T > 1) REQ(part != out, "%s: out and part are the same buffer: pass a scratch", fn);
  void *p = sp ? part : out;
  ZS_CHECK(layer_rc(zs_k_matmul_fwd(k, p, inp, w, q == 0 ? bias : NULL, N, Cl, OC), fn));
  return zs_k_tp_sum(k, e, sp, out, p, N, OC);
}

zs_status zs_k_tp_row_bwd(zs_kernels *k, zs_engine *e, int sp, void *dinp, void *dw, void *dbias,
                          void *dall, const void *dout, const void *inp, const void *w, int N,
                          int Cl, int OC) {
  static const char fn[] = "zs_k_tp_row_bwd";
  int q = 0, T = 1;
  ZS_CHECK(group(fn, k, e, sp, N, &q, &T));
  REQ_PTR(dw);
  REQ_PTR(dout);
  REQ_PTR(inp);
  REQ_PTR(w);
  REQ_DIM(Cl);
  REQ_DIM(OC);
  if (sp) REQ_PTR(dall);
  if (sp) ZS_CHECK(zs_k_tp_gather(k, e, sp, dall, dout, N, OC));
  return layer_rc(zs_k_matmul_bwd(k, dinp, dw, dbias, sp ? dall : dout, inp, w, N, Cl, OC), fn);
}
