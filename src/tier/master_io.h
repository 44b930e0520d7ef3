/* The master codec over ranges: a unit's optimizer arrays in their canonical form, however the
 * precision mode keeps the master (an fp32 array, the bf16 params joined with their remainders,
 * or the params themselves in lean mode and for a frozen unit) and on whichever tier (tier.h).
 * The canonical form is fp32 over flat elements of the unit, what checkpoints store: bf16 state
 * is widened on read (exact) and rounded to nearest even on write; a state array a unit lacks
 * (frozen, or past the optimizer's count) reads as zeros and takes no writes. Set/get params,
 * gathers, checkpoints and the export read and write through here and never ask for the mode or
 * the tier themselves. */
#ifndef ZS_TIER_MASTER_IO_H
#define ZS_TIER_MASTER_IO_H

#include <stdint.h>

#include "tier/tier.h"

/* "master", or the state's short name under the config's optimizer (e.g. "m", "v"). */
const char *zs_arr_name(const zs_config *c, zs_arr a);
/* The arrays the config's optimizer keeps: the master, then its state arrays (1 + its state
   count), and array a's name in checkpoints ("master", then the optimizer's state names:
   "exp_avg", ...). */
int zs_state_narrays(const zs_config *c);
const char *zs_arr_ckpt_name(const zs_config *c, zs_arr a);

/* Whether u's master values are its params in param_dtype (read widened to fp32, written rounded
   to nearest even; u->master is NULL): a frozen unit (no master at all) or lean mode (the bf16
   params are the master, updated in place by the optimizer). */
int zs_unit_master_in_params(const zs_unit *u);

/* Whether u's bf16 compute copy is its master rounded ties away from zero (zs_f32_to_bf16_ta):
   a trainable unit in ZS_MASTER_REMAINDER, or in any mode while the test hook is on
   (base/round_hook.h). Otherwise (frozen units and lean mode too) it is rounded to nearest even. */
int zs_unit_ties_away(const zs_unit *u);

/* ZS_MASTER_PARAMS (ZS_ST_MASTER's life NONE): points u->master at the params' home over the
   optimizer range, which the home covers whole and holds in fp32 (zs_config_validate), so every
   reader and writer of the master uses the params in place. Call after the params are allocated;
   the alias is never freed. A frozen unit, a lean one and a remainder one get no alias: u->master
   stays NULL. */
void zs_unit_alias_master(zs_unit *u);

/* Whether this rank holds u's whole master in an array of its own (the master, or the
   remainders, not sharded; not the params): zs_state_read then reads any tensor of the unit
   without a gather. */
int zs_state_master_whole(const zs_unit *u);

/* u's whole master as an fp32 array in host memory on the CPU device (where readers may use it in
   place), or NULL (sharded, on the tier, joined from remainders, the params, or device memory). */
const float *zs_state_master_in_host(const zs_unit *u);

/* Whether u's master (the fp32 array or the remainders) is in the NVMe tier's files: reading it
   can fail with the tier's ZS_ERR_IO, which its readers report as the tier's. */
int zs_state_master_on_tier(const zs_unit *u);

/* n canonical values of array a of u at flat elements [x, x + n) into host memory dst (room for n
   floats). The master's range lies in what this rank holds of it: its optimizer range, or for a
   unit whose master is its params (lean, frozen) in its params' home; a state array's in its
   optimizer range (one the unit lacks: anywhere, zeros). Not collective; waits for its copies; the
   remainder master stages up to 4 MiB of host memory. *tier_failed (may be NULL) is set to 1 when
   the failure was a read of the NVMe tier's files (the engine's own state), else left as it is. */
zs_status zs_state_read(zs_tiers *t, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                        int *tier_failed);

/* Writes n canonical values src (host) of array a of u at flat elements [x, x + n) of its
   optimizer range. The master's write never touches the params: the caller writes them too, with
   the unit's rounding (in the remainder mode the remainders, computed from src alone, complete
   the ties-away compute copy of the same values; in lean mode the params are the master, so this
   writes nothing). A state array the unit lacks (frozen) takes nothing. scratch: room for n
   bf16 values (the state's rounding), or NULL to allocate it. Not collective; the remainder
   master stages up to 2 MiB of host memory. The NVMe tier's errors are ZS_ERR_IO naming the file
   and the offset, prefixed with `fn` and the unit. */
zs_status zs_state_write(zs_tiers *t, zs_unit *u, zs_arr a, uint64_t x, size_t n, const float *src,
                         uint16_t *scratch, const char *fn);

/* u's whole fp32 master into the device buffer full (collective over the shard group when the
   master is sharded; a frozen or lean unit's params converted to fp32, collective when they are
   sharded; a master on the NVMe tier read through its tier, the group agreeing on the reads
   before the all-gather). A failure is returned (the caller marks it and frees full with
   zs_mem_free_after). */
zs_status zs_master_gather(zs_tiers *t, zs_unit *u, float *full);

/* Array a of u whole, in canonical fp32, into the device buffer full (padded elements): the
   master as zs_master_gather; a state array from each rank's optimizer range (zeros where the unit
   has none), all-gathered over the shard group when the optimizer state is sharded (collective
   then, the group agreeing on the reads first). Host memory: at most 4 MiB of staging. A failure
   is returned (the caller marks it and frees full with zs_mem_free_after). */
zs_status zs_array_gather(zs_tiers *t, zs_unit *u, zs_arr a, float *full);

#endif
