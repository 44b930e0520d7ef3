/* The NVMe tier's per-rank directory (nvme_dir.h): creation under its owner's lock, the O_DIRECT
 * probe, free space, removal, and the reclaim of dead runs' directories. */
#include "offload/nvme_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>

#include <linux/magic.h>
#include <unistd.h>

#include "base/error.h"

#define ZS_NVME_PATH_MAX 4096

struct zs_nvme_dir {
  char path[ZS_NVME_PATH_MAX];
  char root[ZS_NVME_PATH_MAX];
  size_t align;
  int lock_fd; /* <path>/.lock, flock'ed while the directory lives: the owner is alive */
};

#define ZS_NVME_LOCK ".lock"

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

size_t zs_nvme_fd_align(int fd) {
  struct stat st;
  size_t a = 4096;
  if (fstat(fd, &st) == 0 && st.st_blksize > 0) {
    const size_t b = (size_t)st.st_blksize;
    if (b > a && b <= 65536 && (b & (b - 1)) == 0) a = b;
  }
  return a;
}

size_t zs_nvme_root_align(const char *root) {
  const int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 4096;
  const size_t a = zs_nvme_fd_align(fd);
  close(fd);
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
  d->align = zs_nvme_fd_align(fd);
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

/* The first n of this process's directory names: 32 random bits times 2^20, so that two runs
   with the same pid (containers restarted, pid namespaces sharing a disk) do not reuse each
   other's names (a reclaimer that took a dead run's lock must never find a live one's
   directory at the same path); 0 when no randomness can be read. */
static unsigned long name_base(void) {
  static _Atomic unsigned long base = 1; /* 1: not drawn yet */
  unsigned long b = base;
  if (b != 1) return b;
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r = 0;
  b = (unsigned long)r << 20;
  base = b;
  return b;
}

/* <dir>/.lock of d->path into buf. */
static void lock_path(const char *dir, char *buf, size_t len) {
  snprintf(buf, len, "%s/" ZS_NVME_LOCK, dir);
}

/* Creates d->path (or takes it over when empty) and its lock file, locked (d->lock_fd): ZS_OK;
   *again = 1 with an error when a reclaimer removed the lock before we held it (the caller
   tries the next name); else the error, nothing left behind. The lock is held from before anything
   else is written into the directory, and checked to be the file at the path, so no reclaimer can
   take a live directory. */
static zs_status zs_dir_make_locked(zs_nvme_dir *d, int *again) {
  *again = 0;
  if (mkdir(d->path, 0700) != 0) {
    const int e = errno;
    const int empty = e == EEXIST ? zs_dir_is_empty(d->path) : -1;
    if (empty != 1) {
      *again = e == EEXIST; /* another run's of the same name: the next name */
      return e == EEXIST
                 ? zs_err(ZS_ERR_INVALID_ARG,
                          "NVMe tier: %s exists and is not an empty directory (another "
                          "run's tier?): remove it or name another directory",
                          d->path)
                 : zs_err(ZS_ERR_IO, "NVMe tier: cannot create %s: %s", d->path, strerror(e));
    }
  }
  char lp[ZS_NVME_PATH_MAX + 16];
  lock_path(d->path, lp, sizeof lp);
  const int fd = open(lp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    rmdir(d->path);
    return zs_err(ZS_ERR_IO, "NVMe tier: cannot create %s: %s", lp, strerror(e));
  }
  /* A file system without flock (some network and FUSE ones) gets no lock: its directories
     look live to every reclaimer (whose flock fails alike), so none is ever reclaimed there. */
  const int locked = flock(fd, LOCK_EX | LOCK_NB) == 0;
  const int busy = !locked && errno == EWOULDBLOCK;
  struct stat a, b;
  if (busy || fstat(fd, &a) != 0 || stat(lp, &b) != 0 || a.st_ino != b.st_ino ||
      a.st_dev != b.st_dev) {
    close(fd); /* a reclaimer holds it or has removed it: its directory is going */
    *again = 1;
    return zs_err(ZS_ERR_IO,
                  "NVMe tier: %s was taken by a concurrent reclaim of dead runs' tiers, or "
                  "exists already, 8 times in a row",
                  d->path);
  }
  d->lock_fd = fd;
  return ZS_OK;
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
  snprintf(d->root, sizeof d->root, "%s", root);
  d->lock_fd = -1;
  /* The process's count of tiers opened: two engines of one process on one root (or one engine
     after another) get directories of their own. A name whose lock a reclaimer took in the
     moment between its creation and ours (zs_nvme_reclaim) is given up for the next one. */
  static _Atomic unsigned long opened;
  zs_status rc = ZS_ERR_IO;
  const unsigned long base = name_base();
  for (int tries = 0, again = 1; tries < 8 && again; tries++) {
    const unsigned long seq = base + opened++;
    const int n =
        snprintf(d->path, sizeof d->path, "%s/rank%d-%ld-%lu", root, rank, (long)getpid(), seq);
    if (n < 0 || (size_t)n >= sizeof d->path - sizeof ZS_NVME_LOCK - 1) {
      free(d);
      return zs_err(ZS_ERR_INVALID_ARG, "NVMe tier: the path %s is too long", root);
    }
    rc = zs_dir_make_locked(d, &again);
  }
  if (rc != ZS_OK) {
    free(d);
    return rc;
  }
  rc = zs_dir_probe(d);
  if (rc != ZS_OK) {
    zs_nvme_dir_close(d);
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
  return zs_nvme_space_check(d->root, d->path, bytes, bytes, 1);
}

/* Removes every file of the directory at path, the lock file last (its holder's lock keeps it
   ours to the end), then the directory; the bytes the files held (st_blocks) added to *freed
   when not NULL. 1 when the directory is gone by our hand (0: another reclaim's was first). */
static int remove_dir(const char *path, uint64_t *freed) {
  DIR *dir = opendir(path);
  if (dir) {
    const int dfd = dirfd(dir);
    for (struct dirent *e; (e = readdir(dir));) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ZS_NVME_LOCK))
        continue;
      struct stat st;
      if (freed && fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        *freed += (uint64_t)st.st_blocks * 512u;
      unlinkat(dfd, e->d_name, 0);
    }
    unlinkat(dfd, ZS_NVME_LOCK, 0);
    closedir(dir);
  }
  return rmdir(path) == 0;
}

