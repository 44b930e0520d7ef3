/* The master codec (codec.h): decode a tile, run the kernel, encode it. */
#include "optim/codec.h"

#include <string.h>

#include "base/bf16.h"
#include "base/bf16_rem.h"

/* Elements per tile: the decoded master and gradient (2 x 16 KiB) stay in L1/L2. */
#define TILE ((size_t)4096)

typedef struct {
  zs_codec_kernel k;
  const zs_opt_mode *m;
  const void *coef;
  const zs_opt_state *s;
  size_t lo, len;
  const void *grad;
  zs_dtype gdt;
  void *out;
  zs_dtype pdt;
} job;

static float grad_at(const void *g, zs_dtype dt, size_t i) {
  return dt == ZS_BF16 ? zs_bf16_to_f32(((const uint16_t *)g)[i]) : ((const float *)g)[i];
}

/* Elements [a, a + n) of the call (relative to lo), n <= TILE. */
static void run_tile(const job *j, size_t a, size_t n) {
  float g[TILE], buf[TILE];
  const zs_opt_state *s = j->s;
  const size_t at = j->lo + a; /* the state's element */
  for (size_t i = 0; i < n; i++)
    g[i] = grad_at(j->grad, j->gdt, a + i);
  const int master = j->m->master;
  const int packed = master == ZS_MASTER_REMAINDER || master == ZS_MASTER_LEAN;
  uint16_t *pb = packed ? (uint16_t *)j->out + a : NULL; /* the bf16 params, in place */
  float *p = packed ? buf : s->master + at;
  if (master == ZS_MASTER_REMAINDER)
    for (size_t i = 0; i < n; i++)
      p[i] = zs_rem_join(pb[i], s->rem[at + i]);
  else if (master == ZS_MASTER_LEAN)
    for (size_t i = 0; i < n; i++)
      p[i] = zs_bf16_to_f32(pb[i]);
  const size_t ssz = zs_dtype_size(j->m->state_dt);
  void *st[ZS_OPT_MAX_STATE];
  for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
    st[i] = s->state[i] ? (char *)s->state[i] + at * ssz : NULL;
  j->k(j->coef, p, st, j->m->state_dt, g, n);
  if (master == ZS_MASTER_REMAINDER) {
    for (size_t i = 0; i < n; i++)
      zs_rem_split(p[i], &pb[i], &s->rem[at + i]);
  } else if (master == ZS_MASTER_LEAN) {
    for (size_t i = 0; i < n; i++) {
      uint32_t u;
      memcpy(&u, &p[i], 4);
      pb[i] = zs_lean_round(u, zs_lean_bits(s->key.k0, s->key.k1, s->key.elem0 + at + i));
    }
  } else if (j->out) { /* the compute copy of the new master */
    if (j->pdt == ZS_BF16)
      for (size_t i = 0; i < n; i++)
        ((uint16_t *)j->out)[a + i] = zs_f32_to_bf16(p[i]);
    else
      memcpy((float *)j->out + a, p, n * 4);
  }
}

static void tile_item(void *ctx, size_t item, int worker) {
  const job *j = ctx;
  const size_t a = item * TILE;
  run_tile(j, a, j->len - a < TILE ? j->len - a : TILE);
  (void)worker;
}

void zs_codec_host_update(zs_pool *pool, zs_codec_kernel k, const zs_opt_mode *m, const void *coef,
                          const zs_opt_state *s, size_t lo, size_t len, const void *grad,
                          zs_dtype gdt, void *out, zs_dtype pdt) {
  const job j = {k, m, coef, s, lo, len, grad, gdt, out, pdt};
  const size_t items = (len + TILE - 1) / TILE;
  if (pool && zs_pool_size(pool) >= 2 && items >= 4 &&
      zs_pool_run(pool, items, tile_item, (void *)&j) == ZS_OK)
    return;
  for (size_t i = 0; i < items; i++) /* elementwise: the same bits as the workers */
    tile_item((void *)&j, i, 0);
}
