/* The NVMe tier's aligned (optionally pinned) staging slots (nvme_staging.h): one allocation,
 * cut into equal slots. */
#include "offload/nvme_staging.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#ifdef ZS_HAVE_CUDA
#include "offload/host_arena_impl.h" /* zs_host_pin, zs_host_unpin */
#endif

struct zs_nvme_staging {
  char *base; /* slots * slot_bytes bytes, aligned to align */
  size_t slot_bytes, align;
  unsigned slots;
  int pinned;
};

zs_status zs_nvme_staging_create(size_t slot_bytes, unsigned slots, size_t align, unsigned flags,
                                 zs_nvme_staging **out) {
  if (!out || slot_bytes == 0 || slots == 0 || align < 512 || (align & (align - 1)))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_nvme_staging_create: NULL out, zero sizes, or alignment %zu not a power of "
                  "two >= 512",
                  align);
  const size_t sb = (slot_bytes + align - 1) / align * align;
  if (sb < slot_bytes || sb > SIZE_MAX / slots)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_nvme_staging_create: %u slots of %zu bytes overflow",
                  slots, slot_bytes);
  zs_nvme_staging *s = calloc(1, sizeof *s);
  if (!s) return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no memory for the staging handle");
  void *p = NULL;
  if (posix_memalign(&p, align, sb * slots) != 0) {
    free(s);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "NVMe tier: no memory for %u staging slots of %zu bytes",
                  slots, sb);
  }
  memset(p, 0, sb * slots); /* touched now: the first step does not fault pages in */
  *s = (zs_nvme_staging){.base = p, .slot_bytes = sb, .align = align, .slots = slots};
#ifdef ZS_HAVE_CUDA
  if (flags & ZS_NVME_STAGING_PIN) {
    zs_status rc = zs_host_pin(p, sb * slots);
    if (rc != ZS_OK) {
      free(p);
      free(s);
      return zs_err_wrap(rc, "NVMe tier staging (%u slots of %zu bytes)", slots, sb);
    }
    s->pinned = 1;
  }
#else
  (void)flags;
#endif
  *out = s;
  return ZS_OK;
}

unsigned zs_nvme_staging_flags_for(zs_device kind) {
  return kind == ZS_DEVICE_CUDA ? ZS_NVME_STAGING_PIN : 0u;
}

void *zs_nvme_staging_slot(const zs_nvme_staging *s, unsigned i) {
  return s->base + (size_t)i * s->slot_bytes;
}

unsigned zs_nvme_staging_slots(const zs_nvme_staging *s) {
  return s->slots;
}

size_t zs_nvme_staging_slot_bytes(const zs_nvme_staging *s) {
  return s->slot_bytes;
}

size_t zs_nvme_staging_align(const zs_nvme_staging *s) {
  return s->align;
}

int zs_nvme_staging_pinned(const zs_nvme_staging *s) {
  return s->pinned;
}

void zs_nvme_staging_destroy(zs_nvme_staging *s) {
  if (!s) return;
#ifdef ZS_HAVE_CUDA
  if (s->pinned) zs_host_unpin(s->base);
#endif
  free(s->base);
  free(s);
}
