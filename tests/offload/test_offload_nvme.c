/* The NVMe tier's stream (src/offload/nvme_stream.h) against independent references:
 *  - round trip: random arrays written through a WRITE pass are, byte for byte, what a plain
 *    pread of each file returns, and what a READ pass hands out chunk by chunk;
 *  - the optimizer step: AdamW run chunk by chunk through UPDATE passes (read | compute | write,
 *    zs_cpu_adamw_ex on the staging spans) gives the bits of the same AdamW on an in-memory copy
 *    of the whole arrays, for several steps (master, m, v read back with pread, params as
 *    published); and bf16 moments (zs_cpu_adamw_m16_ex) likewise;
 * each for chunk counts that divide the length and that do not, with 1 and 3 chunks in flight,
 * and the tier directory gone after close; and the O_DIRECT sequential writer (test_direct_out).
 * Usage: test_offload_nvme [ROOT]   (ROOT: a directory on a real disk; default ".") */
#include <signal.h>
#include <sys/resource.h>

#include "offload/direct_out.h"
#include "optim/adamw/cpu/adamw.h"
#include "optim/adamw/adamw_mt.h"
#include "offload/worker_pool.h"
#include "nvme_test_util.h"

/* Writes src[i] (n elements of t's arrays) through a WRITE pass. */
static void write_pass(nvt_tier *t, void *const *src) {
  zs_nvme_stream *s = NULL;
  t->desc.mode = ZS_NVME_WRITE;
  ZS_OK_OR_DIE(zs_nvme_stream_open(&t->desc, t->ring, t->st, &s));
  size_t chunks = 0;
  for (zs_nvme_chunk c;;) {
    ZS_OK_OR_DIE(zs_nvme_stream_next(s, &c));
    if (!c.count) break;
    ZS_EXPECT(c.index == chunks && c.first == chunks * t->desc.chunk, "chunk %zu at %zu", c.index,
              c.first);
    for (unsigned i = 0; i < t->desc.narrays; i++)
      memcpy(c.span[i], (char *)src[i] + c.first * t->desc.elem_bytes[i],
             c.count * t->desc.elem_bytes[i]);
    ZS_OK_OR_DIE(zs_nvme_stream_commit(s));
    chunks++;
  }
  ZS_OK_OR_DIE(zs_nvme_stream_finish(s));
  ZS_EXPECT(chunks == (t->desc.n + t->desc.chunk - 1) / t->desc.chunk, "%zu chunks", chunks);
  zs_nvme_stream_close(s);
}

/* The files' first n elements equal want[i] (plain pread, not the stream). */
static void expect_files(const nvt_tier *t, void *const *want, const char *what) {
  for (unsigned i = 0; i < t->desc.narrays; i++) {
    const size_t bytes = t->desc.n * t->desc.elem_bytes[i];
    void *got = nvt_read_file(t->files[i]->path, bytes);
    ZS_EXPECT(got && memcmp(got, want[i], bytes) == 0, "%s: array %u differs on disk", what, i);
    free(got);
  }
}

/* A READ pass hands out exactly want[i]. */
static void expect_read_pass(nvt_tier *t, void *const *want) {
  zs_nvme_stream *s = NULL;
  t->desc.mode = ZS_NVME_READ;
  ZS_OK_OR_DIE(zs_nvme_stream_open(&t->desc, t->ring, t->st, &s));
  size_t seen = 0;
  for (zs_nvme_chunk c;;) {
    ZS_OK_OR_DIE(zs_nvme_stream_next(s, &c));
    if (!c.count) break;
    for (unsigned i = 0; i < t->desc.narrays; i++) {
      const size_t eb = t->desc.elem_bytes[i];
      ZS_EXPECT(memcmp(c.span[i], (char *)want[i] + c.first * eb, c.count * eb) == 0,
                "READ pass: chunk %zu of array %u differs", c.index, i);
    }
    seen += c.count;
    ZS_OK_OR_DIE(zs_nvme_stream_commit(s));
  }
  ZS_OK_OR_DIE(zs_nvme_stream_finish(s));
  uint64_t rd = 0, wr = 0;
  zs_nvme_stream_bytes(s, &rd, &wr);
  ZS_EXPECT(seen == t->desc.n && wr == 0 && rd >= t->desc.n * 4, "seen %zu, read %llu, wrote %llu",
            seen, (unsigned long long)rd, (unsigned long long)wr);
  zs_nvme_stream_close(s);
}

