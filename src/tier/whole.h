/* The whole step of the optimizers that need each tensor whole (optim/optimizer.h: gather, whole,
 * store; Muon, Adafactor), for one unit, on the memory tiers. Each rank gathers its pieces'
 * channels (fp32 values per element: Muon's direction; Adafactor's gradient, master and state)
 * into a zeroed buffer of channels over the padded unit; where the optimizer state is sharded the
 * shard group all-gathers each channel, so every rank holds each tensor whole. Each tensor's
 * owner (zs_unit.whole_owner) runs the whole step on it, the others zero its output channels, and
 * a sum over the shard group (a reduce-scatter onto the shards, or an all-reduce where the state
 * is not sharded) hands every rank the results of its pieces, which store writes into the state
 * and the update reads in place of the gradient. Each sum has one nonzero term (the owner's, -0
 * made +0 first), so it is exact in any order: the bits are those of the one-rank run whatever the
 * owner, the world size, the stage or the split. Costs per unit with whole tensors: one all-gather
 * per input channel and one reduce-scatter (or all-reduce) per output channel of its fp32 values,
 * the channels' buffer, and the largest owned tensor's scratch. */
#ifndef ZS_TIER_WHOLE_H
#define ZS_TIER_WHOLE_H

#include "tier/tier.h"

/* Before u's update (zs_optim_prepare'd): its whole steps into u->whole_dir, which the update then
   reads (zs_tier_mem_seg). A no-op for a unit without whole tensors. Collective over the shard
   group when u has any (every rank alike: the plan is the same everywhere); the CPU device only.
   Errors: the allocations', the collectives'. */
zs_status zs_tier_whole_begin(zs_tiers *t, zs_unit *u);
/* After u's update (rc: the step's status so far): frees u->whole_dir (deferred after a failed
   collective). */
void zs_tier_whole_end(zs_tiers *t, zs_unit *u, zs_status rc);

#endif
