/* Offloaded AdamW: CPU update of host-resident optimizer state, with a chunked copy pipeline on
 * CUDA (gradients device->host on the comm stream, params host->device on the compute stream). */
#include "offload/pipeline.h"

#include <string.h>

#include "base/error.h"

zs_status zs_offload_pipe_init(zs_offload_pipe *p, zs_dev *d, zs_host_arena *a, size_t chunk) {
  memset(p, 0, sizeof *p);
  if (d->kind != ZS_DEVICE_CUDA) return ZS_OK;
  if (chunk == 0)
    return zs_err(ZS_ERR_INVALID_ARG, "ZS_OFFLOAD_CHUNK is 0: use a positive number of elements");
  p->chunk = chunk;
  p->bytes = chunk * 4;
  for (int k = 0; k < 2; k++) {
    ZS_CHECK(zs_host_arena_alloc(a, p->bytes, &p->grad[k]));
    ZS_CHECK(zs_host_arena_alloc(a, p->bytes, &p->param[k]));
    ZS_CHECK(zs_dev_event_create(d, &p->ev_grad[k]));
    ZS_CHECK(zs_dev_event_create(d, &p->ev_param[k]));
    ZS_CHECK(zs_dev_event_create(d, &p->ev_param_in[k]));
  }
  return ZS_OK;
}

void zs_offload_pipe_free(zs_offload_pipe *p, zs_dev *d, zs_host_arena *a) {
  for (int k = 0; k < 2; k++) {
    if (p->grad[k]) zs_host_arena_free(a, p->grad[k]);
    if (p->param[k]) zs_host_arena_free(a, p->param[k]);
    zs_dev_event_destroy(d, p->ev_grad[k]);
    zs_dev_event_destroy(d, p->ev_param[k]);
    zs_dev_event_destroy(d, p->ev_param_in[k]);
  }
  memset(p, 0, sizeof *p);
}

/* Queues the device->host copy of chunk k's gradient into staging slot k % 2 and, when params
   (device memory, dtype pdt; NULL: none) is set, of its params into param slot k % 2 on the
   compute stream: there after every earlier write of them and after the host->device copy of
   chunk k - 2 that last read the slot. */
static zs_status fetch_chunk(zs_dev *d, zs_offload_pipe *p, const void *grad, zs_dtype gdt,
                             const void *params, zs_dtype pdt, size_t n, size_t k) {
  size_t lo = k * p->chunk, len = n - lo < p->chunk ? n - lo : p->chunk;
  ZS_CHECK(zs_dev_copy(d, p->grad[k % 2], (const char *)grad + lo * zs_dtype_size(gdt),
                       len * zs_dtype_size(gdt), d->comm_stream));
  ZS_CHECK(zs_dev_event_record(d, p->ev_grad[k % 2], d->comm_stream));
  if (!params) return ZS_OK;
  ZS_CHECK(zs_dev_copy(d, p->param[k % 2], (const char *)params + lo * zs_dtype_size(pdt),
                       len * zs_dtype_size(pdt), d->compute_stream));
  return zs_dev_event_record(d, p->ev_param_in[k % 2], d->compute_stream);
}

zs_status zs_offload_adamw(zs_dev *d, zs_pool *pool, zs_offload_pipe *pipe, zs_host_update_fn fn,
                           const zs_adamw_coef *c, const zs_host_state *s, const void *grad,
                           zs_dtype gdt, void *param_out, zs_dtype pdt, int params_host,
                           int params_in, size_t n) {
  if (n == 0) return ZS_OK;
  if (d->kind != ZS_DEVICE_CUDA) {
    fn(pool, c, s, 0, n, grad, gdt, param_out, pdt);
    return ZS_OK;
  }
  const size_t nchunks = (n + pipe->chunk - 1) / pipe->chunk;
  /* The device params to stage in (read by the update): remainder and lean modes. */
  const void *pin = params_in && !params_host ? param_out : NULL;
  ZS_CHECK(fetch_chunk(d, pipe, grad, gdt, pin, pdt, n, 0));
  for (size_t k = 0; k < nchunks; k++) {
    const size_t lo = k * pipe->chunk, len = n - lo < pipe->chunk ? n - lo : pipe->chunk;
    if (k + 1 < nchunks) ZS_CHECK(fetch_chunk(d, pipe, grad, gdt, pin, pdt, n, k + 1));
    ZS_CHECK(zs_dev_event_wait(d, pipe->ev_grad[k % 2]));
    if (pin) ZS_CHECK(zs_dev_event_wait(d, pipe->ev_param_in[k % 2]));
    /* Slot k % 2 of the param staging was last read by the copy of chunk k - 2. */
    if (!params_host && k >= 2) ZS_CHECK(zs_dev_event_wait(d, pipe->ev_param[k % 2]));
    /* Host params: written in place (none to write when they are the master). */
    void *out = !params_host ? pipe->param[k % 2]
                : param_out  ? (char *)param_out + lo * zs_dtype_size(pdt)
                             : NULL;
    fn(pool, c, s, lo, len, pipe->grad[k % 2], gdt, out, pdt);
    if (!params_host) {
      ZS_CHECK(zs_dev_copy(d, (char *)param_out + lo * zs_dtype_size(pdt), out,
                           len * zs_dtype_size(pdt), d->compute_stream));
      ZS_CHECK(zs_dev_event_record(d, pipe->ev_param[k % 2], d->compute_stream));
    }
  }
  /* The next call restarts at slot 0: its CPU writes must not overtake these copies. */
  if (!params_host)
    for (size_t k = nchunks > 2 ? nchunks - 2 : 0; k < nchunks; k++)
      ZS_CHECK(zs_dev_event_wait(d, pipe->ev_param[k % 2]));
  return ZS_OK;
}
