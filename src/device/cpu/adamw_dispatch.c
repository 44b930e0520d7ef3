/* Chooses an AdamW path (scalar / AVX2 / AVX-512) at run time and splits large arrays into tiles
 * for a worker pool. Every path and every split gives the same bits: the update is elementwise
 * and each path performs adamw.h's operations in the same order. */
#include "device/cpu/adamw.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/worker_pool.h"

/* Arrays shorter than this run on the calling thread: waking workers costs more than it saves. */
#define ZS_ADAMW_MT_MIN ((size_t)65536)

typedef void (*zs_adamw_kernel)(const zs_adamw_coef *, float *, float *, float *, const void *,
                                zs_dtype, void *, zs_dtype, size_t);

const char *zs_adamw_isa_name(zs_adamw_isa isa) {
  switch (isa) {
  case ZS_ADAMW_ISA_AUTO:
    return "auto";
  case ZS_ADAMW_ISA_SCALAR:
    return "scalar";
  case ZS_ADAMW_ISA_AVX2:
    return "avx2";
  case ZS_ADAMW_ISA_AVX512:
    return "avx512";
  }
  return "unknown";
}

int zs_adamw_isa_supported(zs_adamw_isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (isa == ZS_ADAMW_ISA_AVX512) return __builtin_cpu_supports("avx512f") != 0;
  if (isa == ZS_ADAMW_ISA_AVX2)
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
#endif
  return isa == ZS_ADAMW_ISA_SCALAR;
}

/* The widest supported path not wider than `want`. */
static zs_adamw_isa zs_adamw_isa_clamp(zs_adamw_isa want) {
  for (int i = (int)want; i > ZS_ADAMW_ISA_SCALAR; i--)
    if (zs_adamw_isa_supported((zs_adamw_isa)i)) return (zs_adamw_isa)i;
  return ZS_ADAMW_ISA_SCALAR;
}

static zs_adamw_isa zs_active_isa = ZS_ADAMW_ISA_SCALAR;
static pthread_once_t zs_isa_once = PTHREAD_ONCE_INIT;

/* Reads ZS_ADAMW_ISA once; unknown values are ignored (the widest path is used). */
static void zs_isa_init(void) {
  zs_adamw_isa want = ZS_ADAMW_ISA_AVX512;
  const char *s = zs_env("ZS_ADAMW_ISA");
  if (s && strcmp(s, "scalar") == 0) want = ZS_ADAMW_ISA_SCALAR;
  if (s && strcmp(s, "avx2") == 0) want = ZS_ADAMW_ISA_AVX2;
  zs_active_isa = zs_adamw_isa_clamp(want);
}

zs_adamw_isa zs_adamw_isa_active(void) {
  pthread_once(&zs_isa_once, zs_isa_init);
  return zs_active_isa;
}

/* The kernel behind a (supported) path. */
static zs_adamw_kernel zs_adamw_kernel_for(zs_adamw_isa isa) {
  switch (isa) {
  case ZS_ADAMW_ISA_AVX512:
    return zs_cpu_adamw_avx512;
  case ZS_ADAMW_ISA_AVX2:
    return zs_cpu_adamw_avx2;
  default:
    return zs_cpu_adamw_scalar;
  }
}

/* One threaded call: arrays and the tile count. */
typedef struct {
  zs_adamw_kernel k;
  const zs_adamw_coef *c;
  float *master, *m, *v;
  const char *grad;
  char *out;
  zs_dtype grad_dt, param_dt;
  size_t gsz, osz, n;
} zs_adamw_tiles;

/* Pool work item: tile `item` of the arrays. */
static void zs_adamw_tile(void *ctx, size_t item, int worker) {
  const zs_adamw_tiles *t = ctx;
  size_t i = item * ZS_ADAMW_TILE;
  size_t len = t->n - i < ZS_ADAMW_TILE ? t->n - i : ZS_ADAMW_TILE;
  t->k(t->c, t->master + i, t->m + i, t->v + i, t->grad + i * t->gsz, t->grad_dt,
       t->out ? t->out + i * t->osz : NULL, t->param_dt, len);
}

void zs_cpu_adamw_ex(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, float *master,
                     float *m, float *v, const void *grad, zs_dtype grad_dt, void *param_out,
                     zs_dtype param_dt, size_t n) {
  isa = isa == ZS_ADAMW_ISA_AUTO ? zs_adamw_isa_active() : zs_adamw_isa_clamp(isa);
  zs_adamw_kernel k = zs_adamw_kernel_for(isa);
  if (!pool || zs_pool_size(pool) < 2 || n < ZS_ADAMW_MT_MIN) {
    k(c, master, m, v, grad, grad_dt, param_out, param_dt, n);
    return;
  }
  zs_adamw_tiles t = {k,
                      c,
                      master,
                      m,
                      v,
                      grad,
                      param_out,
                      grad_dt,
                      param_dt,
                      grad_dt == ZS_BF16 ? 2 : 4,
                      param_dt == ZS_BF16 ? 2 : 4,
                      n};
  if (zs_pool_run(pool, (n + ZS_ADAMW_TILE - 1) / ZS_ADAMW_TILE, zs_adamw_tile, &t) != ZS_OK)
    k(c, master, m, v, grad, grad_dt, param_out, param_dt, n); /* unreachable: pool is valid */
}

void zs_cpu_adamw_mt(zs_pool *pool, const zs_adamw_coef *c, float *master, float *m, float *v,
                     const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                     size_t n) {
  zs_cpu_adamw_ex(pool, ZS_ADAMW_ISA_AUTO, c, master, m, v, grad, grad_dt, param_out, param_dt, n);
}

static zs_pool *zs_default_pool = NULL;
static pthread_once_t zs_pool_once = PTHREAD_ONCE_INIT;

/* ZS_ADAMW_THREADS=N (N > 1): a process-wide unbound pool, started on first use and kept for the
   life of the process (it owns only idle threads). Any failure leaves it NULL: single-threaded. */
static void zs_default_pool_init(void) {
  const char *s = zs_env("ZS_ADAMW_THREADS");
  long n = s ? strtol(s, NULL, 10) : 1;
  if (n > 1 && n <= 4096 && zs_pool_create((int)n, ZS_POOL_UNBOUND, &zs_default_pool) != ZS_OK)
    zs_default_pool = NULL;
}

void zs_cpu_adamw(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                  zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n) {
  zs_pool *pool = NULL;
  if (n >= ZS_ADAMW_MT_MIN) {
    pthread_once(&zs_pool_once, zs_default_pool_init);
    pool = zs_default_pool;
  }
  zs_cpu_adamw_ex(pool, ZS_ADAMW_ISA_AUTO, c, master, m, v, grad, grad_dt, param_out, param_dt, n);
}
