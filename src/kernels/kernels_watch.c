/* zs_k_watch (include/zshard_kernels.h): the user's host waits on the engine's stream
 * bounded by the engine's comm_timeout_s, through zshard's public API only. */
#include "kernels/kerr.h"
#include "kernels/kernels_watch.h"
#include "zshard_kernels.h"

static void on_timeout(void *ctx) {
  (void)zs_engine_abort(ctx); /* the collectives' kernels stop waiting for the silent peer */
}

zs_status zs_k_watch(zs_kernels *k, zs_engine *e) {
  if (!k) return zs_kerr(ZS_ERR_INVALID_ARG, "zs_k_watch: the kernels context is NULL");
  if (!e) {
    zs_k_set_watch(k, 0, NULL, NULL);
    return ZS_OK;
  }
  const zs_config *c = zs_engine_config(e);
  zs_k_set_watch(k, c ? c->comm_timeout_s : 0, on_timeout, e);
  return ZS_OK;
}
