/* The master codec over ranges (master_io.h): the precision mode is decided here, once per call,
 * and the tier's operations move the bytes. */
#include "tier/master_io.h"

#include <stdlib.h>
#include <string.h>

#include "base/bf16.h"
#include "base/error.h"
#include "base/round_hook.h"
#include "tier/master_rem.h"

const char *zs_arr_name(const zs_config *c, zs_arr a) {
  if (a == ZS_ARR_MASTER) return "master";
  const zs_opt_shape *sh = zs_opt_shape_of(c);
  const int i = (int)a - ZS_ARR_OPT0;
  return i < sh->nstate ? sh->state_short[i] : "state";
}

int zs_state_narrays(const zs_config *c) {
  return 1 + zs_opt_shape_of(c)->nstate;
}

const char *zs_arr_ckpt_name(const zs_config *c, zs_arr a) {
  return a == ZS_ARR_MASTER ? "master" : zs_opt_shape_of(c)->state_name[a - ZS_ARR_OPT0];
}

int zs_unit_master_in_params(const zs_unit *u) {
  return u->frozen || u->ctx->cfg->master == ZS_MASTER_LEAN;
}

int zs_unit_ties_away(const zs_unit *u) {
  return !zs_unit_master_in_params(u) && (zs_unit_has_rem(u) || zs_hook_fp32_ties_away());
}

void zs_unit_alias_master(zs_unit *u) {
  if (!zs_unit_master_in_params(u) && zs_state_is(&u->st, ZS_ST_MASTER, ZS_LIFE_NONE) &&
      !zs_state_is(&u->st, ZS_ST_MASTER_REM, ZS_LIFE_PERSISTENT)) /* remainder: no fp32 alias */
    u->master = (float *)zs_unit_home_at(u, ZS_ST_PARAM_FULL, u->opt_off);
}

/* How u keeps its master. */
typedef enum {
  MASTER_PARAMS, /* its params are the master (lean mode, a frozen unit): no array of its own */
  MASTER_REM,    /* the bf16 params joined with ZS_ST_MASTER_REM (on its tier) */
  MASTER_ARRAY,  /* an fp32 array on its tier (ZS_MASTER_PARAMS: the params' home it aliases) */
} master_kind;

static master_kind master_of(const zs_unit *u) {
  if (zs_unit_master_in_params(u)) return MASTER_PARAMS;
  if (zs_unit_has_rem(u)) return MASTER_REM;
  return MASTER_ARRAY;
}

int zs_state_master_whole(const zs_unit *u) {
  switch (master_of(u)) {
  case MASTER_PARAMS:
    return 0;
  case MASTER_REM:
    return !u->st.s[ZS_ST_MASTER_REM].sharded;
  default:
    return !u->st.s[ZS_ST_MASTER].sharded;
  }
}

const float *zs_state_master_in_host(const zs_unit *u) {
  const int whole = master_of(u) == MASTER_ARRAY && u->master && !u->st.s[ZS_ST_MASTER].sharded;
  return whole && u->ctx->dev->kind == ZS_DEVICE_CPU ? u->master : NULL;
}

int zs_state_master_on_tier(const zs_unit *u) {
  return u->nv[ZS_ARR_MASTER] != NULL;
}

/* The params at flat elements [a, a + n) (in their home) widened to fp32 into host dst. */
static zs_status params_to_host(const zs_unit *u, float *dst, uint64_t a, size_t n) {
  zs_dev *d = u->ctx->dev;
  const zs_dtype pd = u->ctx->cfg->param_dtype;
  const zs_state home = zs_state_home(&u->st, ZS_ST_PARAM_FULL);
  const void *src = zs_unit_home_at((zs_unit *)u, ZS_ST_PARAM_FULL, (size_t)a);
  const int direct = zs_unit_on_host(u, home) || d->kind == ZS_DEVICE_CPU;
  /* bf16: the raw values in the upper half of dst's bytes, widened from the front (value i is
     read at byte 2n + 2i before value i is written at byte 4i, which only ever lies at or below
     it). */
  void *raw = pd == ZS_F32 ? (void *)dst : (void *)((uint16_t *)dst + n);
  const size_t bytes = n * zs_dtype_size(pd);
  if (direct)
    memcpy(raw, src, bytes);
  else
    ZS_CHECK(zs_dev_to_host(d, raw, src, bytes));
  if (pd != ZS_F32)
    for (size_t i = 0; i < n; i++)
      dst[i] = zs_bf16_to_f32(((const uint16_t *)raw)[i]);
  return ZS_OK;
}