void zs_nvme_dir_close(zs_nvme_dir *d) {
  if (!d) return;
  remove_dir(d->path, NULL);
  if (d->lock_fd >= 0) close(d->lock_fd);
  free(d);
}

/* Whether name is a tier directory's ("rank<R>-<pid>-<n>"). */
static int tier_name(const char *name) {
  int r, k = 0;
  long pid;
  unsigned long n;
  return sscanf(name, "rank%d-%ld-%lu%n", &r, &pid, &n, &k) == 3 && name[k] == '\0';
}

/* The bytes the files of directory path hold (st_blocks). */
static uint64_t dir_bytes(const char *path) {
  uint64_t b = 0;
  DIR *dir = opendir(path);
  if (!dir) return 0;
  const int dfd = dirfd(dir);
  for (struct dirent *e; (e = readdir(dir));) {
    struct stat st;
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      b += (uint64_t)st.st_blocks * 512u;
  }
  closedir(dir);
  return b;
}

/* What the tier directory root/name is: 0 dead (its lock free: taken into *fd), 1 live (its lock
   held), 2 without a lock file (a run still creating it, or an older zshard's). */
static int tier_owner(const char *root, const char *name, int *fd) {
  char lp[2 * ZS_NVME_PATH_MAX];
  const int n = snprintf(lp, sizeof lp, "%s/%s/" ZS_NVME_LOCK, root, name);
  *fd = n > 0 && (size_t)n < sizeof lp ? open(lp, O_RDWR | O_NOFOLLOW | O_CLOEXEC) : -1;
  if (*fd < 0) return 2;
  struct stat a, b;
  /* Dead only when the file we hold locked is still the lock at that path: else another
     reclaimer removed it meanwhile and the name may be a new run's. */
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0 && fstat(*fd, &a) == 0 && stat(lp, &b) == 0 &&
      a.st_ino == b.st_ino && a.st_dev == b.st_dev)
    return 0;
  close(*fd);
  *fd = -1;
  return 1;
}