static void test_roundtrip(const char *root, size_t n, size_t chunk, unsigned ahead, int mixed) {
  const size_t eb[3] = {4, mixed ? 2 : 4, mixed ? 2 : 4};
  nvt_tier t;
  nvt_open(&t, root, 3, eb, n, chunk, ahead);
  void *src[3];
  for (unsigned i = 0; i < 3; i++) {
    src[i] = malloc(n * eb[i]);
    nvt_fill(src[i], n * eb[i], 1000 + i + n);
  }
  write_pass(&t, src);
  expect_files(&t, src, "round trip");
  expect_read_pass(&t, src);
  for (unsigned i = 0; i < 3; i++)
    free(src[i]);
  nvt_close(&t);
}

/* Random optimizer state: master spread, m signed, v >= 0; bf16 moments when m16. */
static void make_state(size_t n, float *master, void *m, void *v, int m16, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    const uint64_t r = nvt_rng(&seed);
    master[i] = (float)((double)(r >> 11) * 0x1.0p-53 - 0.5);
    const float mf = (float)((double)((r >> 3) & 0xffff) / 65536.0 - 0.5) * 1e-2f;
    const float vf = (float)((double)((r >> 20) & 0xffff) / 65536.0) * 1e-4f;
    if (m16) {
      ((uint16_t *)m)[i] = zs_f32_to_bf16(mf);
      ((uint16_t *)v)[i] = zs_f32_to_bf16(vf);
    } else {
      ((float *)m)[i] = mf;
      ((float *)v)[i] = vf;
    }
  }
}

/* steps AdamW steps through UPDATE passes vs the same on in-memory copies. */
static void test_adamw(const char *root, zs_pool *pool, size_t n, size_t chunk, unsigned ahead,
                       int m16) {
  const size_t mb = m16 ? 2 : 4;
  const size_t eb[3] = {4, mb, mb};
  nvt_tier t;
  nvt_open(&t, root, 3, eb, n, chunk, ahead);
  float *master = malloc(n * 4), *grad = malloc(n * 4), *out = malloc(n * 4),
        *out_ref = malloc(n * 4);
  void *m = malloc(n * mb), *v = malloc(n * mb);
  make_state(n, master, m, v, m16, 77 + n);
  void *src[3] = {master, m, v};
  write_pass(&t, src); /* the tier starts with the in-memory state; master/m/v are now the ref */
  for (long long step = 1; step <= 3; step++) {
    for (size_t i = 0; i < n; i++)
      grad[i] = (float)((double)(nvt_rng(&(uint64_t){step * 1000003 + i}) >> 11) * 0x1.0p-53 - 0.5);
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, step, 1.0);
    if (m16)
      zs_cpu_adamw_m16_ex(NULL, ZS_ADAMW_ISA_AUTO, &c, master, m, v, grad, ZS_F32, out_ref, ZS_F32,
                          n);
    else
      zs_cpu_adamw_ex(NULL, ZS_ADAMW_ISA_AUTO, &c, master, m, v, grad, ZS_F32, out_ref, ZS_F32, n);
    memset(out, 0xff, n * 4);
    zs_nvme_stream *s = NULL;
    t.desc.mode = ZS_NVME_UPDATE;
    ZS_OK_OR_DIE(zs_nvme_stream_open(&t.desc, t.ring, t.st, &s));
    for (zs_nvme_chunk ck;;) {
      ZS_OK_OR_DIE(zs_nvme_stream_next(s, &ck));
      if (!ck.count) break;
      if (m16)
        zs_cpu_adamw_m16_ex(pool, ZS_ADAMW_ISA_AUTO, &c, ck.span[0], ck.span[1], ck.span[2],
                            grad + ck.first, ZS_F32, out + ck.first, ZS_F32, ck.count);
      else
        zs_cpu_adamw_ex(pool, ZS_ADAMW_ISA_AUTO, &c, ck.span[0], ck.span[1], ck.span[2],
                        grad + ck.first, ZS_F32, out + ck.first, ZS_F32, ck.count);
      ZS_OK_OR_DIE(zs_nvme_stream_commit(s));
    }
    ZS_OK_OR_DIE(zs_nvme_stream_finish(s));
    zs_nvme_stream_close(s);
    ZS_EXPECT(memcmp(out, out_ref, n * 4) == 0, "step %lld: published params differ (n %zu)", step,
              n);
    expect_files(&t, src, "AdamW step");
  }
  free(master), free(grad), free(out), free(out_ref), free(m), free(v);
  nvt_close(&t);
}

/* The O_DIRECT sequential writer (offload/direct_out.h): puts of random lengths (bytes to three
   chunks' worth) from aligned and unaligned addresses, released at random, leave the file holding
   their concatenation from the base offset on (read back with plain I/O after the caller's
   truncation); the source memory is overwritten after each release, so a write still reading it
   would show. A file under RLIMIT_FSIZE fails with the file named, and every later call too. */
