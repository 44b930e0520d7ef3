/* The self backend: a group of one rank (zs_comm_init_env with WORLD_SIZE=1 on the CPU device).
 * Every collective is a copy (or nothing, in place). Host memory only. */
#include <stdlib.h>
#include <string.h>

#include "comm/coll_backends.h"

/* recv = send (one block). */
static zs_status s_all_gather(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  if (s != r) memmove(r, s, n * zs_cdt_size(dt));
  return ZS_OK;
}

/* The sum over one rank is the contribution itself. */
static zs_status s_all_reduce(zs_coll *c, const void *s, void *r, size_t n, zs_cdt dt,
                              void *stream) {
  if (s != r) memmove(r, s, n * zs_cdt_size(dt));
  return ZS_OK;
}

/* Nothing to send: the root is this rank. */
static zs_status s_broadcast(zs_coll *c, void *buf, size_t n, zs_cdt dt, int root, void *stream) {
  return ZS_OK;
}

/* Alone: nobody to wait for. */
static zs_status s_barrier(zs_coll *c) {
  return ZS_OK;
}

/* Copies are synchronous. */
static zs_status s_sync(zs_coll *c, void *stream) {
  return ZS_OK;
}

/* Any split of one rank is one rank. */
static zs_status s_split(zs_coll *c, int color, int key, zs_coll **out) {
  return zs_self_open(c->comm, c->device, c->timeout_s, out);
}

/* No state. */
static void s_destroy(zs_coll *c) {}

static const zs_coll_ops self_ops = {
    "self", s_all_gather, s_all_reduce, s_all_reduce, s_all_gather, s_broadcast, s_barrier,
    s_sync, s_split,      s_destroy,    NULL,         NULL,         NULL,        NULL};

/* A one-rank group. */
zs_status zs_self_open(zs_comm *comm, zs_device device, double timeout_s, zs_coll **out) {
  if (device != ZS_DEVICE_CPU)
    return zs_err(ZS_ERR_UNSUPPORTED, "the self backend moves host memory only: use nccl for the "
                                      "CUDA device");
  return zs_coll_alloc(&self_ops, "self", comm, device, 0, 1, timeout_s, out);
}
