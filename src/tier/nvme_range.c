/* The NVMe tier's range reads and writes (nvme_tier.h: zs_tier_nvme_ops' read and write): any range
 * of elements of one array of a unit on the tier, copied through the tier's first staging slot in
 * windows of at most one slot, with plain pread/pwrite on the O_DIRECT descriptor (aligned offsets,
 * lengths and buffer). A write reads back the aligned blocks at its unaligned ends first
 * (read-modify-write), so the elements around the range keep their values. Bounded host memory:
 * the slot, whatever the range. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "tier/nvme_tier.h"
#include "base/error.h"

/* Reads len bytes of f at off into buf (aligned), resuming short reads. ZS_ERR_IO naming the file
   and the offset (an errno, or an end of file: the file was truncated). */
static zs_status pread_all(const zs_nvme_file *f, void *buf, size_t len, uint64_t off) {
  size_t done = 0;
  while (done < len) {
    const ssize_t r = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return zs_err(ZS_ERR_IO,
                    "NVMe tier: read of %s at offset %llu (%zu bytes) failed: %s; restart from the "
                    "last checkpoint",
                    f->path, (unsigned long long)(off + done), len - done,
                    r < 0 ? strerror(errno) : "unexpected end of file (was it truncated?)");
    done += (size_t)r;
  }
  return ZS_OK;
}

/* Writes len bytes of buf (aligned) to f at off, resuming short writes. ZS_ERR_IO naming the file
   and the offset (a full disk, the file size limit, an I/O error). */
static zs_status pwrite_all(const zs_nvme_file *f, const void *buf, size_t len, uint64_t off) {
  size_t done = 0;
  while (done < len) {
    const ssize_t r = pwrite(f->fd, (const char *)buf + done, len - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return zs_err(
          ZS_ERR_IO,
          "NVMe tier: write of %s at offset %llu (%zu bytes) failed: %s; restart from the "
          "last checkpoint",
          f->path, (unsigned long long)(off + done), len - done,
          r < 0 ? strerror(errno) : "nothing written");
    done += (size_t)r;
  }
  return ZS_OK;
}

/* The checks shared by read and write: the tier, a unit on it, the array, the range; then the
   file still being there whole (zs_nvme_file_check). *f is the array's file. */
static zs_status check_range(const zs_tiers *t, const zs_unit *u, zs_arr which, size_t first,
                             size_t n, const void *buf, const char *fn, const zs_nvme_file **f) {
  if (!t || !u || !buf) return zs_err(ZS_ERR_INVALID_ARG, "%s: NULL tiers, unit or buffer", fn);
  if (!t->nvme || (int)which < 0 || which >= ZS_ARR_N || !u->nv[which])
    return zs_err(ZS_ERR_INVALID_ARG, "%s: unit '%s' has no array %d on the NVMe tier", fn, u->name,
                  which);
  if (first > u->opt_n || n > u->opt_n - first)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "%s: elements [%zu, %zu + %zu) are past unit '%s''s %zu optimizer elements", fn,
                  first, first, n, u->name, u->opt_n);
  *f = u->nv[which];
  return zs_nvme_file_check(*f);
}

/* The aligned byte window [*lo, *hi) of the file that covers bytes [a, b). */
static void aligned_span(uint64_t a, uint64_t b, uint64_t al, uint64_t *lo, uint64_t *hi) {
  *lo = a / al * al;
  *hi = (b + al - 1) / al * al;
}

zs_status zs_nvme_tier_read(zs_tiers *t, const zs_unit *u, zs_arr which, size_t first, size_t n,
                            void *dst) {
  const zs_nvme_file *f = NULL;
  ZS_CHECK(check_range(t, u, which, first, n, dst, "NVMe tier read", &f));
  if (n == 0) return ZS_OK;
  char *slot = zs_nvme_staging_slot(t->nvme->staging, 0);
  const uint64_t al = zs_nvme_staging_align(t->nvme->staging);
  const uint64_t win = zs_nvme_staging_slot_bytes(t->nvme->staging) / al * al;
  const uint64_t eb = zs_tier_elem(u, which);
  const uint64_t a = (uint64_t)first * eb, b = (uint64_t)(first + n) * eb;
  uint64_t lo, hi;
  aligned_span(a, b, al, &lo, &hi);
  for (uint64_t off = lo; off < hi; off += win) {
    const uint64_t len = hi - off < win ? hi - off : win;
    ZS_CHECK(pread_all(f, slot, (size_t)len, off));
    /* The part of [a, b) inside this window. */
    const uint64_t ca = a > off ? a : off, cb = b < off + len ? b : off + len;
    memcpy((char *)dst + (ca - a), slot + (ca - off), (size_t)(cb - ca));
  }
  return ZS_OK;
}

zs_status zs_nvme_tier_write(zs_tiers *t, const zs_unit *u, zs_arr which, size_t first, size_t n,
                             const void *src) {
  const zs_nvme_file *f = NULL;
  ZS_CHECK(check_range(t, u, which, first, n, src, "NVMe tier write", &f));
  if (n == 0) return ZS_OK;
  char *slot = zs_nvme_staging_slot(t->nvme->staging, 0);
  const uint64_t al = zs_nvme_staging_align(t->nvme->staging);
  const uint64_t win = zs_nvme_staging_slot_bytes(t->nvme->staging) / al * al;
  const uint64_t eb = zs_tier_elem(u, which);
  const uint64_t a = (uint64_t)first * eb, b = (uint64_t)(first + n) * eb;
  uint64_t lo, hi;
  aligned_span(a, b, al, &lo, &hi);
  for (uint64_t off = lo; off < hi; off += win) {
    const uint64_t len = hi - off < win ? hi - off : win;
    const uint64_t ca = a > off ? a : off, cb = b < off + len ? b : off + len;
    /* Read-modify-write: the window's first and last blocks when the range covers them only in
       part (the bytes around it are other elements, or the file's zero tail). */
    if (ca > off) ZS_CHECK(pread_all(f, slot, (size_t)al, off));
    if (cb < off + len && (len > al || ca == off))
      ZS_CHECK(pread_all(f, slot + (len - al), (size_t)al, off + len - al));
    memcpy(slot + (ca - off), (const char *)src + (ca - a), (size_t)(cb - ca));
    ZS_CHECK(pwrite_all(f, slot, (size_t)len, off));
  }
  return ZS_OK;
}
