/* What checkpoint save and load share (see ckpt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "engine/ckpt.h"
#include "tier/master_io.h"

void zs_ckpt_writer_range(const zs_engine *e, const zs_unit *u, int r, uint64_t *a, uint64_t *b) {
  const int g = e->shard_size;
  uint64_t lo, n;
  int idx, cnt;
  if (!u->st.s[ZS_ST_MASTER].sharded) { /* the writers split the whole unit */
    lo = 0;
    n = u->lay.padded;
    idx = r;
    cnt = e->world_size;
  } else {
    lo = (uint64_t)(r % g) * u->lay.shard;
    n = u->lay.shard;
    idx = r / g;
    cnt = e->world_size / g;
  }
  uint64_t hi = lo + n;
  if (hi > u->lay.numel_total) hi = u->lay.numel_total;
  if (lo >= hi) {
    *a = *b = 0;
    return;
  }
  const uint64_t len = hi - lo;
  *a = lo + len * (uint64_t)idx / (uint64_t)cnt;
  *b = lo + len * (uint64_t)(idx + 1) / (uint64_t)cnt;
}

int zs_ckpt_unit_arrays(const zs_unit *u) {
  return 1 + (u->frozen ? 0 : u->nstate);
}

/* Whether some tensor of u is split over the tp group. */
static int has_split(const zs_unit *u) {
  for (int k = 0; k < u->ntensors; k++)
    if (zs_engine_tp_split(u, k)) return 1;
  return 0;
}

uint64_t zs_ckpt_rank_segments(const zs_engine *e, int r, zs_ckpt_seg *segs, int *nsegs) {
  uint64_t off = 0;
  int n = 0;
  /* Every tp rank's units have the same slice shapes (agreed at commit), so the same ranges. */
  const int dp = r / e->tp_size, tp = r % e->tp_size;
  for (int i = 0; i < e->nunits; i++) {
    /* A unit with no split tensor is the same on every tp rank and a load reads tp rank 0's copy
       (zs_ckpt_runs): the others do not write it. */
    if (tp > 0 && !has_split(e->units[i])) continue;
    uint64_t a, b;
    zs_ckpt_writer_range(e, e->units[i], dp, &a, &b);
    if (a == b) continue;
    const int na = zs_ckpt_unit_arrays(e->units[i]);
    if (segs) segs[n] = (zs_ckpt_seg){i, a, b, off, tp, na};
    n++;
    off += 4 * (uint64_t)na * (b - a);
  }
  *nsegs = n;
  return off;
}

zs_status zs_ckpt_check_state(const zs_engine *e, const char *fn) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "%s: engine is NULL", fn);
  if (e->state == ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "%s before zs_engine_commit: commit first", fn);
  if (e->state == ZS_ENGINE_IN_STEP)
    return zs_err(ZS_ERR_STATE,
                  "%s inside a step: call it before zs_engine_begin_step or after "
                  "zs_engine_step",
                  fn);
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "%s: the engine failed earlier; destroy it", fn);
  return ZS_OK;
}

zs_status zs_ckpt_agree_words(zs_engine *e, zs_status mine, const uint64_t *words, int n,
                              uint64_t *all, const char *what) {
  /* One status everywhere (the first failing rank's); each rank keeps its own message. */
  const zs_agree_text say = {.what = what, .one_status = 1, .fail_on_exchange = 1};
  return zs_engine_agree_words(e, mine, NULL, &say, words, n, all);
}

zs_status zs_ckpt_agree(zs_engine *e, zs_status mine, const char *what) {
  return zs_ckpt_agree_words(e, mine, NULL, 0, NULL, what);
}

zs_status zs_engine_set_user_meta(zs_engine *e, const void *data, size_t bytes) {
  if (!e || (!data && bytes))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_set_user_meta: NULL engine, or NULL data of %zu "
                  "bytes",
                  bytes);
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "zs_engine_set_user_meta: the engine failed earlier; destroy it");
  if (bytes > ZS_USER_META_MAX)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_set_user_meta: %zu bytes, at most %d (ZS_USER_META_MAX): keep large "
                  "state in a file of your own and its name here",
                  bytes, ZS_USER_META_MAX);
  unsigned char *copy = NULL;
  if (bytes && !(copy = malloc(bytes)))
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_set_user_meta: out of host memory");
  if (bytes) memcpy(copy, data, bytes);
  free(e->user_meta);
  e->user_meta = copy;
  e->user_meta_bytes = bytes;
  return ZS_OK;
}

zs_status zs_engine_user_meta(const zs_engine *e, const void **data, size_t *bytes) {
  if (!e || !data || !bytes)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_user_meta: NULL engine, data or bytes");
  *data = e->user_meta;
  *bytes = e->user_meta_bytes;
  return ZS_OK;
}
