/* The exact sum of squares' bins (zs_cuda_sq_bins, src/device/cuda/sq_bins.cu) against its CPU
 * twin zs_cpu_sq_bins and against a definition written here, word for word after the host's
 * normalisation, on the inputs its per-warp grouping must get right: exponents spread over the
 * whole range, subnormals and zeros, infinities and NaNs (the count word), tails shorter than a
 * warp's round, and whole blocks of equal exponents with the largest mantissa (a block's bin then
 * reaches 65536 * (2^24 - 1)^2, just under 2^64: the worst case for overflow), each in one call
 * and in pieces. The CPU part (the twin against the definition and, at the worst case, against
 * the 128-bit total) runs everywhere, though without a GPU the test prints "SKIP: no CUDA device"
 * and ctest reports it skipped whatever the CPU part found. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "device/cpu/engine_ops.h"
#include "device/cuda/engine_cuda.h"
#include "device/ops.h"
#include "zs_test.h"

__extension__ typedef unsigned __int128 u128; /* the worst case's exact total */

#define NW ZS_SQ_NWORDS
#define BLOCK 65536 /* the block both sides normalise after */

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t next32(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* fp32 bits of element i (bf16 widened). */
static uint32_t bits_of(const void *x, zs_dtype dt, size_t i) {
  if (dt == ZS_BF16) return (uint32_t)((const uint16_t *)x)[i] << 16;
  uint32_t u;
  memcpy(&u, (const char *)x + i * 4, 4);
  return u;
}

/* Bin e's high 32 bits carried 16 bins up, e = 0 .. ZS_SQ_NBINS - 17 in order. */
static void normalise(uint64_t *b) {
  for (int e = 0; e + 16 < ZS_SQ_NBINS; e++) {
    b[e + 16] += b[e] >> 32;
    b[e] &= 0xffffffffu;
  }
}

/* The definition (engine_cuda.h): per element, E == 255 counts in the last word, else mant^2 into
   bin E (subnormals bin 1); each block of 65536 elements normalised, added, normalised at the end.
 */
static void sq_def(uint64_t *bins, const void *x, zs_dtype dt, size_t n) {
  memset(bins, 0, NW * 8);
  for (size_t b = 0; b < n; b += BLOCK) {
    uint64_t loc[NW] = {0};
    for (size_t i = b; i < n && i < b + BLOCK; i++) {
      const uint32_t u = bits_of(x, dt, i), E = (u >> 23) & 0xff, M = u & 0x7fffff;
      if (E == 255) {
        loc[ZS_SQ_NBINS]++;
        continue;
      }
      const uint64_t mant = E ? (M | 0x800000u) : M;
      loc[E ? E : 1] += mant * mant;
    }
    normalise(loc);
    for (int k = 0; k < NW; k++)
      bins[k] += loc[k];
  }
  normalise(bins);
}

/* Input kinds. */
enum { MIXED, SUBNORMAL, SPECIALS, WORST };

/* n elements of dt of the given kind. */
static void *make(int kind, zs_dtype dt, size_t n) {
  void *x = malloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    uint32_t u = next32();
    if (kind == MIXED) /* any finite exponent, either sign */
      u = (u & 0x807fffffu) | ((next32() % 255u) << 23);
    else if (kind == SUBNORMAL) /* exponent 0, a tenth of them zero */
      u = next32() % 10 == 0 ? (u & 0x80000000u) : (u & 0x807fffffu);
    else if (kind == SPECIALS) /* a small normal range with infinities and NaNs between */
      u = next32() % 7 == 0
              ? (0x7f800000u | (next32() % 3 ? 0 : 1 + (u & 0x3fffffu)) | (u & 0x80000000u))
              : ((u & 0x807fffffu) | ((120u + next32() % 8u) << 23));
    else /* WORST: one exponent, the largest mantissa */
      u = 0x647fffffu | (u & 0x80000000u);
    if (dt == ZS_BF16) {
      if (kind == WORST) u |= 0x007f0000u;
      ((uint16_t *)x)[i] = (uint16_t)(u >> 16);
    } else {
      memcpy((char *)x + i * 4, &u, 4);
    }
  }
  return x;
}

static const char *kind_name(int k) {
  return k == MIXED ? "mixed" : k == SUBNORMAL ? "subnormal" : k == SPECIALS ? "inf/nan" : "worst";
}

