/* The NVMe tier's failures (src/offload/nvme_*.h), each a clear status and a message naming the
 * path (and, for I/O, the offset), the tier directory removed at close in every case:
 *  - a tier on tmpfs (/dev/shm) is refused: ZS_ERR_UNSUPPORTED naming the path and the fix,
 *    nothing left behind; a missing root; an existing non-empty rank directory is refused (its file
 *    kept), an empty one taken over; the free-space check;
 *  - a full disk: RLIMIT_FSIZE below the file's size at creation (EFBIG, the file removed) and
 *    in the middle of an update pass (writes past the limit fail);
 *  - a file deleted or truncated before a pass, deleted or truncated during one;
 *  - an injected EIO at the Nth I/O (the test build's hook): the exact file and offset named,
 *    the stream stays failed, and the ring and staging serve a fresh pass afterwards;
 *  - injected short completions: the rest resubmitted, the data bit-exact;
 *  - an injected io_uring_submit failure: sticky, reported even when a good completion is
 *    reaped first, and a reap that retires nothing says so (ZS_NVME_NO_TAG);
 *  - call-order and descriptor errors (ZS_ERR_STATE, ZS_ERR_INVALID_ARG);
 *  - with --full-fs DIR (nvme_full_fs.sh: a small loop-mounted ext4): the free-space check and
 *    a really full disk (ENOSPC) at file creation, and a tier that fits still works there.
 * Usage: test_offload_nvme_fail [ROOT]   (ROOT: a directory on a real disk; default ".")
 *        test_offload_nvme_fail --full-fs DIR */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>

#include "nvme_test_util.h"
#include "base/error.h" /* zs_err: a failed pass restores its message for the caller */
#include "offload/nvme_hooks.h"

#ifndef ZS_TEST_HOOKS
#error "test_offload_nvme_fail needs the test build's hooks (ZS_TEST_HOOKS)"
#endif

#define TMPFS_MAGIC_ 0x01021994

static const size_t EB[3] = {4, 4, 4};
static const size_t CHUNK = 4096; /* 16 KiB per array */

/* The thread's last error mentions every one of the strings (NULL-terminated list). */
static int msg_has(const char *a, const char *b) {
  const char *m = zs_last_error();
  return strstr(m, a) && (!b || strstr(m, b));
}

/* Runs a whole pass of t in `mode`, stopping at the first failure; returns that status (or
   finish's). The compute: WRITE sets element e to e, READ and UPDATE add 1 to each. */
static zs_status run_pass(nvt_tier *t, zs_nvme_mode mode, void (*mid)(nvt_tier *, size_t)) {
  zs_nvme_stream *s = NULL;
  t->desc.mode = mode;
  zs_status rc = zs_nvme_stream_open(&t->desc, t->ring, t->st, &s);
  if (rc != ZS_OK) return rc;
  for (zs_nvme_chunk c;;) {
    rc = zs_nvme_stream_next(s, &c);
    if (rc != ZS_OK || !c.count) break;
    if (mid) mid(t, c.index);
    for (unsigned i = 0; i < t->desc.narrays; i++)
      for (size_t e = 0; e < c.count; e++) {
        float *x = &((float *)c.span[i])[e];
        *x = mode == ZS_NVME_WRITE ? (float)(c.first + e) : *x + 1.0f;
      }
    rc = zs_nvme_stream_commit(s);
    if (rc != ZS_OK) break;
  }
  if (rc == ZS_OK) rc = zs_nvme_stream_finish(s);
  if (rc != ZS_OK) {
    /* The stream stays failed: the same status again, the message kept. */
    char first[1024];
    snprintf(first, sizeof first, "%s", zs_last_error());
    zs_nvme_chunk c;
    ZS_EXPECT(zs_nvme_stream_next(s, &c) == rc && strcmp(first, zs_last_error()) == 0,
              "a failed stream did not stay failed: %s", zs_last_error());
    snprintf(first, sizeof first, "%s", zs_last_error());
    zs_nvme_stream_close(s);
    ZS_EXPECT(zs_nvme_ring_inflight(t->ring) == 0, "close left I/O in flight");
    zs_err(rc, "%s", first); /* restore for the caller's checks */
    return rc;
  }
  zs_nvme_stream_close(s);
  return ZS_OK;
}

