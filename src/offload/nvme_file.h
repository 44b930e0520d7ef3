/* One state file of the NVMe tier (an array of the optimizer state: master, m or v of the units
 * placed there), opened with O_DIRECT in the rank's tier directory (nvme_dir.h), its bytes
 * reserved up front so that a full disk shows at creation rather than in the middle of a step.
 * Not collective. */
#ifndef ZS_OFFLOAD_NVME_FILE_H
#define ZS_OFFLOAD_NVME_FILE_H

#include <stdint.h>

#include "offload/nvme_dir.h"
#include "zshard.h"

#define ZS_NVME_FILE_PATH_MAX 4352

/* Invariant: bytes is a multiple of the directory's alignment, and the file holds at least that
   many (reserved with fallocate, zero-filled). */
typedef struct zs_nvme_file {
  int fd; /* O_RDWR | O_DIRECT */
  uint64_t bytes;
  char path[ZS_NVME_FILE_PATH_MAX];
} zs_nvme_file;

/* Creates <dir>/<name> (a new file; name is one path component) with O_DIRECT and reserves
   `bytes` rounded up to zs_nvme_dir_align(dir) (fallocate; ftruncate where the file system has
   no fallocate). Errors (the file is removed again, *out untouched): ZS_ERR_INVALID_ARG (NULL,
   an empty name or one with '/'), ZS_ERR_IO naming the file (it exists, the disk is full, the
   file size limit, EIO), ZS_ERR_OUT_OF_MEMORY. The caller owns *out (zs_nvme_file_close). */
zs_status zs_nvme_file_create(const zs_nvme_dir *dir, const char *name, uint64_t bytes,
                              zs_nvme_file **out);

/* ZS_OK when the file still has its name (it was not deleted) and at least f->bytes bytes (it was
   not truncated); else ZS_ERR_IO naming it and what changed. */
zs_status zs_nvme_file_check(const zs_nvme_file *f);

/* Closes the file, removes it, and frees f (NULL: nothing). */
void zs_nvme_file_close(zs_nvme_file *f);

#endif
