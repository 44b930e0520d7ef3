/* Software prefetch for the CPU AdamW loops (the AVX2 and AVX-512 paths of adamw*.c).
 *
 * Each loop streams 4 to 7 arrays in place once per step. On the 2-core VMs these kernels were
 * tuned on, the hardware prefetchers did not keep up with that many streams, and the loops spent
 * about as long waiting for memory as computing: asking for each array's line ZS_PREFETCH_ELEMS
 * elements ahead took the lean update with bf16 moments from 1.08 to 1.90 Gparam/s on one core and
 * from 2.1 to 3.4 on two (bench/cpu_adamw_lean, 3e7 elements; 512 to 2048 elements ahead all
 * helped about as much, 4096 less). The AVX-512 loop with fp32 moments (4 fp32 streams) is the
 * exception: there the prefetches cost 12-20% (1.68 against 1.49 Gparam/s on one core, 2.7-2.9
 * against 2.4 on two, back-to-back A/B runs at 3e7 on 2026-11-28), so it asks for none. A prefetch
 * never faults and changes no value, so the loops' bits are untouched; addresses past an array's
 * end are formed as integers, never as pointers. */
#ifndef ZS_OPTIM_ADAMW_CPU_PREFETCH_H
#define ZS_OPTIM_ADAMW_CPU_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

/* How far ahead of element i the loops ask for lines, in elements of each array. */
#define ZS_PREFETCH_ELEMS 1024u

/* Asks for the cache line of element i + ZS_PREFETCH_ELEMS of the array at base (elements of
   esz bytes); base may be NULL (then nothing is asked for). */
static inline void zs_prefetch_ahead(const void *base, size_t i, size_t esz) {
  if (base)
    __builtin_prefetch((const void *)((uintptr_t)base + (i + ZS_PREFETCH_ELEMS) * esz), 0, 3);
}

#endif