static void open_tier(nvt_tier *t, const char *root, size_t n, unsigned ahead) {
  nvt_open(t, root, 3, EB, n, CHUNK, ahead);
  ZS_OK_OR_DIE(run_pass(t, ZS_NVME_WRITE, NULL));
}

static void test_dirs(const char *root) {
  zs_nvme_dir *d = NULL;
  struct statfs sf;
  char shm[256];
  snprintf(shm, sizeof shm, "/dev/shm/rank3-%ld", (long)getpid());
  if (statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC_) {
    ZS_EXPECT_STATUS(zs_nvme_dir_open("/dev/shm", 3, &d), ZS_ERR_UNSUPPORTED);
    ZS_EXPECT(msg_has("/dev/shm is on tmpfs", "O_DIRECT") && msg_has("local disk", NULL),
              "tmpfs message: %s", zs_last_error());
    ZS_EXPECT(access(shm, F_OK) != 0, "%s left behind after the refusal", shm);
  } else {
    fprintf(stderr, "note: /dev/shm is not tmpfs here: the O_DIRECT refusal is not tested\n");
  }
  char missing[4200];
  snprintf(missing, sizeof missing, "%s/no-such-dir", root);
  ZS_EXPECT_STATUS(zs_nvme_dir_open(missing, 0, &d), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(msg_has("no-such-dir", NULL), "%s", zs_last_error());
  ZS_EXPECT_STATUS(zs_nvme_dir_open(root, -1, &d), ZS_ERR_INVALID_ARG);

  /* Someone else's non-empty directory of the same name: passed over for the next name, their
     file untouched. The name is rank<R>-<pid>-<n>, n a random base plus this process's opens:
     open and close one to learn n, the next open tries n + 1. */
  char mine[4200], theirs[4300];
  ZS_EXPECT_STATUS(zs_nvme_dir_open(root, 5, &d), ZS_OK);
  unsigned long seq = 0;
  {
    const char *p = strrchr(zs_nvme_dir_path(d), '-');
    ZS_EXPECT(p && sscanf(p + 1, "%lu", &seq) == 1, "no sequence in %s", zs_nvme_dir_path(d));
  }
  zs_nvme_dir_close(d);
  d = NULL;
  snprintf(mine, sizeof mine, "%s/rank5-%ld-%lu", root, (long)getpid(), seq + 1);
  snprintf(theirs, sizeof theirs, "%s/keep", mine);
  ZS_EXPECT(mkdir(mine, 0700) == 0, "mkdir %s", mine);
  FILE *f = fopen(theirs, "w");
  ZS_EXPECT(f && fputs("data", f) >= 0 && fclose(f) == 0, "cannot write %s", theirs);
  ZS_OK_OR_DIE(zs_nvme_dir_open(root, 5, &d));
  char next[4200];
  snprintf(next, sizeof next, "%s/rank5-%ld-%lu", root, (long)getpid(), seq + 2);
  ZS_EXPECT(strcmp(zs_nvme_dir_path(d), next) == 0, "path %s, not %s", zs_nvme_dir_path(d), next);
  zs_nvme_dir_close(d);
  d = NULL;
  ZS_EXPECT(access(theirs, F_OK) == 0, "the other directory's file was removed");
  unlink(theirs);
  rmdir(mine);
  /* An empty one is taken over, and removed at close (the opens so far used n + 1, n + 2). */
  snprintf(mine, sizeof mine, "%s/rank5-%ld-%lu", root, (long)getpid(), seq + 3);
  ZS_EXPECT(mkdir(mine, 0700) == 0, "mkdir %s", mine);
  ZS_OK_OR_DIE(zs_nvme_dir_open(root, 5, &d));
  ZS_EXPECT(strcmp(zs_nvme_dir_path(d), mine) == 0, "path %s", zs_nvme_dir_path(d));
  ZS_EXPECT(zs_nvme_dir_align(d) >= 4096 && (zs_nvme_dir_align(d) & 4095) == 0, "align %zu",
            zs_nvme_dir_align(d));
  ZS_OK_OR_DIE(zs_nvme_dir_check_space(d, 1));
  ZS_EXPECT_STATUS(zs_nvme_dir_check_space(d, UINT64_MAX / 2), ZS_ERR_IO);
  ZS_EXPECT(msg_has(mine, "free"), "%s", zs_last_error());
  zs_nvme_dir_close(d);
  ZS_EXPECT(access(mine, F_OK) != 0, "%s still there after close", mine);
}

/* RLIMIT_FSIZE below a file's size: its creation fails (EFBIG), the file is removed. */
static void test_full_at_create(const char *root) {
  zs_nvme_dir *d = NULL;
  ZS_OK_OR_DIE(zs_nvme_dir_open(root, 0, &d));
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 1 << 20;
  ZS_EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno));
  zs_nvme_file *f = NULL;
  ZS_EXPECT_STATUS(zs_nvme_file_create(d, "big", 4 << 20, &f), ZS_ERR_IO);
  ZS_EXPECT(msg_has("/big", "File too large") && msg_has("4194304", NULL), "%s", zs_last_error());
  setrlimit(RLIMIT_FSIZE, &old);
  char p[4200];
  snprintf(p, sizeof p, "%s/big", zs_nvme_dir_path(d));
  ZS_EXPECT(access(p, F_OK) != 0, "the failed file %s was left behind", p);
  ZS_EXPECT_STATUS(zs_nvme_file_create(d, "a/b", 4096, &f), ZS_ERR_INVALID_ARG);
  zs_nvme_dir_close(d);
}

