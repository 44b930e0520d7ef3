/* Lean-mode CPU AdamW (src/optim/adamw/cpu/adamw_lean.h) split into tiles over a worker pool, as
 * cpu_adamw.h does for the other modes: each tile is a call of its own whose key starts at the
 * tile's first element, so the bits depend on neither the pool, its size, the path nor the tiles.
 * The pool belongs to the caller (an engine's optimizer). */
#ifndef ZS_OPTIM_ADAMW_ADAMW_LEAN_MT_H
#define ZS_OPTIM_ADAMW_ADAMW_LEAN_MT_H

#include <stddef.h>
#include <stdint.h>

#include "optim/adamw/cpu/adamw_lean.h"
#include "offload/worker_pool.h"

/* zs_cpu_adamw_lean on `pool`'s workers in tiles of ZS_ADAMW_TILE elements (NULL pool, a pool of
   one, or n < ZS_ADAMW_MT_MIN: the calling thread), on path isa (ZS_ADAMW_ISA_AUTO: the active
   one; a path the CPU lacks runs the next narrower one). Host memory only. */
void zs_cpu_adamw_lean_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c,
                          const zs_lean_key *k, uint16_t *p, void *m, void *v, int mbf16,
                          const uint16_t *grad, size_t n);

#endif
