/* The user-buffer calls of the kernels API (zs_k_alloc, _free, _zero, _copy, _sync), through
 * the public headers only: allocations come back zero-filled and 256-byte aligned, copies work host
 * to device, device to host and device to device, zeroing hits exactly its range, the buffers feed
 * a kernel, and every bad argument is ZS_ERR_INVALID_ARG with a message (nothing is touched).
 *
 *   test_kernels_mem [--device cpu|cuda]
 *
 * With --device cuda and no CUDA device visible (zs_test_cuda_absent: cudaGetDeviceCount finds
 * none, or there is no driver) it prints "SKIP: no CUDA device" and passes; any other failure,
 * creating the context included, fails the test. */
#include <stdint.h>
#include <string.h>

#include "zs_test.h"

#define INV ZS_ERR_INVALID_ARG

/* Bad arguments: a status, a message, and *p reset to NULL by a failed alloc. */
static void test_bad_args(zs_kernels *k) {
  char host[16] = {0};
  void *p = host; /* must be set to NULL by every failed alloc */
  ZS_EXPECT_STATUS(zs_k_alloc(NULL, 64, &p), INV);
  ZS_EXPECT(p == NULL, "failed alloc (NULL k) left *p set");
  p = host;
  ZS_EXPECT_STATUS(zs_k_alloc(k, 0, &p), INV);
  ZS_EXPECT(p == NULL, "failed alloc (0 bytes) left *p set");
  ZS_EXPECT(strstr(zs_last_error(), "bytes") != NULL, "message should name bytes: %s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_k_alloc(k, 64, NULL), INV);

  ZS_EXPECT_STATUS(zs_k_zero(NULL, host, sizeof host), INV);
  ZS_EXPECT_STATUS(zs_k_zero(k, NULL, 16), INV);
  ZS_EXPECT_STATUS(zs_k_copy(NULL, host, host + 8, 8), INV);
  ZS_EXPECT_STATUS(zs_k_copy(k, NULL, host, 8), INV);
  ZS_EXPECT(strstr(zs_last_error(), "dst") != NULL, "message should name dst: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_k_copy(k, host, NULL, 8), INV);
  ZS_EXPECT(strstr(zs_last_error(), "src") != NULL, "message should name src: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_k_sync(NULL), INV);

  /* no-ops */
  zs_k_free(k, NULL);
  zs_k_free(NULL, NULL);
  ZS_EXPECT(zs_k_zero(k, host, 0) == ZS_OK, "zero of 0 bytes: %s", zs_last_error());
  ZS_EXPECT(zs_k_copy(k, host, host + 8, 0) == ZS_OK, "copy of 0 bytes: %s", zs_last_error());
}

/* Allocation of several sizes: zero-filled (read back over a poisoned host buffer), aligned. */
static void test_alloc_zeroed(zs_kernels *k) {
  const size_t sizes[] = {1, 3, 256, 1000, ((size_t)1 << 20) + 7};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    void *d = NULL;
    ZS_OK_OR_DIE(zs_k_alloc(k, n, &d));
    ZS_EXPECT(d != NULL, "alloc of %zu bytes returned OK and NULL", n);
    ZS_EXPECT((uintptr_t)d % 256 == 0, "alloc of %zu bytes is not 256-byte aligned: %p", n, d);
    unsigned char *h = malloc(n);
    memset(h, 0xab, n);
    ZS_OK_OR_DIE(zs_k_copy(k, h, d, n));
    size_t bad = 0;
    for (size_t j = 0; j < n; j++)
      bad += h[j] != 0;
    ZS_EXPECT(bad == 0, "alloc of %zu bytes: %zu bytes not zero", n, bad);
    free(h);
    zs_k_free(k, d);
  }
}

/* Host -> device -> device -> host round trip, then zeroing a middle range. */
static void test_copy_and_zero(zs_kernels *k) {
  enum { n = 4099 }; /* odd, not a multiple of anything */
  unsigned char *src = malloc(n), *dst = malloc(n);
  for (int i = 0; i < n; i++)
    src[i] = (unsigned char)(i * 7 + 1);
  void *a = NULL, *b = NULL;
  ZS_OK_OR_DIE(zs_k_alloc(k, n, &a));
  ZS_OK_OR_DIE(zs_k_alloc(k, n, &b));
  ZS_OK_OR_DIE(zs_k_copy(k, a, src, n)); /* host to device */
  memset(src, 0, n);                     /* returned after the copy: src reusable */
  for (int i = 0; i < n; i++)
    src[i] = (unsigned char)(i * 7 + 1);
  ZS_OK_OR_DIE(zs_k_copy(k, b, a, n)); /* device to device (queued) */
  ZS_OK_OR_DIE(zs_k_sync(k));
  memset(dst, 0, n);
  ZS_OK_OR_DIE(zs_k_copy(k, dst, b, n)); /* device to host */
  ZS_EXPECT(memcmp(dst, src, n) == 0, "round trip host -> device -> device -> host differs");

  const int lo = 100, hi = 3001; /* zero [lo, hi) of b */
  ZS_OK_OR_DIE(zs_k_zero(k, (char *)b + lo, (size_t)(hi - lo)));
  ZS_OK_OR_DIE(zs_k_copy(k, dst, b, n));
  int bad = 0;
  for (int i = 0; i < n; i++)
    bad += dst[i] != (i >= lo && i < hi ? 0 : src[i]);
  ZS_EXPECT(bad == 0, "zero of [%d, %d): %d bytes wrong", lo, hi, bad);
  ZS_OK_OR_DIE(zs_k_sync(k));
  zs_k_free(k, a);
  zs_k_free(k, b);
  free(src);
  free(dst);
}

/* The buffers feed a kernel: out = a + b on the device, read back. Then matmul backward with
   dinp == NULL on device buffers: dw = dout^T @ inp. */
static void test_with_kernels(zs_kernels *k) {
  enum { n = 37, N = 3, C = 4, OC = 2 };
  float ha[n], hb[n], hout[n];
  for (int i = 0; i < n; i++)
    ha[i] = (float)i, hb[i] = 0.5f * (float)i;
  void *a, *b, *out;
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof ha, &a));
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof hb, &b));
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof hout, &out));
  ZS_OK_OR_DIE(zs_k_copy(k, a, ha, sizeof ha));
  ZS_OK_OR_DIE(zs_k_copy(k, b, hb, sizeof hb));
  ZS_OK_OR_DIE(zs_k_residual_fwd(k, out, a, b, n));
  ZS_OK_OR_DIE(zs_k_copy(k, hout, out, sizeof hout));
  int bad = 0;
  for (int i = 0; i < n; i++)
    bad += hout[i] != 1.5f * (float)i;
  ZS_EXPECT(bad == 0, "residual through zs_k_alloc buffers: %d wrong", bad);

  /* small integers: exact in fp32 (and on any GEMM path) */
  float hin[N * C], hdout[N * OC], hw[OC * C], hdw[OC * C], hdb[OC];
  for (int i = 0; i < N * C; i++)
    hin[i] = (float)(i % 5 - 2);
  for (int i = 0; i < N * OC; i++)
    hdout[i] = (float)(i % 3 - 1);
  for (int i = 0; i < OC * C; i++)
    hw[i] = 1.0f;
  void *in, *dout, *w, *dw, *db;
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof hin, &in));
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof hdout, &dout));
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof hw, &w));
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof hdw, &dw)); /* zero-filled: the += starts from 0 */
  ZS_OK_OR_DIE(zs_k_alloc(k, sizeof hdb, &db));
  ZS_OK_OR_DIE(zs_k_copy(k, in, hin, sizeof hin));
  ZS_OK_OR_DIE(zs_k_copy(k, dout, hdout, sizeof hdout));
  ZS_OK_OR_DIE(zs_k_copy(k, w, hw, sizeof hw));
  ZS_OK_OR_DIE(zs_k_matmul_bwd(k, NULL, dw, db, dout, in, w, N, C, OC));
  ZS_OK_OR_DIE(zs_k_copy(k, hdw, dw, sizeof hdw));
  ZS_OK_OR_DIE(zs_k_copy(k, hdb, db, sizeof hdb));
  bad = 0;
  for (int o = 0; o < OC; o++) {
    float sb = 0.0f;
    for (int i = 0; i < N; i++)
      sb += hdout[i * OC + o];
    bad += hdb[o] != sb;
    for (int c = 0; c < C; c++) {
      float s = 0.0f;
      for (int i = 0; i < N; i++)
        s += hdout[i * OC + o] * hin[i * C + c];
      bad += hdw[o * C + c] != s;
    }
  }
  ZS_EXPECT(bad == 0, "matmul bwd (dinp NULL) on allocated buffers: %d values wrong", bad);
  void *all[] = {a, b, out, in, dout, w, dw, db};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    zs_k_free(k, all[i]);
  ZS_OK_OR_DIE(zs_k_sync(k));
}

int main(int argc, char **argv) {
  zs_device dev = ZS_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc && !strcmp(argv[i + 1], "cuda")) {
      dev = ZS_DEVICE_CUDA;
      i++;
    } else if (!strcmp(argv[i], "--device") && i + 1 < argc && !strcmp(argv[i + 1], "cpu")) {
      i++;
    } else {
      fprintf(stderr, "usage: test_kernels_mem [--device cpu|cuda]\n");
      return 2;
    }
  }
  if (dev == ZS_DEVICE_CUDA) {
#ifdef ZS_HAVE_CUDA
    if (zs_test_cuda_absent(1)) return 0;
#else
    printf("SKIP: no CUDA device (a build without CUDA)\n");
    return 0;
#endif
  }
  zs_kernels *k = NULL;
  ZS_OK_OR_DIE(zs_k_create(dev, ZS_F32, NULL, &k)); /* a device is there: must work */
  test_bad_args(k);
  test_alloc_zeroed(k);
  test_copy_and_zero(k);
  test_with_kernels(k);
  zs_k_destroy(k);
  ZS_TEST_END(dev == ZS_DEVICE_CUDA ? "test_kernels_mem --device cuda" : "test_kernels_mem");
}
