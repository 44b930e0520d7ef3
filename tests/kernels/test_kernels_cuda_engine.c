/* CUDA engine kernels against their CPU twins, bit for bit: dtype conversion, add_into,
 * sum_chunks and scale vs src/device/cpu/engine_ops.c; AdamW vs zs_cpu_adamw for every
 * (grad, param) dtype pair; the exact sum-of-squares bins vs a scalar reference written here from
 * the definition, for several splits of the array into calls (the partition invariance the global
 * grad norm relies on). Without a GPU: prints "SKIP: no CUDA device" and passes. */
#include "optim/adamw/cpu/adamw.h"
#include "device/cpu/engine_ops.h"
#include "device/cuda/engine_cuda.h"
#include "optim/adamw/cuda/adamw_cuda.h"
#include "test_kernels_cuda_util.h"

/* Random raw element bits of dt: ordinary values with some zeros, denormals, NaN and Inf mixed in
   when `specials`. Stored in a host buffer of n elements of dt. */
static void *raw_rand(size_t n, zs_dtype dt, int specials) {
  void *h = malloc((n ? n : 1) * kt_esize(dt));
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++) {
    float x = (float)(kt_u01() * 8.0 - 4.0);
    double r = kt_u01();
    if (specials && r < 0.01)
      x = 0.0f;
    else if (specials && r < 0.02)
      x = (float)(kt_u01() * 1e-39); /* denormal */
    else if (specials && r < 0.025)
      x = kt_u01() < 0.5 ? NAN : -INFINITY;
    else if (r < 0.3)
      x = (float)(x * pow(2.0, (int)(kt_u01() * 60) - 30));
    if (dt == ZS_BF16)
      ((uint16_t *)h)[i] = zs_f32_to_bf16(x);
    else
      ((float *)h)[i] = x;
  }
  return h;
}

/* Device copy of raw host bytes. */
static void *raw_up(const void *h, size_t bytes) {
  void *d = NULL;
  CU_OK(cudaMalloc(&d, bytes ? bytes : 1));
  CU_OK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}

/* NaN of either dtype (raw bits). */
static int raw_isnan(const void *p, size_t i, zs_dtype dt) {
  if (dt == ZS_BF16) {
    uint16_t h = ((const uint16_t *)p)[i];
    return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
  }
  uint32_t u;
  memcpy(&u, (const float *)p + i, 4);
  return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu);
}

/* 1 when the n device elements equal the host ones bit for bit; two NaNs count as equal (their
   payloads are not specified: the GPU returns its canonical NaN, x86 propagates an input's). */
static int raw_same(const void *d, const void *h, size_t n, zs_dtype dt) {
  size_t bytes = n * kt_esize(dt);
  void *t = malloc(bytes ? bytes : 1);
  if (!t) exit(1);
  CU_OK(cudaDeviceSynchronize());
  CU_OK(cudaMemcpy(t, d, bytes, cudaMemcpyDeviceToHost));
  int same = 1;
  for (size_t i = 0; i < n && same; i++) {
    const char *a = (const char *)t + i * kt_esize(dt), *b = (const char *)h + i * kt_esize(dt);
    if (memcmp(a, b, kt_esize(dt)) && !(raw_isnan(t, i, dt) && raw_isnan(h, i, dt))) same = 0;
  }
  free(t);
  return same;
}

static const char *dn(zs_dtype dt) {
  return dt == ZS_BF16 ? "bf16" : "f32";
}

