/* The engine's facts (zshard_facts.h) and zs_engine_info's text, which is written from them so
 * that the two cannot disagree (facts.c). */
#ifndef ZS_ENGINE_FACTS_H
#define ZS_ENGINE_FACTS_H

#include "engine/engine_internal.h"
#include "shard/placement.h"
#include "shard/plan_units.h"

/* Create, once the groups, the arena and the optimizer are open: fills the engine's facts and
   writes zs_engine_info's line (sources: the resolved settings' "field=value (origin), ..."). */
void zs_engine_facts_create(zs_engine *e, const char *sources);

/* Commit, once it succeeded: the placement's facts from pl (units us), its "; placement:" part
   (with a budget) and its "; nvme:" part (with nvme_path) appended to zs_engine_info. */
void zs_engine_facts_commit(zs_engine *e, const zs_plan_units *us, const zs_placement *pl);

/* Copies the NVMe tier's directory and totals into the facts and rewrites the "; nvme:" part at
   the end of zs_engine_info from them (after commit and after each step). No-op without it. */
void zs_engine_nvme_info(zs_engine *e);

/* Closes the NVMe tier (zs_nvme_tier_close: its files and directory are removed) and forgets its
   directory in the facts. No tier: nothing. */
void zs_engine_nvme_close(zs_engine *e);

#endif