/* RLIMIT_FSIZE lowered under the files' size mid-tier: an update pass's writes past it fail. */
static void test_full_in_pass(const char *root) {
  nvt_tier t;
  open_tier(&t, root, CHUNK * 6, 1);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = CHUNK * 4 * 3 + 4096; /* chunk 3's write is cut short, later ones refused */
  ZS_EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno));
  ZS_EXPECT_STATUS(run_pass(&t, ZS_NVME_UPDATE, NULL), ZS_ERR_IO);
  setrlimit(RLIMIT_FSIZE, &old);
  /* Completions come in any order: the first reaped of the failed writes (chunk 3 cut short at
     49152 + 4096, chunks 4 and 5 refused) is reported. */
  const char *at = strstr(zs_last_error(), "at offset ");
  const long long off = at ? atoll(at + 10) : -1;
  ZS_EXPECT(msg_has("write", "/a") && off >= 49152 && off % 16384 == 0, "%s", zs_last_error());
  nvt_close(&t);
}

static void delete_a1(nvt_tier *t, size_t k) {
  if (k == 2) unlink(t->files[1]->path);
}
static void truncate_a2(nvt_tier *t, size_t k) {
  if (k == 1) ZS_EXPECT(truncate(t->files[2]->path, CHUNK * 4 * 3) == 0, "truncate");
}

static void test_deleted_truncated(const char *root) {
  nvt_tier t;
  open_tier(&t, root, CHUNK * 6 + 100, 1);
  unlink(t.files[0]->path); /* before a pass */
  ZS_EXPECT_STATUS(run_pass(&t, ZS_NVME_UPDATE, NULL), ZS_ERR_IO);
  ZS_EXPECT(msg_has("/a0", "deleted"), "%s", zs_last_error());
  nvt_close(&t);

  open_tier(&t, root, CHUNK * 6 + 100, 2);
  ZS_EXPECT(truncate(t.files[2]->path, 8192) == 0, "truncate"); /* before a pass */
  ZS_EXPECT_STATUS(run_pass(&t, ZS_NVME_READ, NULL), ZS_ERR_IO);
  ZS_EXPECT(msg_has("/a2", "truncated"), "%s", zs_last_error());
  nvt_close(&t);

  open_tier(&t, root, CHUNK * 6 + 100, 1);
  ZS_EXPECT_STATUS(run_pass(&t, ZS_NVME_UPDATE, delete_a1), ZS_ERR_IO); /* during a pass */
  ZS_EXPECT(msg_has("/a1", "deleted"), "%s", zs_last_error());
  nvt_close(&t);

  open_tier(&t, root, CHUNK * 6 + 100, 1);
  ZS_EXPECT_STATUS(run_pass(&t, ZS_NVME_READ, truncate_a2), ZS_ERR_IO); /* during a pass */
  ZS_EXPECT(msg_has("short read at offset 49152 of ", "/a2"), "%s", zs_last_error());
  nvt_close(&t);
}

