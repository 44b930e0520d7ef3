/* Deterministic column sums in two passes: slice partials into scratch, then an ordered sum. */
#include "colreduce.cuh"

#define CR_COLS 32 /* columns per block: one warp-wide row segment */
#define CR_ROWS 8  /* warps per block, each walking rows of the slice */
#define CR_MAX_SLICES 64
#define CR_ROWS_PER_SLICE 64 /* below this many rows a slice is not worth its own block */

/* Block (column tile, slice s): partial[s][c] (and partial_n[s][c]) = sums over the slice's
   rows, reduced across the block's warps in a fixed order. */
template <typename T>
__global__ void __launch_bounds__(CR_COLS *CR_ROWS)
    colreduce_partial_kernel(float *partial, float *partial_n, const T *dout, const T *inp,
                             const float *mean, const float *rstd, int N, int C, int rows_per) {
  __shared__ float sh[CR_ROWS][CR_COLS], sh_n[CR_ROWS][CR_COLS];
  int c = blockIdx.x * CR_COLS + threadIdx.x;
  int s = blockIdx.y;
  int r0 = s * rows_per, r1 = min(N, r0 + rows_per);
  float a = 0.0f, an = 0.0f;
  if (c < C) {
    for (int r = r0 + threadIdx.y; r < r1; r += CR_ROWS) {
      float d = zs_ld(&dout[(size_t)r * C + c]);
      a += d;
      if (partial_n)
        an += d * ((zs_ld(&inp[(size_t)r * C + c]) - (mean ? mean[r] : 0.0f)) * rstd[r]);
    }
  }
  sh[threadIdx.y][threadIdx.x] = a;
  sh_n[threadIdx.y][threadIdx.x] = an;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int y = 1; y < CR_ROWS; y++) {
      a += sh[y][threadIdx.x];
      an += sh_n[y][threadIdx.x];
    }
    partial[(size_t)s * C + c] = a;
    if (partial_n) partial_n[(size_t)s * C + c] = an;
  }
}

/* dst[c] += partial[0][c] + partial[1][c] + ... (slices in order). */
template <typename T>
__global__ void colreduce_final_kernel(T *dst, T *dst_n, const float *partial,
                                       const float *partial_n, int nslices, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float a = 0.0f, an = 0.0f;
  for (int s = 0; s < nslices; s++) {
    a += partial[(size_t)s * C + c];
    if (partial_n) an += partial_n[(size_t)s * C + c];
  }
  if (dst) zs_st(&dst[c], zs_ld(&dst[c]) + a);
  if (dst_n) zs_st(&dst_n[c], zs_ld(&dst_n[c]) + an);
}

zs_status zs_cuda_colreduce(zs_cuda_kctx *k, void *dsum, void *dsum_n, const void *dout,
                            const void *inp, const float *mean, const float *rstd, int N, int C) {
  int nslices = (N + CR_ROWS_PER_SLICE - 1) / CR_ROWS_PER_SLICE;
  if (nslices > CR_MAX_SLICES) nslices = CR_MAX_SLICES;
  size_t per_slice = (size_t)C * (dsum_n ? 2 : 1) * sizeof(float);
  size_t fit = ZS_SCRATCH_BYTES / per_slice;
  if (fit < 1)
    return zs_kerr(ZS_ERR_UNSUPPORTED, "column reduction: C = %d needs more than %zu scratch bytes",
                   C, ZS_SCRATCH_BYTES);
  if ((size_t)nslices > fit) nslices = (int)fit;
  int rows_per = (N + nslices - 1) / nslices;
  nslices = (N + rows_per - 1) / rows_per; /* drop empty trailing slices */
  float *partial = (float *)k->scratch;
  float *partial_n = dsum_n ? partial + (size_t)nslices * C : NULL;
  dim3 grid((unsigned)((C + CR_COLS - 1) / CR_COLS), (unsigned)nslices), block(CR_COLS, CR_ROWS);
  ZS_DT_DISPATCH(k->dt, E,
                 colreduce_partial_kernel<E>
                 <<<grid, block, 0, k->stream>>>(partial, partial_n, (const E *)dout,
                                                 (const E *)inp, mean, rstd, N, C, rows_per));
  ZS_CHECK(zs_kcu_launched("column reduction (partials)"));
  ZS_DT_DISPATCH(k->dt, E,
                 colreduce_final_kernel<E><<<(C + 255) / 256, 256, 0, k->stream>>>(
                     (E *)dsum, (E *)dsum_n, partial, partial_n, nslices, C));
  return zs_kcu_launched("column reduction (final)");
}
