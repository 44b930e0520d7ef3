/* CPU AdamW over a worker pool (see cpu_adamw.h): large arrays are cut into tiles, each tile runs
 * the path's single-threaded kernel. */
#include "offload/cpu_adamw.h"

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

/* Pool work item: tile `item` of the arrays. */
static void zs_adamw_tile(void *ctx, size_t item, int worker) {
  const zs_adamw_tiles *t = ctx;
  size_t i = item * ZS_ADAMW_TILE;
  size_t len = t->n - i < ZS_ADAMW_TILE ? t->n - i : ZS_ADAMW_TILE;
  const char *g = t->grad + i * t->gsz;
  void *o = t->out ? t->out + i * t->osz : NULL;
  if (t->msz == 2)
    t->k16(t->c, t->master + i, (uint16_t *)(void *)(t->m + i * 2),
           (uint16_t *)(void *)(t->v + i * 2), g, t->grad_dt, o, t->param_dt, len);
  else
    t->k(t->c, t->master + i, (float *)(void *)(t->m + i * 4), (float *)(void *)(t->v + i * 4), g,
         t->grad_dt, o, t->param_dt, len);
  (void)worker;
}

/* Runs t over pool (large enough: the caller checked); the calling thread if the pool refuses. */
static void run_tiles(zs_pool *pool, zs_adamw_tiles *t) {
  const size_t items = (t->n + ZS_ADAMW_TILE - 1) / ZS_ADAMW_TILE;
  if (zs_pool_run(pool, items, zs_adamw_tile, t) != ZS_OK) /* unreachable: pool is valid */
    for (size_t i = 0; i < items; i++)
      zs_adamw_tile(t, i, 0);
}

void zs_cpu_adamw_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                     float *m, float *v, const void *grad, zs_dtype grad_dt, void *param_out,
                     zs_dtype param_dt, size_t n) {
  zs_adamw_kernel k = zs_adamw_kernel_for(zs_adamw_isa_resolve(isa));
  if (!pool || zs_pool_size(pool) < 2 || n < ZS_ADAMW_MT_MIN) {
    k(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
    return;
  }
  zs_adamw_tiles t = {k,
                      NULL,
                      c,
                      master,
                      (char *)m,
                      (char *)v,
                      grad,
                      param_out,
                      grad_dt,
                      param_dt,
                      4,
                      zs_dtype_size(grad_dt),
                      zs_dtype_size(param_dt),
                      n};
  run_tiles(pool, &t);
}

void zs_cpu_adamw_m16_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                         uint16_t *m, uint16_t *v, const void *grad, zs_dtype grad_dt,
                         void *param_out, zs_dtype param_dt, size_t n) {
  zs_adamw_kernel_m16 k = zs_adamw_kernel_m16_for(zs_adamw_isa_resolve(isa));
  if (!pool || zs_pool_size(pool) < 2 || n < ZS_ADAMW_MT_MIN) {
    k(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
    return;
  }
  zs_adamw_tiles t = {NULL,
                      k,
                      c,
                      master,
                      (char *)m,
                      (char *)v,
                      grad,
                      param_out,
                      grad_dt,
                      param_dt,
                      2,
                      zs_dtype_size(grad_dt),
                      zs_dtype_size(param_dt),
                      n};
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
