/* The NVMe tier's per-rank directory (nvme_dir.h): creation, the O_DIRECT probe, free space,
 * removal. */
#include "offload/nvme_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>

#include <linux/magic.h>
#include <unistd.h>

#include "base/error.h"

#define ZS_NVME_PATH_MAX 4096

struct zs_nvme_dir {
  char path[ZS_NVME_PATH_MAX];
  size_t align;
};

/* 1 when the directory at path has no entry but "." and "..", 0 when it has one, -1 (errno set)
   when it cannot be read. */
static int zs_dir_is_empty(const char *path) {
  DIR *dir = opendir(path);
  if (!dir) return -1;
  int empty = 1;
  for (struct dirent *e; (e = readdir(dir));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      empty = 0;
      break;
    }
  closedir(dir);
  return empty;
}

/* The O_DIRECT alignment of the file system holding fd (nvme_dir.h, zs_nvme_dir_align). */
static size_t zs_dio_align(int fd) {
  struct stat st;
  size_t a = 4096;
  if (fstat(fd, &st) == 0 && st.st_blksize > 0) {
    const size_t b = (size_t)st.st_blksize;
    if (b > a && b <= 65536 && (b & (b - 1)) == 0) a = b;
  }
  return a;
}

/* Writes and reads back one aligned block of <dir>/.odirect-probe with O_DIRECT; sets d->align.
   The probe file is removed whatever happens. */
static zs_status zs_dir_probe(zs_nvme_dir *d) {
  char probe[ZS_NVME_PATH_MAX + 32];
  snprintf(probe, sizeof probe, "%s/.odirect-probe", d->path);
  const int fd = open(probe, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    if (e == EINVAL)
      return zs_err(ZS_ERR_UNSUPPORTED,
                    "NVMe tier: the file system of %s refuses O_DIRECT (open: %s; tmpfs and some "
                    "network file systems do): give a directory on a local disk (ext4, xfs)",
                    d->path, strerror(e));
    return zs_err(ZS_ERR_IO, "NVMe tier: cannot create %s: %s", probe, strerror(e));
  }
  zs_status rc = ZS_OK;
  d->align = zs_dio_align(fd);
  void *buf = NULL;
  if (posix_memalign(&buf, d->align, d->align) != 0) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no memory for a %zu-byte probe", d->align);
  } else {
    memset(buf, 0x5a, d->align);
    const ssize_t w = pwrite(fd, buf, d->align, 0);
    const int ew = errno;
    const ssize_t r = w == (ssize_t)d->align ? pread(fd, buf, d->align, 0) : -1;
    const int er = errno;
    if (w < 0 && ew == EINVAL)
      rc = zs_err(ZS_ERR_UNSUPPORTED,
                  "NVMe tier: the file system of %s refuses O_DIRECT writes of %zu aligned bytes "
                  "(%s): give a directory on a local disk (ext4, xfs)",
                  d->path, d->align, strerror(ew));
    else if (w != (ssize_t)d->align)
      rc = zs_err(ZS_ERR_IO, "NVMe tier: O_DIRECT probe write to %s failed: %s", probe,
                  w < 0 ? strerror(ew) : "short write");
    else if (r != (ssize_t)d->align)
      rc = zs_err(ZS_ERR_IO, "NVMe tier: O_DIRECT probe read of %s failed: %s", probe,
                  r < 0 ? strerror(er) : "short read");
  }
  free(buf);
  close(fd);
  unlink(probe);
  return rc;
}

/* ZS_ERR_UNSUPPORTED when root lies on a memory file system (tmpfs, ramfs): recent kernels let
   tmpfs take O_DIRECT, but a tier there is host memory under another name. */
static zs_status zs_dir_refuse_memory_fs(const char *root) {
  struct statfs sf;
  if (statfs(root, &sf) != 0) return ZS_OK; /* the probe will tell */
  if (sf.f_type != TMPFS_MAGIC && sf.f_type != RAMFS_MAGIC) return ZS_OK;
  return zs_err(ZS_ERR_UNSUPPORTED,
                "NVMe tier: %s is on %s (memory, not a disk; older kernels also refuse O_DIRECT "
                "there): give a directory on a local disk (ext4, xfs)",
                root, sf.f_type == TMPFS_MAGIC ? "tmpfs" : "ramfs");
}

zs_status zs_nvme_dir_open(const char *root, int rank, zs_nvme_dir **out) {
  if (!root || !*root || !out || rank < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_nvme_dir_open: NULL or empty root, NULL out, or rank < 0");
  struct stat st;
  const int st_rc = stat(root, &st);
  if (st_rc != 0 || !S_ISDIR(st.st_mode))
    return zs_err(ZS_ERR_INVALID_ARG, "NVMe tier: %s is not a directory (%s): create it first",
                  root, st_rc != 0 ? strerror(errno) : "another kind of file");
  zs_status mrc = zs_dir_refuse_memory_fs(root);
  if (mrc != ZS_OK) return mrc;
  zs_nvme_dir *d = calloc(1, sizeof *d);
  if (!d) return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no memory for the directory handle");
  /* The process's count of tiers opened: two engines of one process on one root (or one engine
     after another) get directories of their own. */
  static _Atomic unsigned long opened;
  const unsigned long seq = opened++;
  const int n =
      snprintf(d->path, sizeof d->path, "%s/rank%d-%ld-%lu", root, rank, (long)getpid(), seq);
  if (n < 0 || (size_t)n >= sizeof d->path) {
    free(d);
    return zs_err(ZS_ERR_INVALID_ARG, "NVMe tier: the path %s is too long", root);
  }
  if (mkdir(d->path, 0700) != 0) {
    const int e = errno;
    const int empty = e == EEXIST ? zs_dir_is_empty(d->path) : -1;
    if (empty != 1) {
      zs_status rc =
          e == EEXIST ? zs_err(ZS_ERR_INVALID_ARG,
                               "NVMe tier: %s exists and is not an empty directory (another "
                               "run's tier?): remove it or name another directory",
                               d->path)
                      : zs_err(ZS_ERR_IO, "NVMe tier: cannot create %s: %s", d->path, strerror(e));
      free(d);
      return rc;
    }
  }
  zs_status rc = zs_dir_probe(d);
  if (rc != ZS_OK) {
    rmdir(d->path);
    free(d);
    return rc;
  }
  *out = d;
  return ZS_OK;
}

const char *zs_nvme_dir_path(const zs_nvme_dir *d) {
  return d->path;
}

size_t zs_nvme_dir_align(const zs_nvme_dir *d) {
  return d->align;
}

zs_status zs_nvme_dir_check_space(const zs_nvme_dir *d, uint64_t bytes) {
  struct statvfs sv;
  if (statvfs(d->path, &sv) != 0)
    return zs_err(ZS_ERR_IO, "NVMe tier: statvfs(%s) failed: %s", d->path, strerror(errno));
  const uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
  if (avail < bytes)
    return zs_err(ZS_ERR_IO,
                  "NVMe tier: %s needs %llu bytes of disk and its file system has %llu free: "
                  "free space or name a directory on a larger disk",
                  d->path, (unsigned long long)bytes, (unsigned long long)avail);
  return ZS_OK;
}

void zs_nvme_dir_close(zs_nvme_dir *d) {
  if (!d) return;
  DIR *dir = opendir(d->path);
  if (dir) {
    const int dfd = dirfd(dir);
    for (struct dirent *e; (e = readdir(dir));)
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dfd, e->d_name, 0);
    closedir(dir);
  }
  rmdir(d->path);
  free(d);
}
