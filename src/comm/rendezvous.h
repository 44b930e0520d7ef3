/* Internal to src/comm: the TCP rendezvous of zs_comm_init_env. Rank 0 listens on
 * MASTER_PORT, every other rank connects to MASTER_ADDR:MASTER_PORT (retrying until the timeout),
 * and the sockets stay open so rank 0 can hand out a fresh 128-byte NCCL unique id per
 * communicator, and zs_comm_allreduce's host values (a user's logged losses) travel over them.
 * No engine data ever travels over it. */
#ifndef ZS_COMM_RENDEZVOUS_H
#define ZS_COMM_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

typedef struct zs_rdv zs_rdv;

/* Connects rank `rank` of `size` (size >= 2). Rank 0 binds port on every local address. Blocks
   until everybody is connected or timeout_s elapses (ZS_ERR_TIMEOUT naming who is missing). */
zs_status zs_rdv_open(const char *addr, int port, int rank, int size, double timeout_s,
                      zs_rdv **out);
/* Rank 0 sends len bytes of buf to every other rank; the others receive them into buf. */
zs_status zs_rdv_bcast(zs_rdv *r, void *buf, size_t len, double timeout_s);
/* zs_rdv_bcast of a message tagged `tag`: a rank expecting another tag or length fails with
   ZS_ERR_COMM (ranks making different calls), never mixes messages. len <= 1 MiB. */
zs_status zs_rdv_bcast_tag(zs_rdv *r, void *buf, size_t len, uint32_t tag, double timeout_s);
/* Rank 0 receives len bytes from every rank into all (rank i's at all + i * len, its own copied
   from send); the others send theirs. Same tag and len on every rank, len <= 1 MiB. */
zs_status zs_rdv_gather(zs_rdv *r, const void *send, void *all, size_t len, uint32_t tag,
                        double timeout_s);
/* Closes every socket. NULL is a no-op. */
void zs_rdv_close(zs_rdv *r);
/* One-shot convenience (used by tests): open, broadcast len bytes from rank 0, close. */
zs_status zs_rendezvous_exchange(const char *addr, int port, int rank, int size, void *buf,
                                 size_t len, double timeout_s);

#endif
