/* Memory ledger bookkeeping. */
#include "mem/ledger.h"

void zs_ledger_add(zs_ledger *l, zs_mem_cat c, size_t bytes) {
  l->cat[c].cur += bytes;
  if (l->cat[c].cur > l->cat[c].peak) l->cat[c].peak = l->cat[c].cur;
  l->total.cur += bytes;
  if (l->total.cur > l->total.peak) l->total.peak = l->total.cur;
}

void zs_ledger_sub(zs_ledger *l, zs_mem_cat c, size_t bytes) {
  l->cat[c].cur -= bytes < l->cat[c].cur ? bytes : l->cat[c].cur;
  l->total.cur -= bytes < l->total.cur ? bytes : l->total.cur;
}

void zs_ledger_report(const zs_ledger *l, zs_memory *out) {
  out->params = l->cat[ZS_MEM_PARAMS];
  out->grads = l->cat[ZS_MEM_GRADS];
  out->optimizer = l->cat[ZS_MEM_OPTIMIZER];
  out->buffers = l->cat[ZS_MEM_BUFFERS];
  out->host_pinned = l->cat[ZS_MEM_HOST_PINNED];
  out->total = l->total;
  out->struct_version = 1;
  out->reserved_u = 0;
  for (int i = 0; i < 6; i++)
    out->reserved[i] = (zs_bytes){0, 0};
}
