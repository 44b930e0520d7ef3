/* Lean-mode CPU AdamW over a worker pool (cpu_adamw_lean.h). */
#include "optim/adamw/adamw_lean_mt.h"

#include "optim/adamw/adamw_mt.h" /* ZS_ADAMW_TILE, ZS_ADAMW_MT_MIN */

/* One threaded call. */
typedef struct {
  zs_adamw_kernel_lean k;
  const zs_adamw_coef *c;
  const zs_lean_key *key;
  uint16_t *p;
  char *m, *v;
  const uint16_t *grad;
  int mbf16;
  size_t n;
} zs_lean_tiles;

/* Pool work item: tile `item`, a call of its own keyed from its first element. */
static void zs_lean_tile(void *ctx, size_t item, int worker) {
  const zs_lean_tiles *t = ctx;
  const size_t i = item * ZS_ADAMW_TILE, len = t->n - i < ZS_ADAMW_TILE ? t->n - i : ZS_ADAMW_TILE;
  const size_t msz = t->mbf16 ? 2 : 4;
  const zs_lean_key sub = {t->key->k0, t->key->k1, t->key->elem0 + i};
  t->k(t->c, &sub, t->p + i, t->m + i * msz, t->v + i * msz, t->mbf16, t->grad + i, len);
  (void)worker;
}

void zs_cpu_adamw_lean_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c,
                          const zs_lean_key *k, uint16_t *p, void *m, void *v, int mbf16,
                          const uint16_t *grad, size_t n) {
  const zs_lean_tiles t = {zs_adamw_kernel_lean_for(zs_adamw_isa_resolve(isa)),
                           c,
                           k,
                           p,
                           (char *)m,
                           (char *)v,
                           grad,
                           mbf16,
                           n};
  const size_t items = (n + ZS_ADAMW_TILE - 1) / ZS_ADAMW_TILE;
  if (pool && zs_pool_size(pool) >= 2 && n >= ZS_ADAMW_MT_MIN &&
      zs_pool_run(pool, items, zs_lean_tile, (void *)&t) == ZS_OK)
    return;
  t.k(c, k, p, m, v, mbf16, grad, n); /* elementwise: the same bits as the tiles */
}