static zs_status read_master(zs_tiers *t, zs_unit *u, uint64_t x, size_t n, float *dst,
                             int *tier_failed) {
  zs_status rc;
  switch (master_of(u)) {
  case MASTER_PARAMS:
    return params_to_host(u, dst, x, n);
  case MASTER_REM:
    rc = zs_rem_master_get(t, u, dst, (size_t)x, n);
    if (rc == ZS_ERR_IO && u->nv[ZS_ARR_MASTER] && tier_failed) *tier_failed = 1;
    return rc;
  case MASTER_ARRAY:
  default:
    rc = zs_tier_of(u, ZS_ARR_MASTER)->read(t, u, ZS_ARR_MASTER, (size_t)(x - u->opt_off), n, dst);
    if (rc != ZS_OK && u->nv[ZS_ARR_MASTER] && tier_failed) *tier_failed = 1;
    return rc;
  }
}

/* Whether u keeps state array a (a >= ZS_ARR_OPT0): trained, and a within the optimizer's count
   (its slot persistent, in memory or on the tier). */
static int has_state(const zs_unit *u, zs_arr a) {
  return !u->frozen && zs_state_is(&u->st, zs_arr_state(u, a), ZS_LIFE_PERSISTENT);
}

static zs_status read_state(zs_tiers *t, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                            int *tier_failed) {
  if (!has_state(u, a)) { /* a unit that never trained, or an array its optimizer lacks */
    memset(dst, 0, n * 4);
    return ZS_OK;
  }
  const zs_dtype md = u->st.s[zs_arr_state(u, a)].dtype;
  uint16_t *raw = (uint16_t *)dst + n; /* bf16: read into the upper half, widened from the front */
  const zs_status rc = zs_tier_of(u, a)->read(t, u, a, (size_t)(x - u->opt_off), n,
                                              md == ZS_F32 ? (void *)dst : (void *)raw);
  if (rc != ZS_OK) {
    if (u->nv[a] && tier_failed) *tier_failed = 1;
    return rc;
  }
  if (md != ZS_F32) /* value i is read at byte 2n + 2i before byte 4i, at or below it, is written */
    for (size_t i = 0; i < n; i++)
      dst[i] = zs_bf16_to_f32(raw[i]);
  return ZS_OK;
}

zs_status zs_state_read(zs_tiers *t, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                        int *tier_failed) {
  return a == ZS_ARR_MASTER ? read_master(t, u, x, n, dst, tier_failed)
                            : read_state(t, u, a, x, n, dst, tier_failed);
}

/* Writes raw values of array a through its tier; a failure of the NVMe tier's file names the unit
   and the array after `fn`. */
static zs_status put(zs_tiers *t, zs_unit *u, zs_arr a, uint64_t x, size_t n, const void *src,
                     const char *fn) {
  const zs_status rc = zs_tier_of(u, a)->write(t, u, a, (size_t)(x - u->opt_off), n, src);
  if (rc != ZS_OK && u->nv[a])
    return zs_err_wrap(rc, "%s: writing unit '%s' %s into the NVMe tier", fn, u->name,
                       zs_arr_name(u->ctx->cfg, a));
  return rc;
}

static zs_status write_master(zs_tiers *t, zs_unit *u, uint64_t x, size_t n, const float *src,
                              const char *fn) {
  switch (master_of(u)) {
  case MASTER_PARAMS: /* the caller's params are it */
    return ZS_OK;
  case MASTER_REM:
    return zs_rem_master_put_rem(t, u, src, (size_t)x, n);
  case MASTER_ARRAY:
  default:
    return put(t, u, ZS_ARR_MASTER, x, n, src, fn);
  }
}

static zs_status write_state(zs_tiers *t, zs_unit *u, zs_arr a, uint64_t x, size_t n,
                             const float *src, uint16_t *scratch, const char *fn) {
  if (!has_state(u, a)) return ZS_OK;
  uint16_t *own = NULL, *conv = scratch;
  const void *from = src;
  if (u->st.s[zs_arr_state(u, a)].dtype == ZS_BF16) { /* nearest even: exact for bf16 moments */
    if (!conv && !(conv = own = malloc(n * 2 + 2)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; i < n; i++)
      conv[i] = zs_f32_to_bf16(src[i]);
    from = conv;
  }
  const zs_status rc = put(t, u, a, x, n, from, fn);
  free(own);
  return rc;
}

zs_status zs_state_write(zs_tiers *t, zs_unit *u, zs_arr a, uint64_t x, size_t n, const float *src,
                         uint16_t *scratch, const char *fn) {
  return a == ZS_ARR_MASTER ? write_master(t, u, x, n, src, fn)
                            : write_state(t, u, a, x, n, src, scratch, fn);
}
