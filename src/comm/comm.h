/* Internal collective interface. The engine (src/engine, src/shard) talks to peers only through
 * these calls; backends live beside this file: mpi (host memory, device memory staged through
 * pinned host buffers) and nccl (device memory, one rank per GPU).
 *
 * Semantics shared by every backend:
 *  - counts are in elements of `dt`; all_gather / reduce_scatter / all_to_all take the count of
 *    ONE rank's block (equal blocks), all_reduce / broadcast the whole count.
 *  - in place is allowed where MPI/NCCL define it: all_gather with send == recv + rank*count,
 *    reduce_scatter with recv == send + rank*count, all_reduce with send == recv.
 *  - `stream` is the cudaStream_t the op is ordered on for device buffers, NULL for host buffers.
 *    mpi: the call returns when the op is complete (it syncs the stream first when staging).
 *    nccl: the op is enqueued on `stream`; zs_coll_sync(stream) waits with the timeout.
 *  - every wait polls against the coll's timeout: a silent peer gives ZS_ERR_TIMEOUT naming the
 *    operation; the coll is then broken and later calls return ZS_ERR_COMM at once.
 *  - reductions are sums; the order of a sum is backend-defined (the engine builds ordered,
 *    deterministic reductions from all_to_all plus a local ordered sum). bf16 sums add in float and
 *    round to nearest even after each pairwise step. ZS_CDT_BYTE cannot be reduced
 *    (ZS_ERR_INVALID_ARG); u64 sums wrap modulo 2^64.
 *  - count 0 is a valid no-op (every rank must pass 0; buffers may then be NULL). Buffers that
 *    overlap in any way other than the in-place patterns above give ZS_ERR_INVALID_ARG.
 *  - after an in-place reduce_scatter, the blocks of send other than this rank's are unspecified.
 *  - mpi: block counts above INT_MAX elements give ZS_ERR_UNSUPPORTED (split the bucket).
 *  - a timed-out MPI collective cannot be cancelled: its request stays in the coll and MPI may
 *    still write the caller's buffers of that op until zs_coll_destroy returns (destroy waits a
 *    few seconds, ZS_COMM_DRAIN_S, default 5, for the peers, then leaks the request). Keep those
 *    buffers alive until then. Destroy every coll before zs_comm_destroy.
 *  - backends: "mpi" (host memory, zs_comm_init_mpi), "mpi-staged" (device memory through pinned
 *    host memory), "nccl" (device memory), "self" (host memory, one rank from zs_comm_init_env).
 *    zs_coll_split works on every backend; colors must be >= 0.
 */
#ifndef ZS_COMM_COMM_H
#define ZS_COMM_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "zshard.h"

typedef enum { ZS_CDT_F32 = 0, ZS_CDT_BF16, ZS_CDT_U64, ZS_CDT_BYTE } zs_cdt;
size_t zs_cdt_size(zs_cdt dt);

typedef struct zs_coll zs_coll;

/* Rank divergence check. Before each collective (and each zs_coll_check) the ranks of a group
   all-gather a header: a sequence number, the operation, count, dtype and root, and ZS_SIG_CTX
   words of the owner's context (which public call, which unit, the unit a gather moves and
   whether it prefetches, the state array it moves, which step). When the headers
   differ, the collective fails on every rank of the group with ZS_ERR_COMM before any data moves,
   naming what this rank called and what the first differing rank called; the group is broken,
   and no MPI request is left pending (every rank leaves through the same exchange). On nccl the
   headers are compared on the device, queued ahead of the data (nccl_sig.h): the failure comes
   at the next call or wait on the group or on another nccl group of the same comm, after the
   data collective was queued. From zs_coll_open on, in every build type, unless ZS_COMM_CHECK=0
   (an engine then applies its config's comm_check: zs_coll_set_check); self does not check (one
   rank). Every header is also built and folded into the group's running hash
   (zs_coll_sig_hash, or while paused zs_coll_sig_role_hash) whether it is exchanged or not. */
#define ZS_SIG_CTX 3
typedef struct zs_coll_sig_src {
  /* Fills the owner's context words at the moment a header is built. */
  void (*context)(const void *owner, uint64_t w[ZS_SIG_CTX]);
  /* Writes a description of context words (this rank's or a peer's) for messages. */
  void (*describe)(const void *owner, const uint64_t w[ZS_SIG_CTX], char *buf, size_t len);
  const void *owner;
} zs_coll_sig_src;

/* The public handle (see zshard.h). Fields are read by the engine; only src/comm writes them. */
struct zs_comm {
  int rank, size;             /* world */
  int local_rank, local_size; /* ranks on this host */
  int mpi_initialized_here;   /* zs_comm_destroy finalises MPI iff set */
  int from_env;               /* bootstrapped by zs_comm_init_env (no MPI) */
  /* The process that started this rank (mpirun, orted/prted, slurmstepd: the parent at
     zs_comm_init_mpi when a launcher's variables are set), whose death means the job is over;
     0: none known (a singleton, the env bootstrap). */
  int launcher_pid;
  void *impl; /* backend bootstrap state (MPI_Comm dup, rendezvous socket, ...) */
};

/* 1 when c was started by a launcher that has since died (its parent changed), else 0: a rank
   that goes on after that trains for nobody (mpirun killed: the job is over). */
int zs_comm_launcher_gone(const zs_comm *c);
/* The bound on c's own waits (zs_comm_set_timeout's; c and its impl not NULL). */
double zs_comm_timeout(const zs_comm *c);

/* The communicator zs_comm_init_env makes once its variables are read, without its GPU check
   (the tests run the env paths, such as zs_comm_allreduce over the rendezvous, on machines
   without a GPU). addr (MASTER_ADDR) and port are used when size > 1. */
