/* The whole step of the optimizers that need each tensor whole (optim/optimizer.h: gather, whole,
 * store; Muon, Adafactor), for one unit, on every tier. Each rank gathers its pieces'
 * channels (fp32 values per element: Muon's direction; Adafactor's gradient, master and state)
 * into a zeroed buffer of channels over the padded unit. Where the optimizer state is sharded the
 * shard group all-gathers each input channel, each tensor's owner (zs_unit.whole_owner) runs its
 * whole step, the others zero its output channels, and a reduce-scatter of each output channel
 * hands every rank the results of its pieces; each sum has one nonzero term (the owner's, -0
 * made +0 first), so it is exact in any order. A tensor split over the tp group (zs_unit.tp,
 * tp_slice.h) is first joined over it by its owner's tp group (a tp group's ranks share their
 * shard rank): its ranks all-gather their input channels' slices, one of them
 * (zs_unit.whole_tp) runs the whole step on the whole tensor in the scratch, and a reduce-scatter
 * over the group in which the others give zeros hands each rank its slice of the results, which
 * gives the unsplit tensor's bits (an optimizer that keeps a prefix of state, Adafactor, keeps each
 * slice's share of it: zs_tp_prefix_share). Where the state is not sharded
 * (every rank holds the whole unit: stage 0) every rank runs every whole step itself, with no
 * exchange. Store then writes the results into the state, and the update reads channel 0 in place
 * of the gradient. On the NVMe tier the gather is a pass of its own over the unit's files and the
 * store is part of the update's pass (zs_nvme_tier_whole_gather). The bits are the one-rank run's
 * whatever the owner, the world size, the stage or the split, given the same BLAS build and CPU
 * type on every rank (Muon's GEMMs: OpenBLAS picks its kernel per CPU at run time). Costs per unit
 * with whole tensors: the channels' buffer and the largest whole step's scratch on every rank
 * (allocated before the exchange; with a split tensor's join, zs_tp_join_floats more), and where
 * sharded one all-gather per input channel and one reduce-scatter per output channel of fp32
 * values; per split tensor, on its owner's tp group, one all-gather over tp per input channel and
 * one reduce-scatter per output channel. */
#ifndef ZS_TIER_WHOLE_H
#define ZS_TIER_WHOLE_H

#include "tier/tier.h"

/* Before u's update (zs_optim_prepare'd): its whole steps into u->whole_dir, which the update then
   reads (zs_tier_mem_seg, or the NVMe tier's chunks). A no-op for a unit without whole tensors.
   Collective over the shard group when u has any, and over the tp group when one of the tensors
   this rank computes is split (the plan is the same everywhere); the CPU device only. Errors: the
   allocations', the collectives', the NVMe tier's gather (ZS_ERR_IO). */
zs_status zs_tier_whole_begin(zs_tiers *t, zs_unit *u);
/* After u's update (rc: the step's status so far): frees u->whole_dir (deferred after a failed
   collective). */
void zs_tier_whole_end(zs_tiers *t, zs_unit *u, zs_status rc);

#endif