/* The CPU twin equals the definition; at the worst case, the bins equal the 128-bit total. */
static void check_cpu(int kind, zs_dtype dt, size_t n, const void *x, const uint64_t *def) {
  uint64_t cpu[NW] = {0};
  zs_cpu_sq_bins(cpu, x, dt, n);
  zs_sq_bins_normalise(cpu);
  ZS_EXPECT(!memcmp(cpu, def, sizeof cpu),
            "CPU sq_bins (%s, %s, n=%zu) differs from the definition", kind_name(kind),
            dt == ZS_BF16 ? "bf16" : "f32", n);
  if (kind != WORST) return;
  const uint32_t E = (bits_of(x, dt, 0) >> 23) & 0xff;
  const uint64_t mant = (bits_of(x, dt, 0) & 0x7fffffu) | 0x800000u;
  const u128 want = (u128)n * (mant * mant);
  u128 got = 0;
  for (int e = 0; e < ZS_SQ_NBINS; e++) {
    if (!def[e]) continue;
    ZS_EXPECT(e == (int)E || e == (int)E + 16 || e == (int)E + 32,
              "worst case: bin %d is set (only %u, %u, %u may be)", e, E, E + 16, E + 32);
    got += (u128)def[e] << (2 * (e - (int)E));
  }
  ZS_EXPECT(got == want, "worst case (%s, n=%zu): the bins do not sum to n * mant^2",
            dt == ZS_BF16 ? "bf16" : "f32", n);
}

/* The device's bins over x in pieces of `piece` elements (0: one call) equal def. */
static void check_gpu(int kind, zs_dtype dt, size_t n, const void *x, const uint64_t *def,
                      size_t piece) {
  const size_t es = dt == ZS_BF16 ? 2 : 4;
  void *dx = NULL;
  uint64_t *db = NULL, got[NW];
  ZS_EXPECT(cudaMalloc(&dx, n * es) == cudaSuccess &&
                cudaMalloc((void **)&db, sizeof got) == cudaSuccess,
            "cudaMalloc");
  ZS_EXPECT(cudaMemcpy(dx, x, n * es, cudaMemcpyHostToDevice) == cudaSuccess &&
                cudaMemset(db, 0, sizeof got) == cudaSuccess,
            "upload");
  if (!piece) piece = n;
  for (size_t off = 0; off < n; off += piece)
    ZS_OK_OR_DIE(zs_cuda_sq_bins(db, (const char *)dx + off * es, dt,
                                 n - off < piece ? n - off : piece, NULL));
  ZS_EXPECT(cudaDeviceSynchronize() == cudaSuccess, "sq_bins kernel: %s",
            cudaGetErrorString(cudaGetLastError()));
  ZS_EXPECT(cudaMemcpy(got, db, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess, "download");
  zs_sq_bins_normalise(got);
  int first = -1;
  for (int k = 0; k < NW && first < 0; k++)
    if (got[k] != def[k]) first = k;
  ZS_EXPECT(first < 0,
            "GPU sq_bins (%s, %s, n=%zu, piece %zu) differs from the definition at word %d: "
            "%llu, want %llu",
            kind_name(kind), dt == ZS_BF16 ? "bf16" : "f32", n, piece, first,
            (unsigned long long)(first < 0 ? 0 : got[first]),
            (unsigned long long)(first < 0 ? 0 : def[first]));
  cudaFree(dx);
  cudaFree(db);
}

int main(void) {
  const int gpu = !zs_test_cuda_absent(1); /* the CPU part runs either way */
  const zs_dtype dts[2] = {ZS_F32, ZS_BF16};
  /* Sizes: under one warp's round, a round's tail, a block plus a ragged tail, several blocks. */
  const size_t sizes[4] = {7, 2048 + 33, BLOCK + 4099, 3 * BLOCK + 257};
  for (int kind = MIXED; kind <= WORST; kind++)
    for (int t = 0; t < 2; t++)
      for (int s = 0; s < 4; s++) {
        const size_t n = kind == WORST ? (size_t)(s + 1) * BLOCK + (s & 1) * 5 : sizes[s];
        void *x = make(kind, dts[t], n);
        uint64_t def[NW];
        sq_def(def, x, dts[t], n);
        check_cpu(kind, dts[t], n, x, def);
        if (gpu) {
          check_gpu(kind, dts[t], n, x, def, 0);
          check_gpu(kind, dts[t], n, x, def, 1000); /* pieces straddle warps and blocks */
        }
        free(x);
      }
  ZS_TEST_END("test_device_cuda_sq_bins");
}
