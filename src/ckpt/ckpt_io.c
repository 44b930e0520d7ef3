/* POSIX file helpers for checkpoints (see ckpt_io.h). */
#include "ckpt/ckpt_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "ckpt/ckpt_format.h"
#include "ckpt/ckpt_hooks.h"

uint64_t zs_ckpt_block_bytes(void) {
  return zs_ckpt_hook_block_bytes((uint64_t)4 << 20);
}

zs_status zs_io_write(int fd, const void *p, size_t n, const char *path, int hooked, int rank) {
  const char *c = p;
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return zs_err(ZS_ERR_IO, "writing %s: %s", path, w < 0 ? strerror(errno) : "no progress");
    if (hooked) zs_ckpt_hook_write((size_t)w, path, rank);
    c += w;
    n -= (size_t)w;
  }
  return ZS_OK;
}

void zs_io_count_written(size_t n, const char *path, int rank) {
  zs_ckpt_hook_write(n, path, rank);
}

zs_status zs_io_pwrite(int fd, const void *p, size_t n, uint64_t off, const char *path) {
  const char *c = p;
  while (n > 0) {
    const ssize_t w = pwrite(fd, c, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return zs_err(ZS_ERR_IO, "writing %s: %s", path, w < 0 ? strerror(errno) : "no progress");
    c += w;
    n -= (size_t)w;
    off += (uint64_t)w;
  }
  return ZS_OK;
}

zs_status zs_io_pread(int fd, void *p, size_t n, uint64_t off, const char *path) {
  char *c = p;
  while (n > 0) {
    const ssize_t r = pread(fd, c, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return zs_err(ZS_ERR_IO, "reading %s: %s", path, strerror(errno));
    if (r == 0)
      return zs_err(ZS_ERR_CORRUPT, "reading %s: the file ends at byte %" PRIu64 " (truncated)",
                    path, off);
    c += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return ZS_OK;
}

zs_status zs_io_fsync(int fd, const char *path) {
  if (fsync(fd) != 0) return zs_err(ZS_ERR_IO, "fsync of %s: %s", path, strerror(errno));
  return ZS_OK;
}

zs_status zs_io_fsync_dir(const char *dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return zs_err(ZS_ERR_IO, "opening directory %s: %s", dir, strerror(errno));
  zs_status rc = ZS_OK;
  if (fsync(fd) != 0 && errno != EINVAL) /* some filesystems cannot sync a directory */
    rc = zs_err(ZS_ERR_IO, "fsync of directory %s: %s", dir, strerror(errno));
  close(fd);
  return rc;
}

zs_status zs_io_mkdirs(const char *dir) {
  char p[4096];
  const int n = snprintf(p, sizeof p, "%s", dir);
  if (n <= 0 || (size_t)n >= sizeof p)
    return zs_err(ZS_ERR_INVALID_ARG, "directory path is empty or too long");
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
      return zs_err(ZS_ERR_IO, "creating directory %s: %s", p, strerror(errno));
    *s = '/';
  }
  if (mkdir(p, 0755) != 0 && errno != EEXIST)
    return zs_err(ZS_ERR_IO, "creating directory %s: %s", p, strerror(errno));
  struct stat st;
  if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
    return zs_err(ZS_ERR_IO, "%s exists and is not a directory", p);
  return ZS_OK;
}

int zs_io_rmdir_files(const char *dir) {
  char p[4096];
  /* The manifest first, durably: a crash part-way leaves an uncommitted directory (ignored by
     load, removed by the next save), never a committed one with files missing. */
  snprintf(p, sizeof p, "%s/%s", dir, ZS_CKPT_MANIFEST);
  if (unlink(p) == 0) zs_io_fsync_dir(dir);
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -1;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    unlink(p);
  }
  closedir(d);
  return rmdir(dir) == 0 ? 0 : -1;
}

zs_status zs_io_slurp(const char *path, size_t max, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return zs_err(ZS_ERR_IO, "%s: %s", path, errno == ENOENT ? "missing" : strerror(errno));
  struct stat st;
  zs_status rc = ZS_OK;
  char *buf = NULL;
  if (fstat(fd, &st) != 0) {
    rc = zs_err(ZS_ERR_IO, "%s: %s", path, strerror(errno));
  } else if ((uint64_t)st.st_size > max) {
    rc = zs_err(ZS_ERR_CORRUPT, "%s: %lld bytes, more than the %zu a manifest may have", path,
                (long long)st.st_size, max);
  } else if (!(buf = malloc((size_t)st.st_size + 1))) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory reading %s", path);
  } else {
    rc = zs_io_pread(fd, buf, (size_t)st.st_size, 0, path);
    buf[st.st_size] = 0;
  }
  close(fd);
  if (rc != ZS_OK) {
    free(buf);
    return rc;
  }
  *out = buf;
  *len = (size_t)st.st_size;
  return ZS_OK;
}

void zs_io_ckpt_path(char *out, size_t cap, const char *dir, uint64_t seq) {
  snprintf(out, cap, "%s/ckpt-%012" PRIu64, dir, seq);
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

zs_status zs_io_scan(const char *dir, uint64_t **seqs, int **committed, int *n) {
  *seqs = NULL;
  *committed = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return ZS_OK;
    return zs_err(ZS_ERR_IO, "opening directory %s: %s", dir, strerror(errno));
  }
  int cap = 0, cnt = 0;
  uint64_t *s = NULL;
  struct dirent *de;
  zs_status rc = ZS_OK;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    if (strncmp(nm, "ckpt-", 5) != 0 || strlen(nm) != 17) continue;
    char *end = NULL;
    const unsigned long long v = strtoull(nm + 5, &end, 10);
    if (!end || *end || nm[5] < '0' || nm[5] > '9') continue;
    if (cnt == cap) {
      cap = cap ? 2 * cap : 16;
      uint64_t *ns = realloc(s, (size_t)cap * sizeof *ns);
      if (!ns) {
        rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory listing %s", dir);
        break;
      }
      s = ns;
    }
    s[cnt++] = v;
  }
  closedir(d);
  int *c = rc == ZS_OK && cnt ? calloc((size_t)cnt, sizeof *c) : NULL;
  if (rc == ZS_OK && cnt && !c) rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory");
  if (rc != ZS_OK) {
    free(s);
    return rc;
  }
  if (cnt) qsort(s, (size_t)cnt, sizeof *s, cmp_u64);
  for (int i = 0; i < cnt; i++) {
    char p[4096], m[4200];
    zs_io_ckpt_path(p, sizeof p, dir, s[i]);
    snprintf(m, sizeof m, "%s/%s", p, ZS_CKPT_MANIFEST);
    c[i] = access(m, F_OK) == 0;
  }
  *seqs = s;
  *committed = c;
  *n = cnt;
  return ZS_OK;
}
