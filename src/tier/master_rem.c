/* The remainder master's joins and splits outside the update (master_rem.h). */
#include "tier/master_rem.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"

/* Elements joined or split per piece: the host staging stays bounded whatever n is. */
#define ZS_REM_PIECE ((size_t)1 << 20)

zs_status zs_rem_master_get(zs_tiers *t, zs_unit *u, float *dst, size_t a, size_t n) {
  if (!n) return ZS_OK;
  zs_dev *d = u->ctx->dev;
  const size_t cap = n < ZS_REM_PIECE ? n : ZS_REM_PIECE;
  uint16_t *h = malloc(cap * 4);
  if (!h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "unit '%s': out of host memory joining the master",
                  u->name);
  zs_status rc = ZS_OK;
  for (size_t i = 0; i < n && rc == ZS_OK; i += cap) {
    const size_t k = n - i < cap ? n - i : cap, at = a + i;
    rc = zs_dev_to_host(d, h, zs_unit_home_at(u, ZS_ST_PARAM_FULL, at), k * 2);
    if (rc == ZS_OK)
      rc = zs_tier_of(u, ZS_ARR_MASTER)->read(t, u, ZS_ARR_MASTER, at - u->opt_off, k, h + cap);
    for (size_t j = 0; j < k && rc == ZS_OK; j++)
      dst[i + j] = zs_rem_join(h[j], h[cap + j]);
  }
  free(h);
  return rc;
}

zs_status zs_rem_master_put_rem(zs_tiers *t, zs_unit *u, const float *src, size_t a, size_t n) {
  if (!n) return ZS_OK;
  const size_t cap = n < ZS_REM_PIECE ? n : ZS_REM_PIECE;
  uint16_t *h = malloc(cap * 2);
  if (!h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "unit '%s': out of host memory splitting the master",
                  u->name);
  zs_status rc = ZS_OK;
  for (size_t i = 0; i < n && rc == ZS_OK; i += cap) {
    const size_t k = n - i < cap ? n - i : cap, at = a + i;
    for (size_t j = 0; j < k; j++) {
      uint16_t p;
      zs_rem_split(src[i + j], &p, &h[j]);
    }
    rc = zs_tier_of(u, ZS_ARR_MASTER)->write(t, u, ZS_ARR_MASTER, at - u->opt_off, k, h);
  }
  free(h);
  return rc;
}
