/* The copy pipeline of the optimizer step with offloaded state (ZS_OFFLOAD_OPTIMIZER or a unit an
 * offload budget placed on the host): the optimizer's state lives in the host arena and the CPU
 * updates it chunk by chunk with a function the optimizer hands in (its precision mode's
 * host update); on CUDA the gradients come down and the
 * params go up in pinned chunks around that update (and, in the modes whose bf16 params are the
 * master, the params come down too). It knows no optimizer. Used by the engine's optimizer
 * (src/optim/optim.c), which owns the pool and the staging. */
#ifndef ZS_OFFLOAD_PIPELINE_H
#define ZS_OFFLOAD_PIPELINE_H

#include <stddef.h>

#include "device/device.h"
#include "offload/host_arena.h"

/* Staging for the CUDA copy pipeline: two pinned chunks each for gradients and params. The slot
   parity runs on across calls (next), so a call returns with its last params' host->device copies
   still queued: the next chunk that writes a param slot from the CPU waits for that slot's copy
   first (param_busy), whichever call it belongs to. Device readers are ordered by the compute
   stream the copies are on. */
typedef struct {
  void *grad[2], *param[2];
  void *ev_grad[2], *ev_param[2];
  void *ev_param_in[2]; /* the params' device->host copy into param[k] (params_in) is done */
  size_t chunk;         /* elements per chunk */
  size_t bytes;         /* bytes of each staging buffer */
  unsigned next;        /* the slot the next call's first chunk uses */
  int param_busy[2];    /* a host->device copy from param[k] is queued, ev_param[k] not waited */
} zs_offload_pipe;

/* The host arena bytes the staging holds on device kind `kind` with `chunk` elements per chunk:
   four buffers of chunk x 4 bytes, each its whole pages (zs_host_charge); 0 on the CPU device.
   The engine books it as host_pinned and the planner counts it. */
size_t zs_offload_pipe_bytes(zs_device kind, size_t chunk);
/* Allocates the staging buffers (CUDA only; a no-op on the CPU device). */
zs_status zs_offload_pipe_init(zs_offload_pipe *p, zs_dev *d, zs_host_arena *a, size_t chunk);
/* Waits (bounded) for the copies still queued from the param slots, then frees the staging. */
void zs_offload_pipe_free(zs_offload_pipe *p, zs_dev *d, zs_host_arena *a);

/* The update of elements [lo, lo + len) of a call's range: grad (host memory, the call's gdt) and
   out (host memory, the call's pdt; NULL when the params are the master and nothing is written)
   have their element 0 at element lo. In place on the state the optimizer's ctx names. */
typedef void (*zs_chunk_update_fn)(void *ctx, size_t lo, size_t len, const void *grad, void *out);

/* Runs fn over n elements whose state is in host arrays. grad: device memory (dtype gdt).
   param_out: where the updated params go (dtype pdt): device memory, or host memory when
   params_host; NULL when the master is the params (host memory, params_host).
   params_in (the bf16 params are the master: remainder and lean modes): param_out is read too,
   updated in place; on CUDA with device params each chunk's params come down to the staging with
   its gradient (on the compute stream, after every earlier write of them), the update runs on the
   staged copy and it goes back up. On the CPU device everything is host memory and fn runs once
   over the whole range. On CUDA, chunks are pipelined: the copy of chunk k+1's gradient (and
   params_in, params) device->host and of chunk k-1's params host->device overlap the CPU update
   of chunk k; the last chunks' params host->device copies are left queued on the compute stream
   (see zs_offload_pipe), overlapping whatever the caller does next (the NVMe tier: its next
   chunk's read and update). */
zs_status zs_offload_stream(zs_dev *d, zs_offload_pipe *pipe, zs_chunk_update_fn fn, void *ctx,
                            const void *grad, zs_dtype gdt, void *param_out, zs_dtype pdt,
                            int params_host, int params_in, size_t n);

#endif
