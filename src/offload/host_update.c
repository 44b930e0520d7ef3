/* The host tier's AdamW per precision mode (host_update.h): each mode's function, and the one
 * place that picks it. */
#include "offload/host_update.h"

#include <stdint.h>

#include "base/error.h"
#include "offload/cpu_adamw.h"

/* An fp32 master (its own array or the fp32 params) with fp32 moments. */
static void master32_m32(zs_pool *pool, const zs_adamw_coef *c, const zs_host_state *s, size_t lo,
                         size_t len, const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  zs_cpu_adamw_ex(pool, ZS_ADAMW_ISA_AUTO, c, s->master + lo, (float *)s->m + lo,
                  (float *)s->v + lo, grad, gdt, out, pdt, len);
}

/* An fp32 master with bf16 moments (zs_cpu_adamw_m16's kernels). */
static void master32_m16(zs_pool *pool, const zs_adamw_coef *c, const zs_host_state *s, size_t lo,
                         size_t len, const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  zs_cpu_adamw_m16_ex(pool, ZS_ADAMW_ISA_AUTO, c, s->master + lo, (uint16_t *)s->m + lo,
                      (uint16_t *)s->v + lo, grad, gdt, out, pdt, len);
}

zs_status zs_host_update_for(int master, zs_dtype moment_dt, zs_host_update_fn *out) {
  if (moment_dt != ZS_F32 && moment_dt != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "moment_dtype %d has no host-tier AdamW: use ZS_F32 or ZS_BF16", (int)moment_dt);
  switch (master) {
  case ZS_MASTER_FP32:
  case ZS_MASTER_PARAMS: /* an fp32 array either way: a master of its own or the fp32 params */
    *out = moment_dt == ZS_BF16 ? master32_m16 : master32_m32;
    return ZS_OK;
  default:
    return zs_err(ZS_ERR_INVALID_ARG,
                  "master mode %d has no host-tier AdamW: use ZS_MASTER_FP32 or ZS_MASTER_PARAMS",
                  master);
  }
}
