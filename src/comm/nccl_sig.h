/* The divergence check of the nccl backend (docs/COLLECTIVES.md §2). Each collective's header
 * (sig.c) is all-gathered over the same communicator and compared on the device, queued ahead
 * of the data on the caller's stream, so the check adds no host wait. Each verdict lands in
 * mapped host memory; they are read at the next check, while zs_coll_sync waits, and before a
 * timeout is reported. The data collective is queued before its verdict lands, so a divergence
 * may move wrong data or leave NCCL stuck; the first verdict that differs ends the wait at once,
 * names both calls, and the backend aborts the communicator.
 *
 * Headers go to a ring of slots (device rows for the all-gather, host verdicts): a check waits
 * for the verdict of the one a ring back before it reuses its slot, so at most `slots` checks
 * are in flight. */
#ifndef ZS_COMM_NCCL_SIG_H
#define ZS_COMM_NCCL_SIG_H

#include <nccl.h>
#include <stdint.h>

#include "comm/coll_impl.h"

typedef struct zs_nsig zs_nsig;

/* The ring for this rank of a size-rank group; its device rows are allocated on stream and
   ready when this returns. */
zs_status zs_nsig_open(int rank, int size, void *stream, zs_nsig **out);
/* Frees s once every verdict has landed (waits up to drain_s); a group whose checks never
   finished (broken) leaves its rows and verdicts allocated: a kernel may still use them. The
   verdicts' pinned memory is kept for the next group (nccl_sig.c's pool), never freed. */
void zs_nsig_close(zs_nsig *s, void *stream, double drain_s);
/* Starts the check of header h (ZS_SIG_WORDS words) on stream: reads the verdicts that have
   landed, waits for its slot (c's timeout, polling comm), and queues this rank's row. The caller
   queues the in-place all-gather of ZS_SIG_WORDS u64 from *send into *recv on stream, then
   zs_nsig_end. */
zs_status zs_nsig_begin(zs_nsig *s, const zs_coll *c, ncclComm_t comm, const uint64_t *h,
                        void *stream, void **send, void **recv);
/* Queues the comparison whose verdict lands in the slot zs_nsig_begin took. */
zs_status zs_nsig_end(zs_nsig *s, void *stream);
/* ZS_ERR_COMM naming both calls if a verdict that landed differs: in order up to the first still
   running, or (every) each one that landed. ZS_OK otherwise. */
zs_status zs_nsig_poll(zs_nsig *s, const zs_coll *c, int every);

#endif