zs_status zs_nvme_reclaim(const char *root, zs_nvme_reclaimed *out) {
  memset(out, 0, sizeof *out);
  DIR *dir = opendir(root);
  if (!dir) return ZS_OK; /* zs_nvme_dir_open says what is wrong with root */
  for (struct dirent *e; (e = readdir(dir));) {
    int fd;
    if (!tier_name(e->d_name) || tier_owner(root, e->d_name, &fd) != 0) continue;
    char path[2 * ZS_NVME_PATH_MAX];
    const int n = snprintf(path, sizeof path, "%s/%s", root, e->d_name);
    uint64_t freed = 0;
    if (n > 0 && (size_t)n < sizeof path && remove_dir(path, &freed)) {
      out->bytes += freed;
      out->dirs++;
    }
    close(fd);
  }
  closedir(dir);
  return ZS_OK;
}

/* ", held by other runs' tiers there: NAME (live, B bytes), ..." for the tier directories under
   root other than self (NULL: none is ours), into buf; "" when there are none. */
static void others(const char *root, const char *self, char *buf, size_t len) {
  buf[0] = '\0';
  DIR *dir = opendir(root);
  if (!dir) return;
  size_t at = 0;
  int shown = 0, more = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    char path[2 * ZS_NVME_PATH_MAX];
    const int n = snprintf(path, sizeof path, "%s/%s", root, e->d_name);
    if (!tier_name(e->d_name) || n < 0 || (size_t)n >= sizeof path || (self && !strcmp(path, self)))
      continue;
    if (shown == 4) {
      more++;
      continue;
    }
    int fd;
    const int kind = tier_owner(root, e->d_name, &fd);
    if (fd >= 0) close(fd); /* dead since the reclaim: named all the same */
    const int w = snprintf(buf + at, len - at, "%s%s (%s, %llu bytes)",
                           shown ? ", " : "; other runs' tiers hold space there: ", path,
                           kind == 1   ? "a live run's"
                           : kind == 2 ? "no lock: an older zshard's or one being created; remove "
                                         "it if no run uses it"
                                       : "its run has ended",
                           (unsigned long long)dir_bytes(path));
    if (w < 0 || (size_t)w >= len - at) break;
    at += (size_t)w;
    shown++;
  }
  closedir(dir);
  if (more && at < len) snprintf(buf + at, len - at, " and %d more", more);
}

zs_status zs_nvme_space_check(const char *root, const char *self, uint64_t total, uint64_t mine,
                              int nranks) {
  struct statvfs sv;
  if (statvfs(root, &sv) != 0)
    return zs_err(ZS_ERR_IO, "NVMe tier: statvfs(%s) failed: %s", root, strerror(errno));
  const uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
  if (avail >= total) return ZS_OK;
  char held[1536];
  others(root, self, held, sizeof held);
  if (nranks > 1)
    return zs_err(ZS_ERR_IO,
                  "NVMe tier: %s needs %llu bytes of disk for the %d ranks of this host whose "
                  "nvme_path is on its file system (%llu of them this rank's), and it has %llu "
                  "free%s: free space, name a directory on a larger disk, or give ranks "
                  "directories on different disks",
                  root, (unsigned long long)total, nranks, (unsigned long long)mine,
                  (unsigned long long)avail, held);
  return zs_err(ZS_ERR_IO,
                "NVMe tier: %s needs %llu bytes of disk and its file system has %llu free%s: "
                "free space or name a directory on a larger disk",
                self ? self : root, (unsigned long long)total, (unsigned long long)avail, held);
}
