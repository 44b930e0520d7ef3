/* Memory ledger: every byte the engine allocates is booked in one category, current and peak. */
#ifndef ZS_MEM_LEDGER_H
#define ZS_MEM_LEDGER_H

#include <stddef.h>

#include "zshard.h"

typedef enum {
  ZS_MEM_PARAMS = 0,
  ZS_MEM_GRADS,
  ZS_MEM_OPTIMIZER,
  ZS_MEM_BUFFERS,
  ZS_MEM_HOST_PINNED,
  ZS_MEM_NCAT
} zs_mem_cat;

typedef struct {
  zs_bytes cat[ZS_MEM_NCAT];
  zs_bytes total;
} zs_ledger;

/* Books `bytes` more (add) or fewer (sub) in category c, updating peaks. */
void zs_ledger_add(zs_ledger *l, zs_mem_cat c, size_t bytes);
void zs_ledger_sub(zs_ledger *l, zs_mem_cat c, size_t bytes);
/* Copies the ledger into the public struct. */
void zs_ledger_report(const zs_ledger *l, zs_memory *out);

#endif
