/* What every backend shares about the collective object (see coll_impl.h): allocation, the
 * broken state, dtype sizes and names. The dispatcher (coll.c) is above the backends; this file
 * is below them. */
#include <stdio.h>
#include <stdlib.h>

#include "comm/coll_impl.h"

/* Bytes of one element of dt (0 for an unknown dtype). */
size_t zs_cdt_size(zs_cdt dt) {
  switch (dt) {
  case ZS_CDT_F32:
    return 4;
  case ZS_CDT_BF16:
    return 2;
  case ZS_CDT_U64:
    return 8;
  case ZS_CDT_BYTE:
    return 1;
  }
  return 0;
}

/* Short name of a dtype for messages. */
const char *zs_cdt_name(zs_cdt dt) {
  switch (dt) {
  case ZS_CDT_F32:
    return "f32";
  case ZS_CDT_BF16:
    return "bf16";
  case ZS_CDT_U64:
    return "u64";
  case ZS_CDT_BYTE:
    return "byte";
  }
  return "unknown";
}

/* Allocates a coll; impl is attached by the backend. */
zs_status zs_coll_alloc(const zs_coll_ops *ops, const char *backend, zs_comm *comm,
                        zs_device device, int rank, int size, double timeout_s, zs_coll **out) {
  zs_coll *c = calloc(1, sizeof *c);
  if (!c) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory allocating a collective group");
  c->ops = ops;
  c->backend = backend;
  c->comm = comm;
  c->device = device;
  c->rank = rank;
  c->size = size;
  c->timeout_s = timeout_s;
  zs_sig_init(c);
  *out = c;
  return ZS_OK;
}

/* Frees the object only (its backend state is the backend's). */
void zs_coll_free(zs_coll *c) {
  if (!c) return;
  free(c->sig_buf);
  free(c);
}

/* Remembers the current error as the reason the coll is unusable. */
void zs_coll_mark_broken(zs_coll *c) {
  c->broken = 1;
  c->desync = 1;
  snprintf(c->broken_why, sizeof c->broken_why, "%s", zs_last_error());
}