static void test_injected_eio(const char *root) {
  nvt_tier t;
  open_tier(&t, root, CHUNK * 5, 1);
  /* Reads of chunk 0 are I/Os 1-3, of chunk 1 I/Os 4-6: the 5th reads a1 at chunk 1. */
  zs_nvme_hook_fail_io(5, EIO);
  ZS_EXPECT_STATUS(run_pass(&t, ZS_NVME_UPDATE, NULL), ZS_ERR_IO);
  ZS_EXPECT(msg_has("read of 16384 bytes at offset 16384 of ", "/a1 failed: Input/output error"),
            "%s", zs_last_error());
  /* The ring and staging serve fresh passes: fill, then read back what was written. */
  zs_nvme_hook_fail_io(0, 0);
  ZS_OK_OR_DIE(run_pass(&t, ZS_NVME_WRITE, NULL));
  ZS_OK_OR_DIE(run_pass(&t, ZS_NVME_UPDATE, NULL));
  for (unsigned i = 0; i < 3; i++) {
    float *a = nvt_read_file(t.files[i]->path, CHUNK * 5 * 4);
    size_t bad = a ? 0 : 1;
    for (size_t e = 0; a && e < CHUNK * 5; e++)
      bad += a[e] != (float)e + 1.0f;
    ZS_EXPECT(bad == 0, "array %u: %zu elements wrong after a failed pass and two good ones", i,
              bad);
    free(a);
  }
  /* A write failing at the 8th I/O of an update pass (chunk 0's writes are 7-9 with ahead 1). */
  zs_nvme_hook_fail_io(8, ENOSPC);
  ZS_EXPECT_STATUS(run_pass(&t, ZS_NVME_UPDATE, NULL), ZS_ERR_IO);
  ZS_EXPECT(msg_has("write of 16384 bytes at offset 0 of ", "/a1 failed: No space left on device"),
            "%s", zs_last_error());
  zs_nvme_hook_fail_io(0, 0);
  nvt_close(&t);
}

/* Elements of array i of t (n of them) all equal e + add: the file read back with read(2). */
static void expect_file(const nvt_tier *t, unsigned i, size_t n, float add, const char *what) {
  float *a = nvt_read_file(t->files[i]->path, n * 4);
  size_t bad = a ? 0 : 1;
  for (size_t e = 0; a && e < n; e++)
    bad += a[e] != (float)e + add;
  ZS_EXPECT(bad == 0, "%s: array %u: %zu elements wrong", what, i, bad);
  free(a);
}

/* Short completions (the test hook hands the kernel half of the Nth I/O): the ring resubmits the
   rest and the data round-trip bit-exact, checked against the files read back with read(2). */
static void test_short_completions(const char *root) {
  nvt_tier t;
  const size_t n = CHUNK * 5 + 100;
  open_tier(&t, root, n, 1);
  zs_nvme_hook_short_io(5); /* a read: a1 of chunk 1 */
  ZS_OK_OR_DIE(run_pass(&t, ZS_NVME_UPDATE, NULL));
  for (unsigned i = 0; i < 3; i++)
    expect_file(&t, i, n, 1.0f, "a short read");
  zs_nvme_hook_short_io(8); /* a write: a1 of chunk 0 */
  ZS_OK_OR_DIE(run_pass(&t, ZS_NVME_UPDATE, NULL));
  for (unsigned i = 0; i < 3; i++)
    expect_file(&t, i, n, 2.0f, "a short write");
  zs_nvme_hook_short_io(18); /* the last chunk's read of a2: 16384 bytes, cut to 8192 */
  ZS_OK_OR_DIE(run_pass(&t, ZS_NVME_READ, NULL));
  for (unsigned i = 0; i < 3; i++)
    expect_file(&t, i, n, 2.0f, "a read-only pass");
  zs_nvme_hook_short_io(0);
  nvt_close(&t);
}

