/* offload_budget_bytes = ZS_BUDGET_FREE: the budget is the least free device memory over the
 * ranks at commit (zshard.h). Every rank measures, all-gathers its number and takes the minimum,
 * so every rank places the same units (the placement is a function of the budget, the
 * configuration and the unit sizes). */
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/free_hook.h"
#include "engine/engine_internal.h"
#include "engine/fail.h"

/* This rank's number: the test hook's, else what zs_engine_available says the device has,
   less ZS_BUDGET_FREE_RESERVE on CUDA (0 when that is all or nothing could be measured). */
static size_t measure(zs_engine *e, char *what, size_t n) {
  size_t b = 0, dev = 0, host = 0;
  if (zs_hook_free_bytes(&b)) {
    snprintf(what, n, "the test hook");
    return b;
  }
  if (!zs_engine_available(e, &dev, &host, what, n)) {
    snprintf(what, n, "nothing could be measured");
    return 0;
  }
  if (e->cfg.device == ZS_DEVICE_CUDA)
    dev = dev > ZS_BUDGET_FREE_RESERVE ? dev - ZS_BUDGET_FREE_RESERVE : 0;
  return dev;
}

zs_status zs_engine_budget_free(zs_engine *e) {
  if (e->budget_free_ranks) /* a refused commit measured before: measure again */
    e->cfg.offload_budget_bytes = ZS_BUDGET_FREE;
  e->budget_free_ranks = 0;
  if (e->cfg.offload_budget_bytes != ZS_BUDGET_FREE) return ZS_OK;
  char what[256];
  uint64_t mine = (uint64_t)measure(e, what, sizeof what);
  uint64_t *all = calloc((size_t)e->all_size, sizeof *all); /* every rank: one budget for all */
  if (!all) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_commit: out of host memory");
  zs_status rc = zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, &mine, 1, all);
  if (rc != ZS_OK) {
    free(all);
    return zs_engine_fail(e, zs_err_wrap(rc, "zs_engine_commit: agreeing on the free memory"));
  }
  int least = 0; /* the first rank with the least */
  for (int r = 1; r < e->all_size; r++)
    if (all[r] < all[least]) least = r;
  const uint64_t b = all[least];
  free(all);
  if (b == 0)
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "zs_engine_commit: offload_budget_bytes = ZS_BUDGET_FREE, but rank %d measured "
                  "no free device memory%s%s%s: free memory on that rank's device, or give the "
                  "budget in bytes; nothing was allocated",
                  least, least == e->all_rank ? " (" : "", least == e->all_rank ? what : "",
                  least == e->all_rank ? ")" : "");
  e->cfg.offload_budget_bytes = (size_t)b;
  e->budget_free_ranks = e->all_size;
  return ZS_OK;
}
