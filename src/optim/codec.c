/* The master codec (codec.h): decode a tile, run the kernel, encode it. */
#include "optim/codec.h"

#include <string.h>

#include "base/bf16.h"
#include "base/bf16_rem.h"
#include "base/error.h"

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

/* Elements [lo, lo + len) of s in mode m, the kernel of coef's zs_codec_coef. */
static void host_update(zs_pool *pool, const zs_opt_mode *m, const void *coef,
                        const zs_opt_state *s, size_t lo, size_t len, const void *grad,
                        zs_dtype gdt, void *out, zs_dtype pdt) {
  const zs_codec_coef *head = coef;
  const job j = {head->kernel, m, coef, s, lo, len, grad, gdt, out, pdt};
  const size_t items = (len + TILE - 1) / TILE;
  if (pool && zs_pool_size(pool) >= 2 && items >= 4 &&
      zs_pool_run(pool, items, tile_item, (void *)&j) == ZS_OK)
    return;
  for (size_t i = 0; i < items; i++) /* elementwise: the same bits as the workers */
    tile_item((void *)&j, i, 0);
}

/* One zs_opt_host_fn per mode (the signature has no room for the mode). */
static const zs_opt_mode modes[] = {{ZS_MASTER_FP32, ZS_F32},      {ZS_MASTER_FP32, ZS_BF16},
                                    {ZS_MASTER_PARAMS, ZS_F32},    {ZS_MASTER_PARAMS, ZS_BF16},
                                    {ZS_MASTER_REMAINDER, ZS_F32}, {ZS_MASTER_REMAINDER, ZS_BF16},
                                    {ZS_MASTER_LEAN, ZS_F32},      {ZS_MASTER_LEAN, ZS_BF16}};
#define MODE_FN(i)                                                                                 \
  static void mode##i(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,  \
                      const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {                   \
    host_update(pool, &modes[i], c, s, lo, len, grad, gdt, out, pdt);                              \
  }
MODE_FN(0)
MODE_FN(1)
MODE_FN(2)
MODE_FN(3)
MODE_FN(4)
MODE_FN(5)
MODE_FN(6)
MODE_FN(7)

zs_status zs_codec_host_fn(const zs_opt_mode *m, zs_opt_host_fn *out) {
  static const zs_opt_host_fn fns[] = {mode0, mode1, mode2, mode3, mode4, mode5, mode6, mode7};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
    if (modes[i].master == m->master && modes[i].state_dt == m->state_dt) {
      *out = fns[i];
      return ZS_OK;
    }
  return zs_err(ZS_ERR_INVALID_ARG,
                "master mode %d with state dtype %d has no update: use ZS_MASTER_FP32, "
                "ZS_MASTER_PARAMS, ZS_MASTER_REMAINDER or ZS_MASTER_LEAN with ZS_F32 or ZS_BF16",
                m->master, (int)m->state_dt);
}

zs_codec_dev zs_codec_dev_of(const zs_opt_mode *m, const zs_opt_state *s, const void *grad,
                             zs_dtype gdt, void *param, zs_dtype pdt, size_t n, void *stream) {
  zs_codec_dev a;
  memset(&a, 0, sizeof a);
  a.master = m->master;
  a.state_bf16 = m->state_dt == ZS_BF16;
  a.fp32 = s->master;
  for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
    a.state[i] = s->state[i];
  a.rem = s->rem;
  a.key = s->key;
  a.grad = grad;
  a.gdt = gdt;
  a.out = param;
  a.pdt = pdt;
  a.n = n;
  a.stream = stream;
  return a;
}
