/* One O_DIRECT state file of the NVMe tier (nvme_file.h). */
#include "offload/nvme_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

/* Reserves [0, bytes) of fd: fallocate, or ftruncate where the file system has none. 0 or an
   errno. */
static int zs_file_reserve(int fd, uint64_t bytes) {
  if (bytes == 0) return 0;
  if (fallocate(fd, 0, 0, (off_t)bytes) == 0) return 0;
  if (errno != EOPNOTSUPP) return errno;
  return ftruncate(fd, (off_t)bytes) == 0 ? 0 : errno;
}

zs_status zs_nvme_file_create(const zs_nvme_dir *dir, const char *name, uint64_t bytes,
                              zs_nvme_file **out) {
  if (!dir || !name || !*name || strchr(name, '/') || !out)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_nvme_file_create: NULL dir or out, or a name that is empty or has a '/'");
  zs_nvme_file *f = calloc(1, sizeof *f);
  if (!f) return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no memory for a file handle");
  const int n = snprintf(f->path, sizeof f->path, "%s/%s", zs_nvme_dir_path(dir), name);
  if (n < 0 || (size_t)n >= sizeof f->path) {
    free(f);
    return zs_err(ZS_ERR_INVALID_ARG, "NVMe tier: the file name %s is too long", name);
  }
  const uint64_t a = zs_nvme_dir_align(dir);
  f->bytes = (bytes + a - 1) / a * a;
  f->fd = open(f->path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
  if (f->fd < 0) {
    zs_status rc = zs_err(ZS_ERR_IO, "NVMe tier: cannot create %s: %s", f->path, strerror(errno));
    free(f);
    return rc;
  }
  const int e = zs_file_reserve(f->fd, f->bytes);
  if (e) {
    zs_status rc = zs_err(ZS_ERR_IO, "NVMe tier: cannot reserve %llu bytes for %s: %s%s",
                          (unsigned long long)f->bytes, f->path, strerror(e),
                          e == ENOSPC || e == EFBIG || e == EDQUOT
                              ? " (free disk space, raise the file size limit or quota, or name a "
                                "directory on a larger disk)"
                              : "");
    zs_nvme_file_close(f);
    return rc;
  }
  *out = f;
  return ZS_OK;
}

zs_status zs_nvme_file_check(const zs_nvme_file *f) {
  struct stat st;
  if (fstat(f->fd, &st) != 0)
    return zs_err(ZS_ERR_IO, "NVMe tier: fstat(%s) failed: %s", f->path, strerror(errno));
  if (st.st_nlink == 0)
    return zs_err(ZS_ERR_IO,
                  "NVMe tier: %s was deleted while in use (offset 0): its data is lost; restart "
                  "from the last checkpoint and keep the tier directory untouched",
                  f->path);
  if ((uint64_t)st.st_size < f->bytes)
    return zs_err(ZS_ERR_IO,
                  "NVMe tier: %s was truncated to %lld bytes (offset %lld; it had %llu): its data "
                  "is lost; restart from the last checkpoint",
                  f->path, (long long)st.st_size, (long long)st.st_size,
                  (unsigned long long)f->bytes);
  return ZS_OK;
}

void zs_nvme_file_close(zs_nvme_file *f) {
  if (!f) return;
  if (f->fd >= 0) close(f->fd);
  unlink(f->path);
  free(f);
}
