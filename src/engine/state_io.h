/* A unit's optimizer arrays in their canonical form, wherever and however they are kept: the one
 * place that knows, per precision mode and tier, how to read and write the master (an fp32 array
 * in device memory or the host arena, its file on the NVMe tier, the bf16 params joined with
 * their remainders, or the params themselves in lean mode and for a frozen unit) and the
 * optimizer's state arrays (fp32 or bf16, in memory or on the tier). The canonical form is fp32
 * over flat elements of the unit, what checkpoints store: bf16 state is widened on read (exact)
 * and rounded to nearest even on write; a state array a unit lacks (frozen, or past the
 * optimizer's count) reads as zeros and takes no writes. Checkpoint save and load go through here
 * in one loop over the arrays, never branching on the mode or the tier themselves. */
#ifndef ZS_ENGINE_STATE_IO_H
#define ZS_ENGINE_STATE_IO_H

#include <stdint.h>

#include "engine/engine_internal.h"

/* The optimizer arrays, in the order a checkpoint stores them: the master, then the optimizer's
   state i at ZS_ARR_OPT0 + i (base/opt_shape.h). */
typedef enum { ZS_ARR_MASTER = 0, ZS_ARR_OPT0 = 1, ZS_ARR_N = 1 + ZS_OPT_MAX_STATE } zs_arr;

/* "master", or the state's short name under e's optimizer (e.g. "m", "v"). */
const char *zs_arr_name(const zs_engine *e, zs_arr a);
/* The arrays e's optimizer keeps: the master, then its state arrays (1 + its state count), and
   array a's name in checkpoints ("master", then the optimizer's state names: "exp_avg", ...). */
int zs_state_narrays(const zs_engine *e);
const char *zs_arr_ckpt_name(const zs_engine *e, zs_arr a);

/* Whether this rank holds u's whole master in an array of its own (the master, or the
   remainders, not sharded; not the params): zs_state_read then reads any tensor of the unit
   without a gather. */
int zs_state_master_whole(const zs_unit *u);

/* u's whole master as an fp32 array in host memory on the CPU device (where readers may use it in
   place), or NULL (sharded, on the tier, joined from remainders, the params, or device memory). */
const float *zs_state_master_in_host(const zs_engine *e, const zs_unit *u);

/* Whether u's master (the fp32 array or the remainders) is in the NVMe tier's files: reading it
   can fail with the tier's ZS_ERR_IO, which its readers report as the tier's. */
int zs_state_master_on_tier(const zs_unit *u);

/* n canonical values of array a of u at flat elements [x, x + n) into host memory dst (room for n
   floats). The master's range lies in what this rank holds of it: its optimizer range, or for a
   unit whose master is its params (lean, frozen) in its params' home; a state array's in its
   optimizer range (one the unit lacks: anywhere, zeros). Not collective; waits for its copies; the
   remainder master stages up to 4 MiB of host memory. *tier_failed (may be NULL) is set to 1 when
   the failure was a read of the NVMe tier's files (the engine's own state), else left as it is. */
zs_status zs_state_read(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n, float *dst,
                        int *tier_failed);

/* Writes n canonical values src (host) of array a of u at flat elements [x, x + n) of its
   optimizer range. The master's write never touches the params: the caller writes them too, with
   the unit's rounding (in the remainder mode the remainders, computed from src alone, complete
   the ties-away compute copy of the same values; in lean mode the params are the master, so this
   writes nothing). A state array the unit lacks (frozen) takes nothing. scratch: room for n
   bf16 values (the state's rounding), or NULL to allocate it. Not collective; the remainder
   master stages up to 2 MiB of host memory. The NVMe tier's errors are ZS_ERR_IO naming the file
   and the offset, prefixed with `fn` and the unit. */
zs_status zs_state_write(zs_engine *e, zs_unit *u, zs_arr a, uint64_t x, size_t n, const float *src,
                         uint16_t *scratch, const char *fn);

#endif
