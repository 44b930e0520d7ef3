/* A unit's optimizer arrays in canonical form (state_io.h): the precision mode and the tier are
 * decided here, once per call, from the unit's state table. */
#include "engine/state_io.h"

#include <stdlib.h>
#include <string.h>

#include "base/bf16.h"
#include "base/error.h"
#include "engine/ckpt.h"
#include "engine/nvme_tier.h"
#include "shard/master_rem.h"

const char *zs_arr_name(const zs_engine *e, zs_arr a) {
  if (a == ZS_ARR_MASTER) return "master";
  const zs_opt_shape *sh = zs_opt_shape_of(&e->cfg);
  const int i = (int)a - ZS_ARR_OPT0;
  return i < sh->nstate ? sh->state_short[i] : "state";
}

int zs_state_narrays(const zs_engine *e) {
  return 1 + zs_opt_shape_of(&e->cfg)->nstate;
}

const char *zs_arr_ckpt_name(const zs_engine *e, zs_arr a) {
  return a == ZS_ARR_MASTER ? "master" : zs_opt_shape_of(&e->cfg)->state_name[a - ZS_ARR_OPT0];
}

/* Whether u keeps state array a (a >= ZS_ARR_OPT0): trained, and a within the optimizer's count
   (its slot persistent, in memory or on the tier). */
static int has_state(const zs_unit *u, zs_arr a) {
  return !u->frozen && zs_state_is(&u->st, ZS_ST_OPT((int)a - ZS_ARR_OPT0), ZS_LIFE_PERSISTENT);
}

/* How u keeps its master. */
typedef enum {
  MASTER_PARAMS, /* its params are the master (lean mode, a frozen unit): no array of its own */
  MASTER_REM,    /* the bf16 params joined with ZS_ST_MASTER_REM (memory or the tier's file) */
  MASTER_TIER,   /* an fp32 array in the NVMe tier's file */
  MASTER_MEMORY, /* an fp32 array in memory (device or host arena; ZS_MASTER_PARAMS's alias) */
} master_kind;

