/* The copy pipeline of the optimizer step with offloaded state (ZS_OFFLOAD_OPTIMIZER): fp32
 * master, m and v live in the host arena and a CPU worker pool updates them (cpu_adamw.h); on
 * CUDA the gradients come down and the params go up in pinned chunks around that update. Used by
 * the engine's optimizer (src/optim/optim.c), which owns the pool and the staging. */
#ifndef ZS_OFFLOAD_PIPELINE_H
#define ZS_OFFLOAD_PIPELINE_H

#include <stddef.h>

#include "device/device.h"
#include "offload/cpu_adamw.h"
#include "offload/host_arena.h"
#include "offload/worker_pool.h"

/* Staging for the CUDA copy pipeline: two pinned chunks each for gradients and params. */
typedef struct {
  void *grad[2], *param[2];
  void *ev_grad[2], *ev_param[2];
  size_t chunk; /* elements per chunk */
  size_t bytes; /* bytes of each staging buffer */
} zs_offload_pipe;

/* Allocates the staging buffers (CUDA only; a no-op on the CPU device). */
zs_status zs_offload_pipe_init(zs_offload_pipe *p, zs_dev *d, zs_host_arena *a, size_t chunk);
void zs_offload_pipe_free(zs_offload_pipe *p, zs_dev *d, zs_host_arena *a);

/* AdamW on n elements whose master/m/v are host arrays. grad: device memory (dtype gdt).
   param_out: where the updated params go (dtype pdt): device memory, or host memory when
   params_host. On the CPU device everything is host memory and the pool updates in place. On
   CUDA, chunks are pipelined: the copy of chunk k+1's gradient (device->host) and of chunk k-1's
   params (host->device) overlap the CPU update of chunk k. */
zs_status zs_offload_adamw(zs_dev *d, zs_pool *pool, zs_offload_pipe *pipe, const zs_adamw_coef *c,
                           float *master, float *m, float *v, const void *grad, zs_dtype gdt,
                           void *param_out, zs_dtype pdt, int params_host, size_t n);

#endif
