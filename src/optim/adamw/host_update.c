/* The host tier's AdamW per precision mode (host_update.h): each mode's function, and the one
 * place that picks it. Each calls the mode's threaded CPU AdamW on elements [lo, lo + len), so the
 * bits are those of the device-resident update whatever the chunking or the pool. */
#include "optim/adamw/host_update.h"

#include <stdint.h>

#include "base/error.h"
#include "optim/adamw/adamw_mt.h"
#include "optim/adamw/adamw_lean_mt.h"
#include "optim/adamw/adamw_rem_mt.h"

/* An fp32 master (its own array or the fp32 params) with fp32 moments. */
static void master32_m32(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                         const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  zs_cpu_adamw_ex(pool, ZS_ADAMW_ISA_AUTO, c, s->master + lo, (float *)s->state[0] + lo,
                  (float *)s->state[1] + lo, grad, gdt, out, pdt, len);
}

/* An fp32 master with bf16 moments (zs_cpu_adamw_m16's kernels). */
static void master32_m16(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                         const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  zs_cpu_adamw_m16_ex(pool, ZS_ADAMW_ISA_AUTO, c, s->master + lo, (uint16_t *)s->state[0] + lo,
                      (uint16_t *)s->state[1] + lo, grad, gdt, out, pdt, len);
}

/* The remainder master: bf16 params (out) and remainders, updated in place; gdt is bf16. */
static void rem_update(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                       const void *grad, zs_dtype gdt, void *out, zs_dtype pdt,
                       zs_dtype moment_dt) {
  const size_t msz = zs_dtype_size(moment_dt);
  zs_cpu_adamw_rem_ex(pool, ZS_ADAMW_ISA_AUTO, c, out, s->rem + lo, (char *)s->state[0] + lo * msz,
                      (char *)s->state[1] + lo * msz, moment_dt, grad, len);
  (void)gdt;
  (void)pdt;
}
static void rem_m32(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                    const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  rem_update(pool, c, s, lo, len, grad, gdt, out, pdt, ZS_F32);
}
static void rem_m16(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                    const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  rem_update(pool, c, s, lo, len, grad, gdt, out, pdt, ZS_BF16);
}

/* Lean mode: the bf16 params (out) are the master, rounded stochastically with the bits of unit
   element key.elem0 + lo + i, whatever the chunking (optim/lean.h). */
static void lean_update(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                        const void *grad, void *out, int mbf16) {
  const size_t msz = mbf16 ? 2 : 4;
  zs_lean_key k = s->key;
  k.elem0 += lo;
  zs_cpu_adamw_lean_ex(pool, ZS_ADAMW_ISA_AUTO, c, &k, out, (char *)s->state[0] + lo * msz,
                       (char *)s->state[1] + lo * msz, mbf16, grad, len);
}
static void lean_m32(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                     const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  lean_update(pool, c, s, lo, len, grad, out, 0);
  (void)gdt;
  (void)pdt;
}
static void lean_m16(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                     const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  lean_update(pool, c, s, lo, len, grad, out, 1);
  (void)gdt;
  (void)pdt;
}

zs_status zs_host_update_for(int master, zs_dtype moment_dt, zs_opt_host_fn *out) {
  if (moment_dt != ZS_F32 && moment_dt != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "moment_dtype %d has no host-tier AdamW: use ZS_F32 or ZS_BF16", (int)moment_dt);
  switch (master) {
  case ZS_MASTER_FP32:
  case ZS_MASTER_PARAMS: /* an fp32 array either way: a master of its own or the fp32 params */
    *out = moment_dt == ZS_BF16 ? master32_m16 : master32_m32;
    return ZS_OK;
  case ZS_MASTER_REMAINDER: /* the bf16 params and the remainders, in place */
    *out = moment_dt == ZS_BF16 ? rem_m16 : rem_m32;
    return ZS_OK;
  case ZS_MASTER_LEAN: /* the bf16 params, in place, stochastic rounding */
    *out = moment_dt == ZS_BF16 ? lean_m16 : lean_m32;
    return ZS_OK;
  default:
    return zs_err(ZS_ERR_INVALID_ARG,
                  "master mode %d has no host-tier AdamW: use ZS_MASTER_FP32, ZS_MASTER_PARAMS, "
                  "ZS_MASTER_REMAINDER or ZS_MASTER_LEAN",
                  master);
  }
}