/* convert, add_into, sum_chunks (both modes) and scale for one dtype pair and size. */
static void test_elementwise(zs_dtype ddt, zs_dtype sdt, size_t n) {
  const int nch = 5;
  size_t stride = n + 3, db = n * kt_esize(ddt);
  void *src = raw_rand(stride * nch, sdt, 1), *dst = raw_rand(n, ddt, 1);
  void *d_src = raw_up(src, stride * nch * kt_esize(sdt)), *d_dst = raw_up(dst, db);
  ZS_OK_OR_DIE(zs_cuda_convert(d_dst, ddt, d_src, sdt, n, NULL));
  zs_cpu_convert(dst, ddt, src, sdt, n);
  ZS_EXPECT(raw_same(d_dst, dst, n, ddt), "convert %s->%s n=%zu differs", dn(sdt), dn(ddt), n);
  ZS_OK_OR_DIE(zs_cuda_add_into(d_dst, ddt, d_src, sdt, n, NULL));
  zs_cpu_add_into(dst, ddt, src, sdt, n);
  ZS_EXPECT(raw_same(d_dst, dst, n, ddt), "add_into %s+=%s n=%zu differs", dn(ddt), dn(sdt), n);
  for (int acc = 0; acc <= 1; acc++) {
    ZS_OK_OR_DIE(zs_cuda_sum_chunks(d_dst, ddt, d_src, sdt, nch, stride, n, acc, NULL));
    zs_cpu_sum_chunks(dst, ddt, src, sdt, nch, stride, n, acc);
    ZS_EXPECT(raw_same(d_dst, dst, n, ddt), "sum_chunks %s<-%s n=%zu accumulate=%d differs",
              dn(ddt), dn(sdt), n, acc);
  }
  ZS_OK_OR_DIE(zs_cuda_scale(d_dst, ddt, 0.37f, n, NULL));
  zs_cpu_scale(dst, ddt, 0.37f, n);
  ZS_EXPECT(raw_same(d_dst, dst, n, ddt), "scale %s n=%zu differs", dn(ddt), n);
  cudaFree(d_src), cudaFree(d_dst);
  free(src), free(dst);
}

/* The definition, one element at a time, normalising every 65536 elements and at the end. */
static void sq_ref(uint64_t *bins, const void *x, zs_dtype dt, size_t n) {
  uint64_t local[ZS_SQ_NBINS + 1];
  for (size_t b = 0; b < n; b += 65536) {
    memset(local, 0, sizeof local);
    for (size_t i = b; i < n && i < b + 65536; i++) {
      uint32_t u;
      if (dt == ZS_BF16)
        u = (uint32_t)((const uint16_t *)x)[i] << 16;
      else
        memcpy(&u, (const float *)x + i, 4);
      uint32_t E = (u >> 23) & 0xff, M = u & 0x7fffff;
      if (E == 255) {
        local[ZS_SQ_NBINS]++;
        continue;
      }
      uint64_t mant = E ? (M | 0x800000u) : M;
      local[E ? E : 1] += mant * mant;
    }
    for (int e = 0; e + 16 < ZS_SQ_NBINS; e++) {
      local[e + 16] += local[e] >> 32;
      local[e] &= 0xffffffffu;
    }
    for (int k = 0; k <= ZS_SQ_NBINS; k++)
      bins[k] += local[k];
  }
  for (int e = 0; e + 16 < ZS_SQ_NBINS; e++) {
    bins[e + 16] += bins[e] >> 32;
    bins[e] &= 0xffffffffu;
  }
}

/* sq_bins over x in pieces of `piece` elements (0 = one call) equals the reference. */
static void test_sq_bins(zs_dtype dt, size_t n, size_t piece, int specials) {
  const size_t nb = (ZS_SQ_NBINS + 1) * sizeof(uint64_t);
  void *x = raw_rand(n, dt, specials);
  void *d_x = raw_up(x, n * kt_esize(dt));
  uint64_t ref[ZS_SQ_NBINS + 1], got[ZS_SQ_NBINS + 1], cpu[ZS_SQ_NBINS + 1];
  memset(ref, 0, sizeof ref);
  memset(cpu, 0, sizeof cpu);
  sq_ref(ref, x, dt, n);
  zs_cpu_sq_bins(cpu, x, dt, n);
  zs_sq_bins_normalise(cpu);
  uint64_t *d_bins;
  CU_OK(cudaMalloc((void **)&d_bins, nb));
  CU_OK(cudaMemset(d_bins, 0, nb));
  if (!piece) piece = n ? n : 1;
  for (size_t off = 0; off < n; off += piece) {
    size_t len = n - off < piece ? n - off : piece;
    ZS_OK_OR_DIE(zs_cuda_sq_bins(d_bins, (const char *)d_x + off * kt_esize(dt), dt, len, NULL));
  }
  CU_OK(cudaDeviceSynchronize());
  CU_OK(cudaMemcpy(got, d_bins, nb, cudaMemcpyDeviceToHost));
  zs_sq_bins_normalise(got);
  ZS_EXPECT(!memcmp(got, ref, nb), "sq_bins %s n=%zu piece=%zu differs from the definition", dn(dt),
            n, piece);
  ZS_EXPECT(!memcmp(cpu, ref, nb), "CPU sq_bins %s n=%zu differs from the definition", dn(dt), n);
  cudaFree(d_bins), cudaFree(d_x);
  free(x);
}

