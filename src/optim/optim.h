/* The optimizer driver of one engine: the exact global gradient norm, the clipping coefficient
 * and the update of this rank's segments by the engine's optimizer module (optimizer.h), with the
 * choice of where each segment is updated:
 *
 *   state in the host arena (ZS_OFFLOAD_OPTIMIZER,       -> the module's host update on the CPU
 *   or a unit a budget placed on the host)                  workers of the arena's node (on CUDA
 *                                                           through the copy pipeline)
 *   params host-resident alone on CUDA (ZS_OFFLOAD_PARAMS) -> the device, into a scratch buffer,
 *                                                           then one copy to the host shard
 *   otherwise, CUDA                                       -> the module's device update
 *   otherwise, the CPU device                             -> the module's host update on this
 *                                                           driver's CPU workers
 *                                                           (ZS_ADAMW_THREADS), or the caller
 *
 * In the modes whose bf16 params are the master (ZS_MASTER_REMAINDER with the remainders,
 * ZS_MASTER_LEAN) the update runs in place on the params, on the rows above. On the host tier the
 * remainders and the state live where the master would, the bf16 params where the plan puts them;
 * the update reads the params, so on CUDA the copy pipeline brings each chunk's params down with
 * its gradient, the host update runs on the pinned copy and the params go back up: the state never
 * crosses the bus, the params (2 bytes per element) cross it twice, and the CPU kernels give the
 * CUDA kernels' bits (one element's arithmetic, lean.h's random bits keyed by unit element, not by
 * chunk). With the state on the CUDA device and the params alone on the host the params come up
 * to a scratch buffer, the device update runs in place, and they go back down.
 *
 * Every path gives the same bits in each precision mode: a module's host and device updates agree
 * (optimizer.h). The engine creates one zs_optim at zs_engine_create and destroys it in
 * zs_engine_destroy; it owns its worker pools and the pipeline's staging, nothing of it is
 * process-wide, so engines in one process never share or stop each other's workers. It does not
 * know units, the plan or the ledger: the engine hands it segments and a scratch allocator. Not
 * thread-safe: one engine's step at a time. */
#ifndef ZS_OPTIM_OPTIM_H
#define ZS_OPTIM_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "device/device.h"
#include "offload/host_arena.h"
#include "optim/optimizer.h"
#include "zshard.h"

typedef struct zs_optim zs_optim;

/* Device scratch the optimizer borrows during an update (the engine's ledger-booked buffers). */
typedef struct {
  void *ctx;
  zs_status (*alloc)(void *ctx, size_t bytes, void **p, void *stream);
  void (*free)(void *ctx, void *p, size_t bytes, void *stream);
} zs_optim_scratch;

typedef struct {
  zs_dev *dev;              /* the engine's device (borrowed; outlives the optimizer) */
  zs_dtype param_dtype;     /* of the params the updates write */
  zs_dtype grad_dtype;      /* of the gradients they read (zs_grad_accum_dtype) */
  zs_host_arena *arena;     /* the offload arena (borrowed), or NULL without offload */
  int offload_optimizer;    /* some optimizer state lives in the arena: start the node's workers and
                               the    copy pipeline (needs arena) */
  int offload_threads;      /* zs_config.offload_threads (0: one per core of the node) */
  int share_idx, share_cnt; /* this rank among the ranks of its host on the arena's node */
  size_t offload_chunk;     /* elements per chunk of the CUDA copy pipeline */
  zs_optim_scratch scratch;
  zs_opt_mode mode;        /* the precision mode (zs_config.master, moment_dtype) */
  const zs_optimizer *ops; /* the optimizer module (zs_optimizer_for) */
} zs_optim_cfg;

/* Creates the optimizer and picks, once, the module's update of host-resident state for the
   precision mode (the arena's, and the CPU device's). With offload_optimizer: a pool of
   workers bound to the arena's NUMA node (its cores split share_cnt ways) and, on CUDA, the
   pipeline's pinned staging. On the CPU device: when ZS_ADAMW_THREADS=N (1 < N <= 4096) a pool of N
   unbound workers for the updates of device-resident state (if it cannot start, those updates run
   on the calling thread, as without it). Errors: a mode the host tier does not run
   (ZS_ERR_INVALID_ARG), the pool's or the staging's; nothing is left allocated. */
zs_status zs_optim_create(const zs_optim_cfg *cfg, zs_optim **out);
/* Stops this optimizer's workers and frees its staging (before the arena is destroyed). NULL ok.
 */
void zs_optim_destroy(zs_optim *o);
/* The offload workers' description for zs_engine_info ("" without them). */
const char *zs_optim_info(const zs_optim *o);
/* Worker counts of the offload pool and of the CPU device's pool (0: none), for tests. */
void zs_optim_workers(const zs_optim *o, int *offload, int *cpu);

/* ---- The gradient norm: exact, independent of how units are cut into shards ----
   The caller owns the bins (ZS_OPTIM_NORM_BYTES of device memory) and must not free them after
   a failed finish before it has marked itself failed: an abandoned all-reduce may still write
   them. */
#define ZS_OPTIM_NORM_BYTES (ZS_SQ_NWORDS * sizeof(uint64_t))

typedef struct {
  double norm;        /* sqrt(sum of squares) * scale */
  uint64_t nonfinite; /* NaN/Inf gradient elements summed over the group */
} zs_optim_norm;

