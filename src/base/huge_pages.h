/* Transparent huge pages for the large host mappings that the optimizer streams through. A CPU
 * update reads and writes four to seven arrays at once; with 4 KiB pages each stream misses the
 * TLB every 4 KiB, which cost the fp32 AdamW loop about 12% on one core (bench/cpu_adamw, 3e7
 * elements: 1.43-1.61 against 1.63-1.82 Gparam/s). Only the 2 MiB-aligned interior of a mapping
 * is advised, so resident memory never exceeds the mapping; where THP is "never" the advice does
 * nothing, and the values and bits are the same either way. */
#ifndef ZS_BASE_HUGE_PAGES_H
#define ZS_BASE_HUGE_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define ZS_HUGE_PAGE ((uintptr_t)2 << 20)

/* Advises MADV_HUGEPAGE on the 2 MiB-aligned part of [p, p + len) of a fresh anonymous mapping
   (before first touch); mappings under two huge pages are left alone. A refusal is ignored: the
   advice changes speed only. */
static inline void zs_advise_huge_pages(void *p, size_t len) {
#ifdef MADV_HUGEPAGE
  if (!p || len < 2 * ZS_HUGE_PAGE) return;
  const uintptr_t b = ((uintptr_t)p + ZS_HUGE_PAGE - 1) & ~(ZS_HUGE_PAGE - 1);
  const uintptr_t e = ((uintptr_t)p + len) & ~(ZS_HUGE_PAGE - 1);
  if (e > b) (void)madvise((void *)b, (size_t)(e - b), MADV_HUGEPAGE);
#else
  (void)p;
  (void)len;
#endif
}

#endif
