/* The NVMe tier's staging buffers: a few equal slots of host memory, aligned for O_DIRECT, that
 * the stream (nvme_stream.h) reads chunks into, the optimizer updates in place, and the stream
 * writes back from. Bounded: slots x slot_bytes is all the host memory the tier's I/O uses.
 * Pinned for CUDA copies when asked (CUDA builds). Not collective; one user at a time. */
#ifndef ZS_OFFLOAD_NVME_STAGING_H
#define ZS_OFFLOAD_NVME_STAGING_H

#include <stddef.h>

#include "zshard.h"

typedef struct zs_nvme_staging zs_nvme_staging;

/* Flags of zs_nvme_staging_create. */
enum {
  /* Page-lock the slots for the CUDA device (cudaHostRegister); a failure is an error
     (ZS_ERR_DEVICE with the RLIMIT_MEMLOCK advice). Builds without CUDA leave them unpinned. */
  ZS_NVME_STAGING_PIN = 1u << 0
};

/* The flags a tier on a device of this kind opens its staging with (the engine's tier,
   tier/nvme_tier.c, and the tests that stand for it): pinned on CUDA, where the ledger books
   the staging as host_pinned and the slots are what device copies of a chunk read and write;
   unpinned on the CPU device, where pinning would only cost locked memory (host_pinned means
   the host tier there, as for the unpinned arena). */
unsigned zs_nvme_staging_flags_for(zs_device kind);

/* Allocates `slots` slots of slot_bytes each, every slot starting at a multiple of align (a
   power of two >= 512; slot_bytes is rounded up to it). ZS_ERR_INVALID_ARG for NULL, zero sizes
   or a bad alignment; ZS_ERR_OUT_OF_MEMORY; ZS_ERR_DEVICE (pinning). Caller owns *out. */
zs_status zs_nvme_staging_create(size_t slot_bytes, unsigned slots, size_t align, unsigned flags,
                                 zs_nvme_staging **out);

/* Slot i (< zs_nvme_staging_slots) of zs_nvme_staging_slot_bytes bytes; valid until destroy. */
void *zs_nvme_staging_slot(const zs_nvme_staging *s, unsigned i);
unsigned zs_nvme_staging_slots(const zs_nvme_staging *s);
size_t zs_nvme_staging_slot_bytes(const zs_nvme_staging *s);
size_t zs_nvme_staging_align(const zs_nvme_staging *s);
/* 1 when the slots are pinned for the CUDA device. */
int zs_nvme_staging_pinned(const zs_nvme_staging *s);

/* Unpins and frees (NULL: nothing). No I/O may still target the slots (drain the ring first). */
void zs_nvme_staging_destroy(zs_nvme_staging *s);

#endif