/* A failed io_uring_submit (the test hook) at the ring: a reap with only never-submitted I/O in
   flight retires nothing and says so (ZS_NVME_NO_TAG); a reap that retires an earlier, good I/O
   still reports the submit failure (not dropped); every later call reports it again. */
static void test_submit_failure(const char *root) {
  nvt_tier t;
  open_tier(&t, root, CHUNK * 3, 1);
  char *buf = zs_nvme_staging_slot(t.st, 0);
  zs_nvme_ring *r = NULL;
  uint64_t tag = 7;
  ZS_OK_OR_DIE(zs_nvme_ring_create(4, &r));
  ZS_OK_OR_DIE(zs_nvme_ring_queue(r, 0, t.files[0], buf, 16384, 0, 7));
  zs_nvme_hook_fail_submit(1, EBUSY);
  ZS_EXPECT_STATUS(zs_nvme_ring_submit(r), ZS_ERR_IO);
  ZS_EXPECT_STATUS(zs_nvme_ring_reap(r, &tag), ZS_ERR_IO);
  ZS_EXPECT(tag == ZS_NVME_NO_TAG, "a reap that retired nothing set tag %llu",
            (unsigned long long)tag);
  ZS_EXPECT(msg_has("io_uring_submit failed: Device or resource busy", NULL), "%s",
            zs_last_error());
  zs_nvme_ring_destroy(r); /* the never-submitted read: nothing to wait for */

  ZS_OK_OR_DIE(zs_nvme_ring_create(4, &r));
  ZS_OK_OR_DIE(zs_nvme_ring_queue(r, 0, t.files[0], buf, 16384, 0, 1));
  ZS_OK_OR_DIE(zs_nvme_ring_submit(r));
  ZS_OK_OR_DIE(zs_nvme_ring_queue(r, 0, t.files[1], buf + 16384, 16384, 0, 2));
  zs_nvme_hook_fail_submit(1, EBUSY); /* reap's own submit of the second read fails */
  tag = 0;
  ZS_EXPECT_STATUS(zs_nvme_ring_reap(r, &tag), ZS_ERR_IO);
  ZS_EXPECT(tag == 1, "the first read was retired as tag %llu", (unsigned long long)tag);
  ZS_EXPECT(msg_has("io_uring_submit failed: Device or resource busy", NULL), "%s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_nvme_ring_reap(r, &tag), ZS_ERR_IO);
  ZS_EXPECT(tag == ZS_NVME_NO_TAG &&
                msg_has("io_uring_submit failed: Device or resource busy", NULL),
            "tag %llu: %s", (unsigned long long)tag, zs_last_error());
  ZS_EXPECT_STATUS(zs_nvme_ring_queue(r, 0, t.files[2], buf, 16384, 0, 3), ZS_ERR_IO);
  ZS_EXPECT(msg_has("io_uring_submit failed: Device or resource busy", NULL), "%s",
            zs_last_error());
  zs_nvme_ring_destroy(r);
  zs_nvme_hook_fail_submit(0, 0);
  nvt_close(&t);
}

static void test_call_order(const char *root) {
  nvt_tier t;
  open_tier(&t, root, CHUNK * 3, 1);
  zs_nvme_stream *s = NULL;
  t.desc.mode = ZS_NVME_UPDATE;
  ZS_OK_OR_DIE(zs_nvme_stream_open(&t.desc, t.ring, t.st, &s));
  zs_nvme_chunk c;
  ZS_EXPECT_STATUS(zs_nvme_stream_commit(s), ZS_ERR_STATE);
  ZS_OK_OR_DIE(zs_nvme_stream_next(s, &c));
  ZS_EXPECT_STATUS(zs_nvme_stream_next(s, &c), ZS_ERR_STATE);
  ZS_EXPECT_STATUS(zs_nvme_stream_finish(s), ZS_ERR_STATE);
  ZS_OK_OR_DIE(zs_nvme_stream_commit(s));
  ZS_EXPECT_STATUS(zs_nvme_stream_finish(s), ZS_ERR_STATE); /* chunks left */
  zs_nvme_stream_close(s);                                  /* mid-pass: drains */
  ZS_EXPECT(zs_nvme_ring_inflight(t.ring) == 0, "close left I/O in flight");
  zs_nvme_stream_desc bad = t.desc;
  bad.chunk = CHUNK + 4; /* 16400 bytes: not a multiple of the alignment */
  ZS_EXPECT_STATUS(zs_nvme_stream_open(&bad, t.ring, t.st, &s), ZS_ERR_INVALID_ARG);
  bad = t.desc;
  bad.n = CHUNK * 3 + 4096; /* more than the files hold */
  ZS_EXPECT_STATUS(zs_nvme_stream_open(&bad, t.ring, t.st, &s), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(msg_has("/a0 holds", NULL), "%s", zs_last_error());
  bad = t.desc;
  bad.ahead = 2; /* staging has 3 slots, this needs 5 */
  ZS_EXPECT_STATUS(zs_nvme_stream_open(&bad, t.ring, t.st, &s), ZS_ERR_INVALID_ARG);
  nvt_close(&t);
}

/* DIR is a small file system of its own: needing more than it has is refused by the space check
   and, past it, by the disk itself; what fits works. */
static int test_full_fs(const char *root) {
  struct statvfs sv;
  ZS_EXPECT(statvfs(root, &sv) == 0, "statvfs %s", root);
  const uint64_t free_b = (uint64_t)sv.f_bavail * sv.f_frsize;
  if (free_b > (256ull << 20)) {
    fprintf(stderr, "test_offload_nvme_fail: %s has %llu bytes free: not a small file system\n",
            root, (unsigned long long)free_b);
    return 1;
  }
  zs_nvme_dir *d = NULL;
  ZS_OK_OR_DIE(zs_nvme_dir_open(root, 0, &d));
  char dpath[4200];
  snprintf(dpath, sizeof dpath, "%s", zs_nvme_dir_path(d));
  ZS_OK_OR_DIE(zs_nvme_dir_check_space(d, free_b / 2));
  ZS_EXPECT_STATUS(zs_nvme_dir_check_space(d, free_b + (1 << 20)), ZS_ERR_IO);
  ZS_EXPECT(msg_has(dpath, "free"), "%s", zs_last_error());
  zs_nvme_file *f = NULL;
  ZS_EXPECT_STATUS(zs_nvme_file_create(d, "huge", 2 * free_b, &f), ZS_ERR_IO);
  ZS_EXPECT(msg_has("/huge", "No space left on device") && msg_has("free disk space", NULL), "%s",
            zs_last_error());
  zs_nvme_dir_close(d);
  ZS_EXPECT(access(dpath, F_OK) != 0, "%s still there", dpath);
  nvt_tier t; /* a tier that fits: three arrays of free / 8 */
  const size_t n = (size_t)(free_b / 8 / 4) / CHUNK * CHUNK - 100;
  open_tier(&t, root, n, 2);
  ZS_OK_OR_DIE(run_pass(&t, ZS_NVME_UPDATE, NULL));
  float *a = nvt_read_file(t.files[1]->path, n * 4);
  size_t bad = a ? 0 : 1;
  for (size_t e = 0; a && e < n; e++)
    bad += a[e] != (float)e + 1.0f;
  ZS_EXPECT(bad == 0, "%zu elements wrong on the small file system", bad);
  free(a);
  nvt_close(&t);
  ZS_TEST_END("test_offload_nvme_fail --full-fs");
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "--full-fs") == 0) return test_full_fs(argv[2]);
  const char *root = argc > 1 ? argv[1] : ".";
  nvt_require_root(root);
  signal(SIGXFSZ, SIG_IGN); /* RLIMIT_FSIZE: EFBIG instead of the signal's default (death) */
  test_dirs(root);
  test_full_at_create(root);
  test_full_in_pass(root);
  test_deleted_truncated(root);
  test_injected_eio(root);
  test_submit_failure(root);
  test_short_completions(root);
  test_call_order(root);
  ZS_TEST_END("test_offload_nvme_fail");
}
