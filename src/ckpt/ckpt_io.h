/* POSIX file helpers for checkpoints and exports: whole writes and reads that report errno in
 * the message, fsync of files and directories, the directory scan of ckpt-<seq> entries, and
 * the block size (the test build's hooks, ckpt_hooks.h, reach the writes and the block size). */
#ifndef ZS_CKPT_CKPT_IO_H
#define ZS_CKPT_CKPT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

/* The size of the data blocks this process writes (each has its checksum in the file's table):
   4 MiB (the test build may make them smaller: ckpt_hooks.h). */
uint64_t zs_ckpt_block_bytes(void);
/* Writes n bytes at the file position (retrying short writes and EINTR). ZS_ERR_IO naming path
   and errno (ENOSPC, EFBIG, EIO...). `hooked`: the bytes count for the test build's crash hook
   (data files; ckpt_hooks.h); nothing in the shipped library. */
zs_status zs_io_write(int fd, const void *p, size_t n, const char *path, int hooked, int rank);
/* Counts n bytes of a data file written by other means (O_DIRECT) as zs_io_write's hooked bytes
   count. */
void zs_io_count_written(size_t n, const char *path, int rank);
/* pwrite / pread of exactly n bytes at off; a short read (truncated file) is ZS_ERR_CORRUPT. */
zs_status zs_io_pwrite(int fd, const void *p, size_t n, uint64_t off, const char *path);
zs_status zs_io_pread(int fd, void *p, size_t n, uint64_t off, const char *path);
/* fsync of an open file / of the directory that holds entries just renamed or created. */
zs_status zs_io_fsync(int fd, const char *path);
zs_status zs_io_fsync_dir(const char *dir);
/* Creates dir (and missing parents) with mode 0755; an existing directory is fine. */
zs_status zs_io_mkdirs(const char *dir);
/* Removes dir and the plain files in it (a checkpoint directory), its manifest first (fsynced)
   so that a crash part-way never leaves a committed checkpoint with files missing; best effort,
   returns 0 or -1. */
int zs_io_rmdir_files(const char *dir);
/* Reads a whole file of at most max bytes (malloc'd, NUL-terminated). ZS_ERR_IO when it cannot
   be opened or read (ENOENT: "missing"), ZS_ERR_CORRUPT when larger than max. */
zs_status zs_io_slurp(const char *path, size_t max, char **out, size_t *len);
/* The checkpoints in dir: ckpt-<seq> entries, sorted by seq, each with whether it is committed
   (has a manifest). *seqs / *committed are malloc'd (free both); n may be 0. */
zs_status zs_io_scan(const char *dir, uint64_t **seqs, int **committed, int *n);
/* "<dir>/ckpt-<seq, 12 digits>" into out. */
void zs_io_ckpt_path(char *out, size_t cap, const char *dir, uint64_t seq);

#endif
