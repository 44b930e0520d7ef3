/* The remainder master's joins and splits outside the update (master_rem.h). */
#include "shard/master_rem.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"

zs_status zs_rem_master_get(zs_unit *u, float *dst, size_t a, size_t n) {
  if (!n) return ZS_OK;
  zs_dev *d = u->ctx->dev;
  uint16_t *h = malloc(n * 4);
  if (!h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "unit '%s': out of host memory joining the master",
                  u->name);
  zs_status rc = zs_dev_to_host(d, h, zs_unit_home_at(u, ZS_ST_PARAM_FULL, a), n * 2);
  if (rc == ZS_OK)
    rc = u->nv[0] ? u->ctx->nvme_read(u->ctx->owner, u, 0, a - u->opt_off, n, h + n)
                  : zs_dev_to_host(d, h + n, u->rem + (a - u->opt_off), n * 2);
  for (size_t i = 0; i < n && rc == ZS_OK; i++)
    dst[i] = zs_rem_join(h[i], h[n + i]);
  free(h);
  return rc;
}

zs_status zs_rem_master_put_rem(zs_unit *u, const float *src, size_t a, size_t n) {
  if (!n) return ZS_OK;
  uint16_t *h = malloc(n * 2);
  if (!h)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "unit '%s': out of host memory splitting the master",
                  u->name);
  for (size_t i = 0; i < n; i++) {
    uint16_t p;
    zs_rem_split(src[i], &p, &h[i]);
  }
  const zs_status rc = u->nv[0]
                           ? u->ctx->nvme_write(u->ctx->owner, u, 0, a - u->opt_off, n, h)
                           : zs_dev_from_host(u->ctx->dev, u->rem + (a - u->opt_off), h, n * 2);
  free(h);
  return rc;
}
