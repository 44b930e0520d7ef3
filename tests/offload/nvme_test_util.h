/* Shared by the NVMe tier tests: a rank's tier (directory, state files, ring, staging) set up in
 * one call, deterministic random data, and reading a tier file back with plain (buffered) I/O,
 * independently of the stream under test. */
#ifndef ZS_TESTS_OFFLOAD_NVME_TEST_UTIL_H
#define ZS_TESTS_OFFLOAD_NVME_TEST_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "offload/nvme_dir.h"
#include "offload/nvme_file.h"
#include "offload/nvme_ring.h"
#include "offload/nvme_staging.h"
#include "offload/nvme_stream.h"
#include "zs_test.h"

/* One rank's tier for tests. */
typedef struct {
  zs_nvme_dir *dir;
  zs_nvme_file *files[ZS_NVME_MAX_ARRAYS];
  zs_nvme_ring *ring;
  zs_nvme_staging *st;
  zs_nvme_stream_desc desc; /* mode set by each pass */
  char path[4096];          /* the directory, kept to check that close removed it */
} nvt_tier;

/* Exits 77 (ctest: skipped) after a "SKIP:" line when root cannot hold a tier at all (its file
   system is memory or refuses O_DIRECT: ZS_ERR_UNSUPPORTED), so that a machine whose build folder
   is on such a file system reports the tier's tests as skipped rather than failed; any other
   failure ends the test. */
static inline void nvt_require_root(const char *root) {
  zs_nvme_dir *d = NULL;
  const zs_status rc = zs_nvme_dir_open(root, 9, &d);
  if (rc == ZS_ERR_UNSUPPORTED) {
    printf("SKIP: %s cannot hold an NVMe tier: %s\n", root, zs_last_error());
    exit(77);
  }
  ZS_OK_OR_DIE(rc);
  zs_nvme_dir_close(d);
}

/* The first folder, of `given` and then $TMPDIR, /tmp and /var/tmp, that can hold a tier: where
   zs_nvme_dir_open succeeds (it refuses tmpfs and ramfs, and probes an O_DIRECT write and read of
   one aligned block), copied into out; returns 1. So a GPU machine whose build folder is on an
   overlay or tmpfs still runs the tier's tests on a real disk. When none can, prints
   "SKIP: no O_DIRECT filesystem (...)" (a skip of its own kind, not "SKIP: no CUDA device") and
   returns 0: the test then ends with 77 (ctest: skipped). Any other failure ends the test. */
static inline int nvt_find_root(const char *given, char *out, size_t len) {
  const char *tmpdir = getenv("TMPDIR");
  const char *cand[4] = {given, tmpdir && *tmpdir ? tmpdir : NULL, "/tmp", "/var/tmp"};
  char why[1024] = "";
  for (int i = 0; i < 4; i++) {
    if (!cand[i]) continue;
    zs_nvme_dir *d = NULL;
    const zs_status rc = zs_nvme_dir_open(cand[i], 9, &d);
    if (rc == ZS_OK) {
      zs_nvme_dir_close(d);
      snprintf(out, len, "%s", cand[i]);
      if (i > 0) printf("NVMe tier root: %s (%s cannot hold one)\n", cand[i], given);
      return 1;
    }
    if (rc != ZS_ERR_UNSUPPORTED) ZS_OK_OR_DIE(rc);
    if (!*why) snprintf(why, sizeof why, "%s", zs_last_error());
  }
  printf("SKIP: no O_DIRECT filesystem (tried %s, $TMPDIR, /tmp, /var/tmp: %s)\n", given, why);
  fflush(stdout);
  return 0;
}

/* nvt_find_root, exiting 77 when no folder can hold a tier (tests without MPI). */
static inline void nvt_pick_root(const char *given, char *out, size_t len) {
  if (!nvt_find_root(given, out, len)) exit(77);
}

/* Opens a tier under root with narrays files "a0".. of n elements (elem_bytes[i] each), chunks of
   `chunk` elements, `ahead` chunks in flight. Dies on failure. */
static inline void nvt_open(nvt_tier *t, const char *root, unsigned narrays,
                            const size_t *elem_bytes, size_t n, size_t chunk, unsigned ahead) {
  memset(t, 0, sizeof *t);
  ZS_OK_OR_DIE(zs_nvme_dir_open(root, 0, &t->dir));
  snprintf(t->path, sizeof t->path, "%s", zs_nvme_dir_path(t->dir));
  t->desc.narrays = narrays;
  t->desc.n = n;
  t->desc.chunk = chunk;
  t->desc.ahead = ahead;
  for (unsigned i = 0; i < narrays; i++) {
    char name[16];
    snprintf(name, sizeof name, "a%u", i);
    t->desc.elem_bytes[i] = elem_bytes[i];
    ZS_OK_OR_DIE(zs_nvme_file_create(t->dir, name, (uint64_t)n * elem_bytes[i], &t->files[i]));
    t->desc.files[i] = t->files[i];
  }
  ZS_OK_OR_DIE(zs_nvme_ring_create(zs_nvme_stream_ring_entries(&t->desc), &t->ring));
  ZS_OK_OR_DIE(zs_nvme_staging_create(zs_nvme_stream_slot_bytes(&t->desc),
                                      zs_nvme_stream_slots(ahead), zs_nvme_dir_align(t->dir), 0,
                                      &t->st));
}

/* Closes everything; the directory must be gone afterwards. */
static inline void nvt_close(nvt_tier *t) {
  zs_nvme_staging_destroy(t->st);
  zs_nvme_ring_destroy(t->ring);
  for (unsigned i = 0; i < ZS_NVME_MAX_ARRAYS; i++)
    zs_nvme_file_close(t->files[i]);
  zs_nvme_dir_close(t->dir);
  struct stat st;
  ZS_EXPECT(stat(t->path, &st) != 0, "the tier directory %s is still there after close", t->path);
}

/* splitmix64. */
static inline uint64_t nvt_rng(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* n random bytes. */
static inline void nvt_fill(void *p, size_t n, uint64_t seed) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char)(nvt_rng(&seed) >> 24);
}

/* The first n bytes of a tier file, read with plain buffered I/O (not the stream), into a new
   buffer (caller frees); NULL when the file cannot be read whole. */
static inline void *nvt_read_file(const char *path, size_t n) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  char *b = malloc(n ? n : 1);
  size_t got = 0;
  while (b && got < n) {
    const ssize_t r = pread(fd, b + got, n - got, (off_t)got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != n) {
    free(b);
    return NULL;
  }
  return b;
}

#endif