zs_status zs_comm_env_make(int rank, int size, int lrank, int lsize, const char *addr, int port,
                           zs_comm **out);

/* Opens the world collective for buffers of `device` (ZS_DEVICE_CPU: host memory;
   ZS_DEVICE_CUDA: device memory of the current CUDA device). Backend choice: env ZS_COMM=mpi|nccl
   if set; else nccl for CUDA when built with NCCL, else mpi. timeout_s > 0 bounds every wait. */
zs_status zs_coll_open(zs_comm *c, zs_device device, double timeout_s, zs_coll **out);
/* Splits into sub-groups: ranks with equal color form a group, ordered by key. */
zs_status zs_coll_split(zs_coll *c, int color, int key, zs_coll **out);
void zs_coll_destroy(zs_coll *c);
/* Marks c broken (later calls fail with ZS_ERR_COMM) and ends its in-flight device work (nccl:
   ncclCommAbort, so kernels stuck waiting for a silent peer exit). For a wait outside the comm
   layer that timed out. NULL is a no-op. */
void zs_coll_abort(zs_coll *c);
int zs_coll_rank(const zs_coll *c);
int zs_coll_size(const zs_coll *c);
const char *zs_coll_backend(const zs_coll *c); /* "mpi", "mpi-staged", "nccl" */
void zs_coll_set_timeout(zs_coll *c, double timeout_s);
/* Attaches the owner's context to c's headers (src must outlive c; NULL detaches). */
void zs_coll_set_sig_src(zs_coll *c, const zs_coll_sig_src *src);
/* Calls fn(ctx, stream, 0) just before each data collective of c is put on a non-NULL stream
   and fn(ctx, stream, 1) just after (the owner's GPU timing); NULL detaches. */
void zs_coll_set_timer(zs_coll *c, void (*fn)(void *ctx, void *stream, int end), void *ctx);
/* A header exchange without data: every rank of c agrees that it made the same calls so far and
   is at the same call now (the owner's context). ZS_ERR_COMM on a difference (group broken),
   ZS_ERR_TIMEOUT when a peer never comes; ZS_OK at once when the check is off. */
zs_status zs_coll_check(zs_coll *c);
/* Why a rank leaves its groups (zs_coll_goodbye): 0 a healthy destroy. */
#define ZS_GOODBYE_ABORTED 1 /* zs_engine_abort was called */
#define ZS_GOODBYE_FAILED 2  /* the owner failed on an earlier error */
/* The last header exchange on each of the n groups (NULL entries skipped) that is still in step
   (not broken by an error; zs_coll_abort alone keeps it in step): all are started before any is
   waited for. reason 0: an agreement like zs_coll_check (a peer elsewhere fails both). Else the
   peers' exchange pairing with it fails at once with ZS_ERR_COMM naming the reason, and this
   rank's verdict is OK. The first failure's status and message are returned; failed groups are
   broken. A no-op where the check is off (zs_coll_set_check, ZS_COMM_CHECK=0, nccl, self). */
zs_status zs_coll_goodbye(zs_coll *const *cs, int n, int reason);
/* The running hash of every collective header built on c (whether exchanged or not: also with
   the check off and on nccl) outside zs_coll_hash_pause, equal on the ranks of a group that made
   the same calls; 0 for NULL or a one-rank group. */
uint64_t zs_coll_sig_hash(const zs_coll *c);
/* While paused, c's collectives are checked as ever (the header exchange, where it is on) but
   folded into a second running hash (zs_coll_sig_role_hash) instead of zs_coll_sig_hash: calls
   that some groups of one kind make and others do not, by a plan every rank agreed on (the whole
   step's joins over tp, made by the owner's tp group alone). Every rank of the group must pause
   and resume between the same two collectives. Does not nest. */
void zs_coll_hash_pause(zs_coll *c, int paused);
/* The running hash of the headers built on c while paused: equal on the ranks of a group that
   made the same paused calls, so compared within the group only; 0 for NULL or one rank. */
uint64_t zs_coll_sig_role_hash(const zs_coll *c);
/* Turns the header exchange of c on or off (it stays off where the backend has none or c has one
   rank). Every rank of the group must do the same between the same two collectives. */
void zs_coll_set_check(zs_coll *c, int on);
/* Wall seconds c has spent in header exchanges (0 for NULL). */
double zs_coll_check_seconds(const zs_coll *c);
/* Wall seconds the calling thread has spent inside c's operations and syncs, header exchanges
   not included (0 for NULL): the communication it waited for (a host backend's operations block;
   nccl's enqueue at once and are waited for in zs_coll_sync). */
double zs_coll_op_seconds(const zs_coll *c);
/* Bytes c's operations called so far move per rank on a ring, nccl-tests' "bus" bytes (0 for
   NULL or one rank): all-gather, reduce-scatter and all-to-all (n - 1) / n of the whole buffer,
   all-reduce twice that, broadcast the buffer. Counted at the call, whether it then succeeds. */
uint64_t zs_coll_bus_bytes(const zs_coll *c);

zs_status zs_coll_all_gather(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                             void *stream);
zs_status zs_coll_reduce_scatter(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                                 void *stream);
zs_status zs_coll_all_reduce(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                             void *stream);
/* Block j of send goes to rank j; block i of recv comes from rank i. Not in place. */
zs_status zs_coll_all_to_all(zs_coll *c, const void *send, void *recv, size_t count, zs_cdt dt,
                             void *stream);
zs_status zs_coll_broadcast(zs_coll *c, void *buf, size_t count, zs_cdt dt, int root, void *stream);
zs_status zs_coll_barrier(zs_coll *c);
/* Waits until every op enqueued on stream is complete (nccl), with the timeout. No-op for mpi. */
zs_status zs_coll_sync(zs_coll *c, void *stream);

#endif
