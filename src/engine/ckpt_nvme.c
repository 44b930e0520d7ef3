/* Checkpoints and loads of units on the NVMe tier (see ckpt.h): their state moves
 * between the tier's files and host memory through the range calls (nvme_tier.h), in bounded
 * pieces. */
#include "base/error.h"
#include "engine/ckpt.h"
#include "engine/nvme_tier.h"
#include "engine/state_io.h" /* zs_arr_name: a tier file's index is its array's */

zs_status zs_ckpt_nvme_put(zs_engine *e, const zs_unit *u, int which, size_t first, size_t n,
                           const void *src, const char *fn) {
  const zs_status rc = zs_engine_nvme_write(e, u, which, first, n, src);
  if (rc != ZS_OK)
    return zs_err_wrap(rc, "%s: writing unit '%s' %s into the NVMe tier", fn, u->name,
                       zs_arr_name(e, (zs_arr)which));
  return ZS_OK;
}
