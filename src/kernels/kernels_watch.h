/* The hook through which an engine bounds the host waits of a kernel context (zs_k_watch in
 * include/zshard_kernels.h): internal, set only by kernels_watch.c. */
#ifndef ZS_KERNELS_KERNELS_WATCH_H
#define ZS_KERNELS_KERNELS_WATCH_H

#include "zshard_kernels.h"

/* From now on zs_k_sync and host copies of k poll for at most timeout_s (<= 0: unbounded);
   on a timeout they call on_timeout(ctx) and return ZS_ERR_TIMEOUT. on_timeout may be NULL. */
void zs_k_set_watch(zs_kernels *k, double timeout_s, void (*on_timeout)(void *ctx), void *ctx);

#endif
