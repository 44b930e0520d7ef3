/* An optimizer module: what the engine's optimizer driver (optim.h) needs to know of one
 * optimizer, and nothing else knows of it. The driver owns the paths (the device, the CPU workers,
 * the offload copy pipeline, the NVMe tier's streamed chunks) and the precision mode's placement
 * of the master; a module supplies the arithmetic:
 *
 *   prepare    the coefficients of one step (at most ZS_OPT_COEF_BYTES, opaque to the driver),
 *              once per step and weight-decay class;
 *   host_fn    the update of state in host memory for a precision mode, over any element range
 *              (the CPU device's update, the offload arena's, the NVMe tier's chunks);
 *   dev_update the update of state in CUDA device memory for a precision mode.
 *
 * The state a module keeps is listed in its shape (base/opt_shape.h: names, count, dtype): up to
 * ZS_OPT_MAX_STATE arrays, each one value per element of the optimizer range (or of a prefix of
 * each tensor: state_elems), placed, sharded, offloaded, checkpointed and planned by the engine
 * like the master. Every path of one module must give the same bits (the update is elementwise),
 * whatever the chunking, the pool or the device; a module that needs whole tensors (gather,
 * whole, store) gets them from the engine, and its bits do not depend on which rank computes a
 * tensor's whole step either. */
#ifndef ZS_OPTIM_OPTIMIZER_H
#define ZS_OPTIM_OPTIMIZER_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "base/opt_shape.h"
#include "device/device.h"
#include "optim/codec_dev.h"
#include "offload/worker_pool.h"
#include "optim/lean.h"
#include "zshard.h"

/* The most channels a whole-tensor optimizer gathers per element (zs_optimizer.whole_in). */
#define ZS_OPT_MAX_CHANNELS 4

/* The most bytes of one step's coefficients (a module's prepare writes at most this many). */
#define ZS_OPT_COEF_BYTES 128

/* A precision mode: zs_config.master and the dtype of the state arrays (zs_config.moment_dtype). */
typedef struct {
  int master;
  zs_dtype state_dt;
} zs_opt_mode;

/* One range's optimizer state (host or device memory), element 0 = the range's first element. */
typedef struct {
  float *master;                 /* the fp32 master: its own array, or the fp32 params that are it
                                    (ZS_MASTER_PARAMS where they live with the state); NULL in the modes whose bf16
                                    params are (part of) the master (ZS_MASTER_REMAINDER, ZS_MASTER_LEAN) */
  void *state[ZS_OPT_MAX_STATE]; /* the module's arrays in the mode's state_dt (unused: NULL) */
  uint16_t *rem;                 /* ZS_MASTER_REMAINDER: the 16-bit remainders; else unused */
  zs_lean_key key; /* ZS_MASTER_LEAN: the rounding's key whose elem0 is the unit element of the
                      range's element 0 (optim/lean.h); else unused */
} zs_opt_state;

/* Updates elements [lo, lo + len) of s in host memory: grad (gdt) and out (pdt) are host memory
   whose element 0 is element lo; the updated params go to out, or nowhere when out is NULL (the
   master is the params, updated in place). In the modes whose bf16 params are the master
   (zs_opt_reads_params) out is those params, read and written in place (never NULL) and grad is
   bf16. Over pool's workers (NULL: the calling thread). */
typedef void (*zs_opt_host_fn)(zs_pool *pool, const void *coef, const zs_opt_state *s, size_t lo,
                               size_t len, const void *grad, zs_dtype gdt, void *out, zs_dtype pdt);