static void test_direct_out(const char *root) {
  char path[4200];
  snprintf(path, sizeof path, "%s/direct_out.bin", root);
  const uint64_t base = 8192;
  const size_t total = (size_t)13 << 20;
  unsigned char *want = malloc(total), *src = NULL;
  ZS_EXPECT(posix_memalign((void **)&src, 4096, (size_t)13 << 20) == 0, "memory");
  nvt_fill(want, total, 7);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  ZS_EXPECT(fd >= 0, "open %s with O_DIRECT", path);
  zs_direct_out *d = NULL;
  ZS_EXPECT_STATUS(zs_direct_out_create(fd, path, 100, 4096, &d), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_direct_out_create(fd, path, base, 4096, &d));
  uint64_t seed = 11;
  size_t at = 0;
  while (at < total) {
    const uint64_t r = nvt_rng(&seed);
    size_t n = r % 4 == 0 ? (size_t)(r >> 8) % 64 + 1 : (size_t)(r >> 8) % ((size_t)9 << 20);
    if (n > total - at) n = total - at;
    const size_t shift = r % 3 == 0 ? 0 : (size_t)(r >> 40) % 4096; /* aligned or not */
    if (shift + n > ((size_t)13 << 20)) n = ((size_t)13 << 20) - shift;
    memcpy(src + shift, want + at, n);
    ZS_OK_OR_DIE(zs_direct_out_put(d, src + shift, n));
    ZS_OK_OR_DIE(zs_direct_out_release(d));
    memset(src, 0xee, (size_t)13 << 20); /* a write still reading src would carry this */
    at += n;
  }
  ZS_OK_OR_DIE(zs_direct_out_flush(d));
  ZS_EXPECT_STATUS(zs_direct_out_put(d, want, 1), ZS_ERR_STATE); /* flush was the last */
  zs_direct_out_destroy(d);
  ZS_EXPECT(ftruncate(fd, (off_t)(base + total)) == 0, "truncate");
  close(fd);
  unsigned char *got = nvt_read_file(path, base + total);
  ZS_EXPECT(got && memcmp(got + base, want, total) == 0, "the file is not the puts' bytes");
  free(got);
  /* A full disk, as the file size limit: the error names the file; later calls repeat it. */
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = (rlim_t)base + (1 << 20);
  signal(SIGXFSZ, SIG_IGN);
  fd = open(path, O_WRONLY | O_TRUNC | O_DIRECT);
  ZS_OK_OR_DIE(zs_direct_out_create(fd, path, base, 4096, &d));
  ZS_EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
  zs_status rc = zs_direct_out_put(d, want, (size_t)6 << 20);
  if (rc == ZS_OK) rc = zs_direct_out_flush(d);
  setrlimit(RLIMIT_FSIZE, &old);
  ZS_EXPECT(rc == ZS_ERR_IO && strstr(zs_last_error(), path), "past the size limit: %d %s", rc,
            zs_last_error());
  ZS_EXPECT_STATUS(zs_direct_out_put(d, want, 10), ZS_ERR_IO);
  ZS_EXPECT_STATUS(zs_direct_out_flush(d), ZS_ERR_IO);
  zs_direct_out_destroy(d);
  close(fd);
  unlink(path);
  free(want);
  free(src);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : ".";
  nvt_require_root(root);
  zs_pool *pool = NULL;
  ZS_OK_OR_DIE(zs_pool_create(2, ZS_POOL_UNBOUND, &pool));
  const size_t eb4[1] = {4}, eb42[3] = {4, 2, 2};
  ZS_EXPECT(zs_nvme_chunk_quantum(4096, eb4, 1) == 1024, "quantum fp32");
  ZS_EXPECT(zs_nvme_chunk_quantum(4096, eb42, 3) == 2048, "quantum fp32 + bf16");
  const size_t chunk = 2048 * 5; /* 40 KiB of fp32: a multiple of the quantum either way */
  for (unsigned ahead = 1; ahead <= 3; ahead += 2) {
    for (int mixed = 0; mixed <= 1; mixed++) {
      test_roundtrip(root, chunk * 7, chunk, ahead, mixed);       /* 7 chunks, all full */
      test_roundtrip(root, chunk * 7 + 777, chunk, ahead, mixed); /* a short 8th chunk */
      test_roundtrip(root, 333, chunk, ahead, mixed);             /* one short chunk */
      test_adamw(root, pool, chunk * 6, chunk, ahead, mixed);
      test_adamw(root, pool, chunk * 6 + 1001, chunk, ahead, mixed);
    }
  }
  /* A chunk of ZS_ADAMW_MT_MIN elements or more: the pool's tiles inside the chunk. */
  test_adamw(root, pool, 3 * 81920 + 5, 81920, 2, 0);
  zs_pool_destroy(pool);
  test_direct_out(root);
  ZS_TEST_END("test_offload_nvme");
}
