/* The tensor-parallel layers (zs_k_tp_*) on the CPU over MPI ranks: a Megatron MLP-like region
 *
 *   h = x A^T + a,  g = x B^T + b     column-parallel (A, B [OC, C] split along dim 0)
 *   y = (h * g) W^T + c               row-parallel (W [C, OC] split along dim 1), c whole
 *   L = sum(y * R)
 *
 * at tp 1, 2 and 4, with and without sequence parallelism, on 4 ranks. Every rank computes the
 * whole region in float64 from the whole tensors (written here from the formulas above) and
 * checks its share of the kernels' results: y and dL/dx (its rows with sp), the slices of dA, da,
 * dB, db and dW, and dc whole; tolerance 1e-5 of each array's largest magnitude (fp32 sums). Also
 * the refusals: sp 2, rows that do not split over the group, a missing scratch buffer, a missing
 * weight (refused before the collective: the gather's buffer untouched). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_test.h"
#include "zshard_kernels.h"

enum { N = 8, C = 6, OC = 8 };

static double val(int seed, int i) { /* [-1, 1) from (seed, index) */
  uint64_t s = (uint64_t)seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 1) * 0xD1B54A32D192ED69ull;
  return (double)(zs_test_rand(&s) >> 11) * 0x1.0p-52 - 1.0;
}

/* Every whole tensor, in fp32 (what the kernels get) and widened (the reference's inputs). */
static float x[N * C], A[OC * C], a[OC], Bw[OC * C], b[OC], W[C * OC], c[C], R[N * C];

static void fill(float *p, int n, int seed, double scale) {
  for (int i = 0; i < n; i++)
    p[i] = (float)(scale * val(seed, i));
}

/* The float64 region: y, and every gradient of L. */
typedef struct {
  double y[N * C], dx[N * C], dA[OC * C], da[OC], dB[OC * C], db[OC], dW[C * OC], dc[C];
} ref;

static void reference(ref *r) {
  static double h[N * OC], g[N * OC], act[N * OC], dact[N * OC];
  memset(r, 0, sizeof *r);
  for (int n = 0; n < N; n++)
    for (int o = 0; o < OC; o++) {
      double sh = a[o], sg = b[o];
      for (int i = 0; i < C; i++) {
        sh += (double)x[n * C + i] * A[o * C + i];
        sg += (double)x[n * C + i] * Bw[o * C + i];
      }
      h[n * OC + o] = sh, g[n * OC + o] = sg, act[n * OC + o] = sh * sg;
    }
  for (int n = 0; n < N; n++)
    for (int j = 0; j < C; j++) {
      double s = c[j];
      for (int o = 0; o < OC; o++)
        s += act[n * OC + o] * W[j * OC + o];
      r->y[n * C + j] = s;
      r->dc[j] += R[n * C + j];
    }
  for (int n = 0; n < N; n++)
    for (int o = 0; o < OC; o++) {
      double s = 0;
      for (int j = 0; j < C; j++) {
        s += (double)R[n * C + j] * W[j * OC + o];
        r->dW[j * OC + o] += (double)R[n * C + j] * act[n * OC + o];
      }
      dact[n * OC + o] = s;
    }
  for (int n = 0; n < N; n++)
    for (int o = 0; o < OC; o++) {
      const double dh = dact[n * OC + o] * g[n * OC + o], dg = dact[n * OC + o] * h[n * OC + o];
      r->da[o] += dh, r->db[o] += dg;
      for (int i = 0; i < C; i++) {
        r->dA[o * C + i] += dh * x[n * C + i];
        r->dB[o * C + i] += dg * x[n * C + i];
        r->dx[n * C + i] += dh * A[o * C + i] + dg * Bw[o * C + i];
      }
    }
}

/* got[i] against want[off + i * stride .. ] blocks: `rows` rows of `cols` from a want row of
   width `ld` starting at column `c0`, row `r0`; relative to want's largest magnitude. */
static void check(const char *what, const float *got, const double *want, int wn, int r0, int rows,
                  int c0, int cols, int ld, int tp, int sp) {
  double big = 0, worst = 0;
  for (int i = 0; i < wn; i++)
    big = fmax(big, fabs(want[i]));
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++)
      worst = fmax(worst, fabs(got[i * cols + j] - want[(r0 + i) * ld + c0 + j]));
  ZS_EXPECT(worst <= 1e-5 * big, "tp %d sp %d: %s off by %.3g of its largest %.3g", tp, sp, what,
            worst / big, big);
}

