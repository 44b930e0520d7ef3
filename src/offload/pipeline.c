/* The offload copy pipeline: CPU update of host-resident optimizer state, with a chunked copy
 * pipeline on CUDA (gradients device->host on the comm stream, params host->device on the compute
 * stream). */
#include "offload/pipeline.h"

#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "base/host_charge.h"

size_t zs_offload_pipe_bytes(zs_device kind, size_t chunk) {
  if (kind != ZS_DEVICE_CUDA) return 0;
  const size_t b = chunk > SIZE_MAX / 4 ? SIZE_MAX : chunk * 4, c = zs_host_charge(b);
  return c > SIZE_MAX / 4 ? SIZE_MAX : 4 * c;
}

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
  /* No copy may read a slot after the arena takes it back (a step's end synchronised the compute
     stream already: then these return at once). */
  for (int k = 0; k < 2; k++)
    if (p->param_busy[k]) (void)zs_dev_event_wait(d, p->ev_param[k]);
  for (int k = 0; k < 2; k++) {
    if (p->grad[k]) zs_host_arena_free(a, p->grad[k]);
    if (p->param[k]) zs_host_arena_free(a, p->param[k]);
    zs_dev_event_destroy(d, p->ev_grad[k]);
    zs_dev_event_destroy(d, p->ev_param[k]);
    zs_dev_event_destroy(d, p->ev_param_in[k]);
  }
  memset(p, 0, sizeof *p);
}

/* Queues the device->host copy of chunk k's gradient into grad slot `slot` and, when params
   (device memory, dtype pdt; NULL: none) is set, of its params into param slot `slot` on the
   compute stream: there after every earlier write of them and after the host->device copy that
   last read the slot. */
static zs_status fetch_chunk(zs_dev *d, zs_offload_pipe *p, unsigned slot, const void *grad,
                             zs_dtype gdt, const void *params, zs_dtype pdt, size_t n, size_t k) {
  size_t lo = k * p->chunk, len = n - lo < p->chunk ? n - lo : p->chunk;
  ZS_CHECK(zs_dev_copy(d, p->grad[slot], (const char *)grad + lo * zs_dtype_size(gdt),
                       len * zs_dtype_size(gdt), d->comm_stream));
  ZS_CHECK(zs_dev_event_record(d, p->ev_grad[slot], d->comm_stream));
  if (!params) return ZS_OK;
  ZS_CHECK(zs_dev_copy(d, p->param[slot], (const char *)params + lo * zs_dtype_size(pdt),
                       len * zs_dtype_size(pdt), d->compute_stream));
  return zs_dev_event_record(d, p->ev_param_in[slot], d->compute_stream);
}

zs_status zs_offload_stream(zs_dev *d, zs_offload_pipe *pipe, zs_chunk_update_fn fn, void *ctx,
                            const void *grad, zs_dtype gdt, void *param_out, zs_dtype pdt,
                            int params_host, int params_in, size_t n) {
  if (n == 0) return ZS_OK;
  if (d->kind != ZS_DEVICE_CUDA) {
    fn(ctx, 0, n, grad, param_out);
    return ZS_OK;
  }
  const size_t nchunks = (n + pipe->chunk - 1) / pipe->chunk;
  /* Chunk k of this call uses slot (base + k) % 2: the parity goes on from the last call. */
  const unsigned base = pipe->next;
  /* The device params to stage in (read by the update): remainder and lean modes. */
  const void *pin = params_in && !params_host ? param_out : NULL;
  ZS_CHECK(fetch_chunk(d, pipe, base % 2, grad, gdt, pin, pdt, n, 0));
  for (size_t k = 0; k < nchunks; k++) {
    const size_t lo = k * pipe->chunk, len = n - lo < pipe->chunk ? n - lo : pipe->chunk;
    const unsigned sl = (unsigned)((base + k) % 2);
    if (k + 1 < nchunks) ZS_CHECK(fetch_chunk(d, pipe, sl ^ 1u, grad, gdt, pin, pdt, n, k + 1));
    ZS_CHECK(zs_dev_event_wait(d, pipe->ev_grad[sl]));
    if (pin) ZS_CHECK(zs_dev_event_wait(d, pipe->ev_param_in[sl]));
    /* The param slot's last host->device copy (chunk k - 2, or an earlier call's) read it: the
       CPU writes it only after that copy is done. */
    if (!params_host && pipe->param_busy[sl]) {
      ZS_CHECK(zs_dev_event_wait(d, pipe->ev_param[sl]));
      pipe->param_busy[sl] = 0;
    }
    /* Host params: written in place (none to write when they are the master). */
    void *out = !params_host ? pipe->param[sl]
                : param_out  ? (char *)param_out + lo * zs_dtype_size(pdt)
                             : NULL;
    fn(ctx, lo, len, pipe->grad[sl], out);
    if (!params_host) {
      ZS_CHECK(zs_dev_copy(d, (char *)param_out + lo * zs_dtype_size(pdt), out,
                           len * zs_dtype_size(pdt), d->compute_stream));
      ZS_CHECK(zs_dev_event_record(d, pipe->ev_param[sl], d->compute_stream));
      pipe->param_busy[sl] = 1;
    }
  }
  /* No wait for the last copies: the next call's CPU writes wait per slot (param_busy). */
  pipe->next = (unsigned)((base + nchunks) % 2);
  return ZS_OK;
}
