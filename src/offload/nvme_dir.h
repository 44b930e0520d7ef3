/* The NVMe tier's per-rank directory: <root>/rank<R>-<pid>-<n>, created on open and removed, with
 * every file in it, on close. Its owner holds an flock on <dir>/.lock for the directory's life,
 * so the kernel releases it when the owner dies, however it dies: a later run reclaims the
 * directories whose lock is free (zs_nvme_reclaim) and never a live run's. Opening it also
 * proves that its file system takes O_DIRECT reads and writes (tmpfs refuses them) and finds
 * the alignment they need. Not collective: each rank opens its own. Part of the offload layer
 * (docs/ARCHITECTURE.md, "The NVMe tier"). */
#ifndef ZS_OFFLOAD_NVME_DIR_H
#define ZS_OFFLOAD_NVME_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

typedef struct zs_nvme_dir zs_nvme_dir;

/* Creates the directory <root>/rank<rank>-<pid>-<n> (root must exist; rank >= 0) and probes it with
   an O_DIRECT write and read of one aligned block, its lock held. An existing directory of that
   name is taken over when empty, else passed over for the next n. Errors (nothing left behind,
   *out untouched): ZS_ERR_INVALID_ARG (NULL, rank < 0, root missing or not a directory, 8 names
   in a row taken),
   ZS_ERR_UNSUPPORTED (root is on tmpfs or ramfs, memory rather than a disk, or its file system
   refuses O_DIRECT; the message names the path and the fix), ZS_ERR_IO (mkdir or the probe failed),
   ZS_ERR_OUT_OF_MEMORY. The caller owns *out and frees it with zs_nvme_dir_close. */
zs_status zs_nvme_dir_open(const char *root, int rank, zs_nvme_dir **out);

/* The directory's path ("<root>/rank<R>-<pid>-<n>", n a random base per process plus the count of
   tiers it opened, so neither two engines nor two runs with one pid share a name);
 * valid until zs_nvme_dir_close. */
const char *zs_nvme_dir_path(const zs_nvme_dir *d);

/* The alignment, in bytes, of every O_DIRECT offset, length and buffer address in this directory:
   a power of two, at least 4096 (any disk's logical block), raised to the file system's
   preferred block size (st_blksize) when that is a larger power of two up to 64 KiB. */
size_t zs_nvme_dir_align(const zs_nvme_dir *d);
/* The alignment a directory under root would get, from root itself (4096 when it cannot be
   read): for sizing the files before the directory exists. */
size_t zs_nvme_root_align(const char *root);
/* The same for the file system that holds the open file or directory fd. */
size_t zs_nvme_fd_align(int fd);

/* ZS_OK when the directory's file system has at least `bytes` free for this user (statvfs
   f_bavail); else ZS_ERR_IO naming the path, the bytes needed and the bytes free
   (zs_nvme_space_check for this directory alone). */
zs_status zs_nvme_dir_check_space(const zs_nvme_dir *d, uint64_t bytes);

/* ZS_OK when root's file system has at least total bytes free (statvfs f_bavail), total being
   what nranks ranks of this host with a tier there need together (mine of them this rank's);
   else ZS_ERR_IO saying so, with the other runs' tier directories under root (not self, this
   rank's own, NULL: none) and their bytes: a live run's, or one without a lock. */
zs_status zs_nvme_space_check(const char *root, const char *self, uint64_t total, uint64_t mine,
                              int nranks);

/* What zs_nvme_reclaim removed. */
typedef struct {
  int dirs;       /* dead runs' tier directories */
  uint64_t bytes; /* the bytes their files held */
} zs_nvme_reclaimed;

/* Removes the tier directories under root (rank<R>-<pid>-<n>) whose owner has died: those whose
   lock file exists and is not locked. A live run's (locked) and one without a lock file (being
   created, or an older zshard's) stay. Safe against concurrent reclaims and opens on any
   host sharing root. Never fails (an unreadable root reclaims nothing: ZS_OK). */
zs_status zs_nvme_reclaim(const char *root, zs_nvme_reclaimed *out);

/* Removes every file in the directory, then the directory itself, and frees d (NULL: nothing).
   Files still open elsewhere lose their names only. Never fails: a file that cannot be removed
   leaves the directory in place (nothing is reported; the library never prints). */
void zs_nvme_dir_close(zs_nvme_dir *d);

#endif