static master_kind master_of(const zs_unit *u) {
  if (zs_unit_master_in_params(u)) return MASTER_PARAMS;
  if (zs_unit_has_rem(u)) return MASTER_REM;
  if (u->nv[ZS_NVME_MASTER]) return MASTER_TIER;
  return MASTER_MEMORY;
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

const float *zs_state_master_in_host(const zs_engine *e, const zs_unit *u) {
  const int whole = master_of(u) == MASTER_MEMORY && u->master && !u->st.s[ZS_ST_MASTER].sharded;
  return whole && e->dev.kind == ZS_DEVICE_CPU ? u->master : NULL;
}

int zs_state_master_on_tier(const zs_unit *u) {
  return u->nv[ZS_NVME_MASTER] != NULL;
}

/* Whether state s of u may be copied to and from host memory directly (memcpy). */
static int state_direct(const zs_engine *e, const zs_unit *u, zs_state s) {
  return zs_unit_on_host(u, s) || e->dev.kind == ZS_DEVICE_CPU;
}

static zs_status read_master(zs_engine *e, zs_unit *u, uint64_t x, size_t n, float *dst,
                             int *tier_failed) {
  const size_t lo = (size_t)(x - u->opt_off);
  zs_status rc;
  switch (master_of(u)) {
  case MASTER_PARAMS:
    return zs_ckpt_params_to_host(e, u, dst, x, n);
  case MASTER_REM:
    rc = zs_rem_master_get(u, dst, (size_t)x, n);
    if (rc == ZS_ERR_IO && u->nv[ZS_NVME_MASTER] && tier_failed) *tier_failed = 1;
    return rc;
  case MASTER_TIER:
    rc = zs_engine_nvme_read(e, u, ZS_NVME_MASTER, lo, n, dst);
    if (rc != ZS_OK && tier_failed) *tier_failed = 1;
    return rc;
  case MASTER_MEMORY:
  default:
    return zs_ckpt_state_to_host(e, u, dst, u->master + lo, n);
  }
}

/* bf16 values raw[0, n) widened into dst[0, n); raw may be dst's upper half (value i is read at
   byte 2n + 2i before value i is written at byte 4i, which only ever lies at or below it). */
static void widen(float *dst, const uint16_t *raw, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = zs_bf16_to_f32(raw[i]);
}

static zs_status read_state(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                            int *tier_failed) {
  if (!has_state(u, a)) { /* a unit that never trained, or an array its optimizer lacks */
    memset(dst, 0, n * 4);
    return ZS_OK;
  }
  const zs_state s = ZS_ST_OPT((int)a - ZS_ARR_OPT0);
  const zs_dtype md = u->st.s[s].dtype;
  const size_t lo = (size_t)(x - u->opt_off);
  uint16_t *raw = (uint16_t *)dst + n; /* bf16: read into the upper half, widened from the front */
  void *to = md == ZS_F32 ? (void *)dst : (void *)raw;
  if (zs_unit_on_nvme(u)) {
    const zs_status rc =
        zs_engine_nvme_read(e, u, ZS_NVME_OPT0 + ((int)a - ZS_ARR_OPT0), lo, n, to);
    if (rc != ZS_OK) {
      if (tier_failed) *tier_failed = 1;
      return rc;
    }
  } else {
    const void *src = zs_ptr_add(*zs_unit_slot(u, s), lo, md);
    const size_t bytes = n * zs_dtype_size(md);
    if (state_direct(e, u, s))
      memcpy(to, src, bytes);
    else
      ZS_CHECK(zs_dev_to_host(&e->dev, to, src, bytes));
  }
  if (md != ZS_F32) widen(dst, raw, n);
  return ZS_OK;
}

zs_status zs_state_read(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                        int *tier_failed) {
  return a == ZS_ARR_MASTER ? read_master(e, u, x, n, dst, tier_failed)
                            : read_state(e, u, a, x, n, dst, tier_failed);
}

static zs_status write_master(zs_engine *e, zs_unit *u, uint64_t x, size_t n, const float *src,
                              const char *fn) {
  const size_t lo = (size_t)(x - u->opt_off);
  switch (master_of(u)) {
  case MASTER_PARAMS: /* the caller's params are it */
    return ZS_OK;
  case MASTER_REM:
    return zs_rem_master_put_rem(u, src, (size_t)x, n);
  case MASTER_TIER:
    return zs_ckpt_nvme_put(e, u, ZS_NVME_MASTER, lo, n, src, fn);
  case MASTER_MEMORY:
  default:
    return zs_ckpt_state_from_host(e, u, u->master + lo, src, n);
  }
}

static zs_status write_state(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n,
                             const float *src, uint16_t *scratch, const char *fn) {
  if (!has_state(u, a)) return ZS_OK;
  const zs_state s = ZS_ST_OPT((int)a - ZS_ARR_OPT0);
  const zs_dtype md = u->st.s[s].dtype;
  const size_t lo = (size_t)(x - u->opt_off);
  uint16_t *own = NULL, *conv = scratch;
  const void *from = src;
  if (md == ZS_BF16) { /* rounded to nearest even: exact for values saved from bf16 moments */
    if (!conv && !(conv = own = malloc(n * 2 + 2)))
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; i < n; i++)
      conv[i] = zs_f32_to_bf16(src[i]);
    from = conv;
  }
  zs_status rc;
  if (zs_unit_on_nvme(u)) {
    rc = zs_ckpt_nvme_put(e, u, ZS_NVME_OPT0 + ((int)a - ZS_ARR_OPT0), lo, n, from, fn);
  } else {
    void *dst = zs_ptr_add(*zs_unit_slot(u, s), lo, md);
    const size_t bytes = n * zs_dtype_size(md);
    rc = ZS_OK;
    if (state_direct(e, u, s))
      memcpy(dst, from, bytes);
    else
      rc = zs_dev_from_host(&e->dev, dst, from, bytes);
  }
  free(own);
  return rc;
}

zs_status zs_state_write(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n, const float *src,
                         uint16_t *scratch, const char *fn) {
  return a == ZS_ARR_MASTER ? write_master(e, u, x, n, src, fn)
                            : write_state(e, u, a, x, n, src, scratch, fn);
}
