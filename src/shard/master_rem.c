/* The remainder master's joins and splits outside the update (master_rem.h). */
#include "shard/master_rem.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"

/* Elements joined or split per piece: the host staging stays bounded whatever n is. */
#define ZS_REM_PIECE ((size_t)1 << 20)

zs_status zs_rem_master_get(zs_unit *u, float *dst, size_t a, size_t n) {
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
      rc = u->nv[0] ? u->ctx->nvme_read(u->ctx->owner, u, 0, at - u->opt_off, k, h + cap)
                    : zs_dev_to_host(d, h + cap, u->rem + (at - u->opt_off), k * 2);
    for (size_t j = 0; j < k && rc == ZS_OK; j++)
      dst[i + j] = zs_rem_join(h[j], h[cap + j]);
  }
  free(h);
  return rc;
}

zs_status zs_rem_master_put_rem(zs_unit *u, const float *src, size_t a, size_t n) {
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
    rc = u->nv[0] ? u->ctx->nvme_write(u->ctx->owner, u, 0, at - u->opt_off, k, h)
                  : zs_dev_from_host(u->ctx->dev, u->rem + (at - u->opt_off), h, k * 2);
  }
  free(h);
  return rc;
}