/* Zeroes the bins on the compute stream. */
zs_status zs_optim_norm_start(zs_optim *o, uint64_t *bins);
/* Adds the squares of n gradient elements (param dtype, device memory) into the bins. */
zs_status zs_optim_norm_add(zs_optim *o, uint64_t *bins, const void *grad, size_t n);
/* Sums the bins over `group`, then over group2 (collective over each; NULL: none, e.g. this
   rank holds every gradient) and converts them once: out->norm = sqrt(sum) * scale. A failed
   all-reduce is named "gradient-norm all-reduce" in zs_last_error(). */
zs_status zs_optim_norm_finish(zs_optim *o, uint64_t *bins, zs_coll *group, zs_coll *group2,
                               double scale, zs_optim_norm *out);
/* The clipping coefficient: max_grad_norm / (norm + 1e-6) when max_grad_norm > 0 and norm is
   above it, else 1 (docs/OPTIMIZER.md §3). */
double zs_optim_clip_coef(double norm, double max_grad_norm);

/* ---- The update ---- */
/* The module's coefficients of optimizer step t (1-based) for each of the ngroups parameter
   groups (1 <= ngroups <= ZS_MAX_PARAM_GROUPS) from cfgs[g], the group's configuration (the
   engine's with the group's hyperparameters), gradients scaled by gscale (clip / (world *
   micro_steps)); zs_optim_update uses them until the next call, and in lean mode t and
   cfgs[0].rounding_seed as the rounding's key. Each group's optimizer is its cfgs[g]'s
   (zs_optimizer_for); one the precision mode or the device does not run is refused
   (ZS_ERR_INVALID_ARG, ZS_ERR_UNSUPPORTED: zs_engine_add_group checks both first). */
zs_status zs_optim_prepare(zs_optim *o, const zs_config *cfgs, int ngroups, int64_t t,
                           double gscale);

/* One tensor's piece of this rank's optimizer range. */
typedef struct {
  float *master; /* fp32 master: device memory, or the host arena when state_host (with
                    ZS_MASTER_PARAMS there: the arena's params when they live there too) */
  void *state[ZS_OPT_MAX_STATE]; /* the module's state arrays (their dtype), where the master is */
  const void *grad;              /* the reduced gradient (param dtype, device memory) */
  void *param; /* where the updated params go (param dtype): device memory, or host
                  memory when params_host; == master when the fp32 params are the
                  master (ZS_MASTER_PARAMS), updated in place */
  size_t n;    /* elements */
  int no_weight_decay, state_host, params_host;
  int group; /* the tensor's parameter group: whose coefficients (zs_optim_prepare) */
  /* Lean mode (ZS_MASTER_LEAN: master NULL, param the bf16 params updated in place, on either
     tier; the state where state_host says): the unit's
     index and the flat offset in the unit of element 0, the key of the rounding's random bits
     (src/optim/lean.h); unused in the other modes. */
  int unit;
  size_t elem;
  uint16_t *rem; /* ZS_MASTER_REMAINDER: the remainders, where the state is (device memory, or
                    the host arena when state_host); then master is NULL and param (bf16) with
                    rem is the master, updated in place. Else NULL. */
  /* A group whose optimizer needs whole tensors: its whole step's result (fp32, host memory),
     which the update reads in place of grad (zs_optim_whole). Else NULL. */
  const float *dir;
} zs_optim_seg;

/* The module's update of one segment, on the path the table above chooses. Work is queued on the
   engine's streams (CUDA) or done on return (CPU). Errors: the device's, the scratch allocation's.
 */
zs_status zs_optim_update(zs_optim *o, const zs_optim_seg *s);

/* ---- Optimizers that need whole tensors (optimizer.h: gather, whole, store; tier/whole.h) ---- */
/* The channels group g's optimizer, as prepared, gathers per element and returns from its whole
   step (*in, *out); both 0 for an elementwise one. */
void zs_optim_whole_channels(const zs_optim *o, int g, int *in, int *out);
/* s's gather into the channels in (each s->n floats). */
void zs_optim_gather(const zs_optim *o, const zs_optim_seg *s, float *const *in);
/* The scratch floats zs_optim_whole needs for a rows x cols tensor of group g. */
size_t zs_optim_whole_work(const zs_optim *o, int g, int64_t rows, int64_t cols);
/* Group g's whole step on the channels ch of one tensor (rows x cols), work holding
   zs_optim_whole_work floats. decay: the tensor's weight decay class (!no_weight_decay). */
void zs_optim_whole(const zs_optim *o, int g, int decay, float *const *ch, int64_t rows,
                    int64_t cols, float *work);
/* s's store from the whole step's channels out (each s->n floats; a no-op without one). */
void zs_optim_store(const zs_optim *o, const zs_optim_seg *s, const float *const *out);
/* The same three on the CUDA device (optimizer.h's dev_*), queued on stream: device memory
   everywhere. Errors: the launches', cuBLAS's. */
zs_status zs_optim_gather_dev(const zs_optim *o, const zs_optim_seg *s, float *const *in,
                              void *stream);
zs_status zs_optim_whole_dev(const zs_optim *o, int g, int decay, float *const *ch, int64_t rows,
                             int64_t cols, float *work, void *blas, void *stream);
/* Whether group g's device whole step needs the device's cuBLAS handle (zs_dev_blas: blas above,
   NULL where not). */
int zs_optim_whole_blas(const zs_optim *o, int g);
zs_status zs_optim_store_dev(const zs_optim *o, const zs_optim_seg *s, const float *const *out,
                             void *stream);

#endif
