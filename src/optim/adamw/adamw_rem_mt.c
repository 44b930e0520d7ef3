/* The remainder-master CPU AdamW over a worker pool (cpu_adamw_rem.h). */
#include "optim/adamw/adamw_rem_mt.h"

/* One threaded call: the arrays and the path's kernel. */
typedef struct {
  zs_adamw_kernel_rem k;
  const zs_adamw_coef *c;
  uint16_t *param, *rem;
  char *m, *v;
  const uint16_t *grad;
  zs_dtype moment_dt;
  size_t msz, n;
} zs_adamw_rem_tiles;

/* Elements [i, i + len) by the path's single-threaded kernel. */
static void run_range(const zs_adamw_rem_tiles *t, size_t i, size_t len) {
  t->k(t->c, t->param + i, t->rem + i, t->m + i * t->msz, t->v + i * t->msz, t->moment_dt,
       t->grad + i, len);
}

/* Pool work item: tile `item`. */
static void rem_tile(void *ctx, size_t item, int worker) {
  const zs_adamw_rem_tiles *t = ctx;
  const size_t i = item * ZS_ADAMW_TILE;
  run_range(t, i, t->n - i < ZS_ADAMW_TILE ? t->n - i : ZS_ADAMW_TILE);
  (void)worker;
}

void zs_cpu_adamw_rem_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, uint16_t *param,
                         uint16_t *rem, void *m, void *v, zs_dtype moment_dt, const uint16_t *grad,
                         size_t n) {
  const zs_adamw_rem_tiles t = {zs_adamw_kernel_rem_for(zs_adamw_isa_resolve(isa)),
                                c,
                                param,
                                rem,
                                (char *)m,
                                (char *)v,
                                grad,
                                moment_dt,
                                zs_dtype_size(moment_dt),
                                n};
  const size_t items = (n + ZS_ADAMW_TILE - 1) / ZS_ADAMW_TILE;
  if (pool && zs_pool_size(pool) >= 2 && n >= ZS_ADAMW_MT_MIN &&
      zs_pool_run(pool, items, rem_tile, (void *)&t) == ZS_OK)
    return;
  run_range(&t, 0, n); /* elementwise: the same bits as the tiles */
}