struct zs_optimizer {
  /* The coefficients of step t (1-based) from c, gradients scaled by gscale (clip / (world *
     micro_steps)), with weight decay or without (a tensor's no_weight_decay). */
  void (*prepare)(void *coef, const zs_config *c, int64_t t, double gscale, int decay);
  /* The host update of mode m into *out; ZS_ERR_INVALID_ARG, with the sentence, for a mode the
     module does not run. */
  zs_status (*host_fn)(const zs_opt_mode *m, zs_opt_host_fn *out);
  /* The update of n elements on the CUDA device d (everything device memory), queued on stream,
     with host_fn's meaning of param (out, or the bf16 params in place). NULL: the module has no
     CUDA kernels (an engine on a CUDA device refuses it at create). */
  zs_status (*dev_update)(zs_dev *d, const zs_opt_mode *m, const void *coef, const zs_opt_state *s,
                          const void *grad, zs_dtype gdt, void *param, zs_dtype pdt, size_t n,
                          void *stream);
  /* Or the same update through the CUDA codec (optim/codec_cuda.cuh): the driver unpacks
     dev_update's arguments (zs_codec_dev_of) and calls it. A module sets one of the two. */
  zs_status (*dev_codec)(const void *coef, const zs_codec_dev *a);
  /* An optimizer whose update needs each tensor whole (Muon, Adafactor; all 0 and NULL for an
     elementwise one). Per tensor of a group on it the step runs (tier/whole.h): gather on each of
     this rank's pieces, its state, gradient and fp32 master in (s->master: NULL in the modes
     without one), whole_in fp32 values per element out (channel c at in[c]); then, on one rank,
     whole on the tensor's gathered channels (rows x cols, row-major), which writes whole_out <=
     whole_in channels in place of the first ones (it reads its inputs before it writes them):
     channel 0 is what host_fn then reads as its fp32 gradient, the others store's; then store
     (NULL: none) on each piece, its state from those channels. Deterministic: the same inputs
     give the same bits on every rank. work_floats(rows, cols): whole's scratch, host memory the
     caller lends. A tensor is rows = its first dimension by cols = the rest (a vector: n x 1). */
  int whole_in, whole_out;
  int whole_vectors; /* takes tensors of one dimension too (else commit refuses them) */
  void (*gather)(const void *coef, const zs_opt_state *s, zs_dtype sdt, const void *grad,
                 zs_dtype gdt, float *const *in, size_t n);
  size_t (*work_floats)(int64_t rows, int64_t cols);
  void (*whole)(const void *coef, float *const *ch, int64_t rows, int64_t cols, float *work);
  void (*store)(const void *coef, void *const *state, zs_dtype sdt, const float *const *out,
                size_t n);
  /* The elements of each state array a tensor of rows x cols keeps: its first ones (NULL: all
     rows * cols; ignored without whole). Fewer only in a whole-tensor module (Adafactor's
     factors): past them its gather reads zeros and its store's values are dropped, and its
     host_fn gets NULL state for a piece that reaches past them (it never reads the state). */
  size_t (*state_elems)(int64_t rows, int64_t cols);
  /* The whole step on the CUDA device (NULL: a CUDA engine refuses the module): gather, whole and
     store as above on device memory, queued on stream; whole's GEMMs through blas (the device's
     cuBLAS handle, set to stream), its scratch work_floats floats of device memory, and its
     outputs with -0 made +0 (the CPU path's caller does that after whole). The bits depend on
     neither the rank nor the split (one GPU type), but differ from the CPU's (cuBLAS against
     OpenBLAS). */
  int dev_blas; /* dev_whole uses blas (else it gets NULL and no handle is made for it) */
  zs_status (*dev_gather)(const void *coef, const zs_opt_state *s, zs_dtype sdt, const void *grad,
                          zs_dtype gdt, float *const *in, size_t n, void *stream);
  zs_status (*dev_whole)(const void *coef, float *const *ch, int64_t rows, int64_t cols,
                         float *work, void *blas, void *stream);
  zs_status (*dev_store)(const void *coef, void *const *state, zs_dtype sdt,
                         const float *const *out, size_t n, void *stream);
};

/* A module's CUDA function in its table: itself in a CUDA build, NULL in a CPU-only one (which
   declares none). */
#ifdef ZS_HAVE_CUDA
#define ZS_OPT_CUDA(f) f
#else
#define ZS_OPT_CUDA(f) NULL
#endif

/* Whether mode m's update reads the bf16 params as (part of) its master (ZS_MASTER_REMAINDER,
   ZS_MASTER_LEAN): then whoever stages the params must bring their current values in, not only
   take the new ones out (the CUDA copy pipeline). */
static inline int zs_opt_reads_params(int master) {
  return master == ZS_MASTER_REMAINDER || master == ZS_MASTER_LEAN;
}

/* The module zs_config c selects (its shape: zs_opt_shape_of(c)). Never NULL for a config that
   zs_config_validate accepted. */
static inline const zs_optimizer *zs_optimizer_for(const zs_config *c) {
  return zs_opt_entry_of(c)->module;
}

/* The most floats the whole step of one tensor of n elements can lend on top of its channels, for
   a planner that knows unit sizes but no shapes: work_floats at the vector shapes and the squarest
   one (isqrt(n) rows, its columns rounded up). Every module's work grows with rows and cols and,
   at a fixed product, with the smaller side (Muon's Gram matrices) or the sum (Adafactor's
   factors), so no rows x cols = n exceeds it. 0 for n = 0 (such a tensor has no step). */
static inline size_t zs_optimizer_work_bound(const zs_optimizer *m, size_t n) {
  if (!n) return 0;
  int64_t r = (int64_t)sqrt((double)n);
  while (r > 1 && r * r > (int64_t)n)
    r--;
  while ((r + 1) * (r + 1) <= (int64_t)n)
    r++;
  size_t w = m->work_floats(1, (int64_t)n), v = m->work_floats((int64_t)n, 1);
  if (v > w) w = v;
  v = m->work_floats(r, ((int64_t)n + r - 1) / r);
  return v > w ? v : w;
}

#endif