static void region(zs_comm *comm, int tp, int sp, const ref *r) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 0;
  cfg.tp_size = tp;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  zs_tensor_desc d = {"w", 1, {4, 0, 0, 0}, 0};
  zs_unit *u = NULL;
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "unused", 1, &d, &u));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  zs_kernels *k = NULL;
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k));
  int q = 0, T = 1;
  ZS_OK_OR_DIE(zs_engine_mesh(e, ZS_MESH_TP, &q, &T));
  const int OCl = OC / T, Nl = sp ? N / T : N, r0 = sp ? q * Nl : 0;
  /* this rank's slices: rows of A, B, a, b; columns of W */
  static float Al[OC * C], Bl[OC * C], Wl[C * OC];
  memcpy(Al, A + q * OCl * C, sizeof(float) * (size_t)(OCl * C));
  memcpy(Bl, Bw + q * OCl * C, sizeof(float) * (size_t)(OCl * C));
  for (int j = 0; j < C; j++)
    memcpy(Wl + j * OCl, W + j * OC + q * OCl, sizeof(float) * (size_t)OCl);
  static float xall[N * C], h[N * OC], g[N * OC], act[N * OC], y[N * C], part[N * C];
  static float dall[N * C], dact[N * OC], dh[N * OC], dg[N * OC], dxp[N * C], dx[N * C];
  static float dA[OC * C], da[OC], dB[OC * C], db[OC], dW[C * OC], dc[C];
  const float *xin = x + r0 * C, *dy = R + r0 * C;
  ZS_OK_OR_DIE(zs_k_tp_col_fwd(k, e, sp, h, xall, xin, Al, a + q * OCl, N, C, OCl));
  ZS_OK_OR_DIE(zs_k_tp_col_fwd(k, e, sp, g, xall, sp ? xall : xin, Bl, b + q * OCl, N, C, OCl));
  for (int i = 0; i < N * OCl; i++)
    act[i] = h[i] * g[i];
  ZS_OK_OR_DIE(zs_k_tp_row_fwd(k, e, sp, y, part, act, Wl, c, N, OCl, C));
  check("y", y, r->y, N * C, r0, Nl, 0, C, C, tp, sp);
  memset(dact, 0, sizeof dact), memset(dW, 0, sizeof dW), memset(dc, 0, sizeof dc);
  ZS_OK_OR_DIE(zs_k_tp_row_bwd(k, e, sp, dact, dW, dc, dall, dy, act, Wl, N, OCl, C));
  for (int i = 0; i < N * OCl; i++)
    dh[i] = dact[i] * g[i], dg[i] = dact[i] * h[i];
  memset(dxp, 0, sizeof dxp), memset(dA, 0, sizeof dA), memset(da, 0, sizeof da);
  memset(dB, 0, sizeof dB), memset(db, 0, sizeof db);
  const float *xs = sp ? xall : x; /* every row of the input */
  ZS_OK_OR_DIE(zs_k_matmul_bwd(k, dxp, dA, da, dh, xs, Al, N, C, OCl));
  ZS_OK_OR_DIE(zs_k_matmul_bwd(k, dxp, dB, db, dg, xs, Bl, N, C, OCl));
  ZS_OK_OR_DIE(zs_k_tp_sum(k, e, sp, dx, dxp, N, C));
  check("dL/dx", dx, r->dx, N * C, r0, Nl, 0, C, C, tp, sp);
  check("dA", dA, r->dA, OC * C, q * OCl, OCl, 0, C, C, tp, sp);
  check("da", da, r->da, OC, 0, 1, q * OCl, OCl, OC, tp, sp);
  check("dB", dB, r->dB, OC * C, q * OCl, OCl, 0, C, C, tp, sp);
  check("db", db, r->db, OC, 0, 1, q * OCl, OCl, OC, tp, sp);
  check("dW", dW, r->dW, C * OC, 0, C, q * OCl, OCl, OC, tp, sp);
  check("dc", dc, r->dc, C, 0, 1, 0, C, C, tp, sp);
  /* refusals, on every rank alike (nothing sent) */
  ZS_EXPECT_STATUS(zs_k_tp_sum(k, e, 2, dx, dxp, N, C), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_k_tp_gather(k, NULL, 0, xall, x, N, C), ZS_ERR_INVALID_ARG);
  if (T > 1) {
    ZS_EXPECT_STATUS(zs_k_tp_gather(k, e, 1, xall, x, N + 1, C), ZS_ERR_INVALID_ARG);
    ZS_EXPECT(strstr(zs_last_error(), "do not split over the tp group"), "%s", zs_last_error());
    ZS_EXPECT_STATUS(zs_k_tp_col_fwd(k, e, 1, h, NULL, xin, Al, NULL, N, C, OCl),
                     ZS_ERR_INVALID_ARG);
    ZS_EXPECT_STATUS(zs_k_tp_row_fwd(k, e, 1, y, NULL, act, Wl, c, N, OCl, C), ZS_ERR_INVALID_ARG);
    /* a bad weight is refused before the gather: nothing sent, the scratch untouched */
    for (int i = 0; i < N * C; i++)
      xall[i] = dall[i] = 7.0f;
    ZS_EXPECT_STATUS(zs_k_tp_col_fwd(k, e, 1, h, xall, xin, NULL, NULL, N, C, OCl),
                     ZS_ERR_INVALID_ARG);
    ZS_EXPECT(strstr(zs_last_error(), "zs_k_tp_col_fwd"), "%s", zs_last_error());
    ZS_EXPECT_STATUS(zs_k_tp_row_bwd(k, e, 1, dact, dW, dc, dall, dy, act, NULL, N, OCl, C),
                     ZS_ERR_INVALID_ARG);
    int kept = 1;
    for (int i = 0; i < N * C; i++)
      kept &= xall[i] == 7.0f && dall[i] == 7.0f;
    ZS_EXPECT(kept, "a refused tp layer wrote its gather's buffer");
  }
  zs_k_destroy(k);
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  fill(x, N * C, 1, 1), fill(A, OC * C, 2, 0.5), fill(a, OC, 3, 0.2), fill(Bw, OC * C, 4, 0.5);
  fill(b, OC, 5, 0.2), fill(W, C * OC, 6, 0.5), fill(c, C, 7, 0.2), fill(R, N * C, 8, 1);
  static ref r;
  reference(&r);
  const int world = zs_comm_size(comm);
  for (int tp = 1; tp <= world && tp <= 4; tp *= 2)
    for (int sp = 0; sp <= 1; sp++)
      region(comm, tp, sp, &r);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_kernels_tp");
}
