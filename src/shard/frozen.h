/* Frozen units: a frozen unit has params only (no gradient, no fp32 master, no optimizer state),
 * sharded and gathered like any other. What changes for it is one thing: its state table, where
 * every gradient and optimizer state is ZS_LIFE_NONE, so allocation, the ledger and the planner
 * (which all iterate the table) give it no bytes of them. Pure data. */
#ifndef ZS_SHARD_FROZEN_H
#define ZS_SHARD_FROZEN_H

#include "shard/state_table.h"

/* Turns a unit's table into a frozen unit's: the gradient states (full, shard, staging) and the
   optimizer states (master, state arrays) stop existing; the params' entries stay as they are. */
void zs_state_table_freeze(zs_state_table *t);

/* Whether a table is a frozen unit's: it has no gradient (a trainable unit always has a full
   gradient, persistent or transient). Not "no master": with ZS_MASTER_PARAMS a trainable unit's
   table has no master either. */
static inline int zs_state_table_frozen(const zs_state_table *t) {
  return t->s[ZS_ST_GRAD_FULL].life == ZS_LIFE_NONE;
}

#endif
