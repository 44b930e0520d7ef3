/* CPU AdamW over a worker pool (see cpu_adamw.h): large arrays are cut into tiles, each tile runs
 * the path's single-threaded kernel. */
#include "optim/adamw/adamw_mt.h"

#include "base/config.h"

#include <stdlib.h>

/* One threaded call: arrays (m and v of msz bytes per element: k16 runs them when 2) and the
   tile count. */
typedef struct {
  zs_adamw_kernel k;
  zs_adamw_kernel_m16 k16;
  const zs_adamw_coef *c;
  float *master;
  char *m, *v;
  const char *grad;
  char *out;
  zs_dtype grad_dt, param_dt;
  size_t msz, gsz, osz, n;
} zs_adamw_tiles;

/* Elements [i, i + len) of the arrays, by the path's single-threaded kernel. */
static void run_range(const zs_adamw_tiles *t, size_t i, size_t len) {
  const char *g = t->grad + i * t->gsz;
  void *o = t->out ? t->out + i * t->osz : NULL;
  if (t->msz == 2)
    t->k16(t->c, t->master + i, (uint16_t *)(void *)(t->m + i * 2),
           (uint16_t *)(void *)(t->v + i * 2), g, t->grad_dt, o, t->param_dt, len);
  else
    t->k(t->c, t->master + i, (float *)(void *)(t->m + i * 4), (float *)(void *)(t->v + i * 4), g,
         t->grad_dt, o, t->param_dt, len);
}

/* Pool work item: tile `item` of the arrays. */
static void zs_adamw_tile(void *ctx, size_t item, int worker) {
  const zs_adamw_tiles *t = ctx;
  const size_t i = item * ZS_ADAMW_TILE;
  run_range(t, i, t->n - i < ZS_ADAMW_TILE ? t->n - i : ZS_ADAMW_TILE);
  (void)worker;
}

/* Runs t over pool in tiles, or in one call on the calling thread when there is no pool of two
   or more workers or the arrays are short (waking workers would cost more than it saves). */
static void run_tiles(zs_pool *pool, const zs_adamw_tiles *t) {
  const size_t items = (t->n + ZS_ADAMW_TILE - 1) / ZS_ADAMW_TILE;
  if (pool && zs_pool_size(pool) >= 2 && t->n >= ZS_ADAMW_MT_MIN &&
      zs_pool_run(pool, items, zs_adamw_tile, (void *)t) == ZS_OK)
    return;
  run_range(t, 0, t->n); /* elementwise: the same bits as the tiles */
}

void zs_cpu_adamw_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                     float *m, float *v, const void *grad, zs_dtype grad_dt, void *param_out,
                     zs_dtype param_dt, size_t n) {
  const zs_adamw_tiles t = {.k = zs_adamw_kernel_for(zs_adamw_isa_resolve(isa)),
                            .c = c,
                            .master = master,
                            .m = (char *)m,
                            .v = (char *)v,
                            .grad = grad,
                            .out = param_out,
                            .grad_dt = grad_dt,
                            .param_dt = param_dt,
                            .msz = 4,
                            .gsz = zs_dtype_size(grad_dt),
                            .osz = zs_dtype_size(param_dt),
                            .n = n};
  run_tiles(pool, &t);
}

void zs_cpu_adamw_m16_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                         uint16_t *m, uint16_t *v, const void *grad, zs_dtype grad_dt,
                         void *param_out, zs_dtype param_dt, size_t n) {
  const zs_adamw_tiles t = {.k16 = zs_adamw_kernel_m16_for(zs_adamw_isa_resolve(isa)),
                            .c = c,
                            .master = master,
                            .m = (char *)m,
                            .v = (char *)v,
                            .grad = grad,
                            .out = param_out,
                            .grad_dt = grad_dt,
                            .param_dt = param_dt,
                            .msz = 2,
                            .gsz = zs_dtype_size(grad_dt),
                            .osz = zs_dtype_size(param_dt),
                            .n = n};
  run_tiles(pool, &t);
}

void zs_cpu_adamw_mt(zs_pool *pool, const zs_adamw_coef *c, float *master, float *m, float *v,
                     const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                     size_t n) {
  zs_cpu_adamw_ex(pool, ZS_ADAMW_ISA_AUTO, c, master, m, v, grad, grad_dt, param_out, param_dt, n);
}

int zs_cpu_adamw_env_threads(void) {
  const char *s = zs_env("ZS_ADAMW_THREADS");
  long n = s ? strtol(s, NULL, 10) : 1;
  return n > 1 && n <= 4096 ? (int)n : 1;
}