/* AdamW on the device equals zs_cpu_adamw bit for bit (master, m, v and the cast params). */
static void test_adamw(zs_dtype gdt, zs_dtype pdt, size_t n, int with_out, long long t) {
  zs_adamw_coef c;
  zs_adamw_coef_make(&c, 3e-3f, 0.9f, 0.95f, 1e-8f, with_out ? 0.1f : 0.0f, t, 1.0 / 3.0);
  float *master = kt_rand(n, -1, 1, ZS_F32), *m = kt_rand(n, -0.1f, 0.1f, ZS_F32);
  float *v = kt_rand(n, 0, 0.01f, ZS_F32);
  void *grad = raw_rand(n, gdt, 0), *out = malloc(n * kt_esize(pdt));
  void *d_master = raw_up(master, n * 4), *d_m = raw_up(m, n * 4), *d_v = raw_up(v, n * 4);
  void *d_grad = raw_up(grad, n * kt_esize(gdt)), *d_out = kt_dev_nan(n, pdt);
  ZS_OK_OR_DIE(
      zs_cuda_adamw(&c, d_master, d_m, d_v, d_grad, gdt, with_out ? d_out : NULL, pdt, n, NULL));
  zs_cpu_adamw(&c, master, m, v, grad, gdt, with_out ? out : NULL, pdt, n);
  ZS_EXPECT(raw_same(d_master, master, n, ZS_F32), "adamw master differs (grad %s, n=%zu)", dn(gdt),
            n);
  ZS_EXPECT(raw_same(d_m, m, n, ZS_F32), "adamw m differs (grad %s, n=%zu)", dn(gdt), n);
  ZS_EXPECT(raw_same(d_v, v, n, ZS_F32), "adamw v differs (grad %s, n=%zu)", dn(gdt), n);
  if (with_out)
    ZS_EXPECT(raw_same(d_out, out, n, pdt), "adamw params (%s) differ, n=%zu", dn(pdt), n);
  cudaFree(d_master), cudaFree(d_m), cudaFree(d_v), cudaFree(d_grad), cudaFree(d_out);
  free(master), free(m), free(v), free(grad), free(out);
}

int main(void) {
  if (!kt_have_device()) return 0;
  kt_seed("test_kernels_cuda_engine");
  const zs_dtype dts[2] = {ZS_F32, ZS_BF16};
  const size_t sizes[3] = {1, 1000, 300007};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int s = 0; s < 3; s++)
        test_elementwise(dts[a], dts[b], sizes[s]);
  for (int a = 0; a < 2; a++) {
    test_sq_bins(dts[a], 1, 0, 0);
    test_sq_bins(dts[a], 70001, 0, 1);
    test_sq_bins(dts[a], 70001, 4099, 1);
    test_sq_bins(dts[a], 1000003, 0, 0);
    test_sq_bins(dts[a], 1000003, 333331, 0);
  }
  /* Large magnitudes: every element near FLT_MAX stresses the carries of the top bins. */
  {
    size_t n = 200000;
    float *big = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
      big[i] = 3.0e38f * (float)(0.5 + 0.5 * kt_u01());
    void *d = raw_up(big, n * 4);
    uint64_t ref[ZS_SQ_NBINS + 1] = {0}, got[ZS_SQ_NBINS + 1];
    sq_ref(ref, big, ZS_F32, n);
    uint64_t *db;
    CU_OK(cudaMalloc((void **)&db, sizeof got));
    CU_OK(cudaMemset(db, 0, sizeof got));
    ZS_OK_OR_DIE(zs_cuda_sq_bins(db, d, ZS_F32, n, NULL));
    CU_OK(cudaMemcpy(got, db, sizeof got, cudaMemcpyDeviceToHost));
    zs_sq_bins_normalise(got);
    ZS_EXPECT(!memcmp(got, ref, sizeof got), "sq_bins of huge values differs");
    cudaFree(db), cudaFree(d);
    free(big);
  }
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      test_adamw(dts[a], dts[b], 1, 1, 1);
      test_adamw(dts[a], dts[b], 100003, 1, 7);
      test_adamw(dts[a], dts[b], 4097, 0, 1000);
    }
  ZS_TEST_END("test_kernels_cuda_engine");
}
