/* The rank divergence check: a header all-gathered before each collective and compared, so that
 * ranks making different collective calls fail together, naming the difference, instead of
 * pairing different operations (MPI_ERR_TRUNCATE, a hang, or silently wrong data).
 *
 * Why a separate exchange and not a header inside the data: all_gather and reduce_scatter move
 * the caller's buffers in place, so carrying a header would copy every message; a tiny
 * all-gather costs one latency, and since the data collective starts only after every rank has
 * seen the same header, data never pairs with a different operation. Every rank sees every
 * header, so all of them reach the same verdict in the same exchange and none is left waiting.
 *
 * A rank that arrives after its peers gave up (their comm_timeout_s passed) completes their
 * abandoned header exchange and fails at once instead of starting a data collective nobody will
 * join: then no rank keeps a stuck request and every rank can finalise MPI. The verdict is taken
 * from the exchanged words only (the latest rank's posting time against the earliest deadline,
 * both wall-clock), so every rank of the exchange reaches the same one; a skew of the hosts'
 * clocks only moves it, the timeouts stay.
 *
 * The nccl backend compares the same headers on the device instead (nccl_sig.c): the exchange is
 * queued ahead of the data, and a verdict that differs is read after the fact.
 *
 * Every header built is also folded into a running hash per group, whether or not it is
 * exchanged (ZS_COMM_CHECK=0): the engine compares the hashes at each step's agreement.
 *
 * A rank leaving an aborted or failed engine still takes part in one last exchange on every
 * group that is in step (zs_coll_goodbye): its peers' pending or next exchange pairs with it and
 * fails at once naming the abort, instead of waiting out comm_timeout_s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "base/clock.h"
#include "comm/coll_impl.h"

#define SIG_MAGIC 0x7a73686172647369ull /* "zshardsi": a header, not stray data */

/* ZS_COMM_CHECK: "0" turns the check off for a group opened outside an engine; unset or any
   other value, on (in every build type). An engine applies its zs_config.comm_check from commit
   on (zs_coll_set_check). */
static int check_wanted(void) {
  const char *s = zs_env("ZS_COMM_CHECK");
  return !(s && strcmp(s, "0") == 0);
}

void zs_sig_init(zs_coll *c) {
  c->sig_hash_on = c->size > 1;
  c->sig_on = (c->ops->exchange_post || c->ops->sig_enqueue) && c->size > 1 && check_wanted();
  c->sig_hash = 0x9e3779b97f4a7c15ull;
}

void zs_coll_set_check(zs_coll *c, int on) {
  if (c) c->sig_on = on && (c->ops->exchange_post || c->ops->sig_enqueue) && c->size > 1;
}

double zs_coll_check_seconds(const zs_coll *c) {
  return c ? c->sig_seconds : 0.0;
}

double zs_coll_op_seconds(const zs_coll *c) {
  return c ? c->op_seconds : 0.0;
}

uint64_t zs_coll_bus_bytes(const zs_coll *c) {
  return c ? c->bus_bytes : 0;
}

void zs_coll_set_sig_src(zs_coll *c, const zs_coll_sig_src *src) {
  if (c) c->sig_src = src;
}

void zs_coll_hash_pause(zs_coll *c, int paused) {
  if (c) c->sig_unhashed = paused != 0;
}

uint64_t zs_coll_sig_role_hash(const zs_coll *c) {
  return c && c->sig_hash_on ? c->sig_role_hash : 0;
}

uint64_t zs_coll_sig_hash(const zs_coll *c) {
  return c && c->sig_hash_on ? c->sig_hash : 0;
}

static const char *op_name(uint64_t op) {
  static const char *names[] = {"?",          "all_gather", "reduce_scatter", "all_reduce",
                                "all_to_all", "broadcast",  "barrier",        "split",
                                "check",      "abort"};
  return op < sizeof names / sizeof names[0] ? names[op] : "?";
}

/* "all_gather of 1024 f32 elements per rank, in zs_unit_gather('h1') in step 3 ...". */
static void describe(const zs_coll *c, const uint64_t *h, char *buf, size_t len) {
  const uint64_t op = h[2] & 0xff, dt = (h[2] >> 8) & 0xff, root1 = h[2] >> 16;
  int n = 0;
  if (h[0] != SIG_MAGIC) {
    snprintf(buf, len, "something that is not a zshard collective");
    return;
  }
  if (op == ZS_SIG_CHECK || op == ZS_SIG_BARRIER)
    n = snprintf(buf, len, "%s", op == ZS_SIG_CHECK ? "an agreement (no data)" : "a barrier");
  else if (op == ZS_SIG_SPLIT)
    n = snprintf(buf, len, "a split of the group");
  else if (op == ZS_SIG_ABORT)
    n = snprintf(buf, len, "a last exchange before leaving");
  else
    n = snprintf(buf, len, "%s of %llu %s elements%s", op_name(op), (unsigned long long)h[3],
                 zs_cdt_name((zs_cdt)dt), root1 ? " from a root" : "");
  if (n < 0 || (size_t)n >= len) return;
  if (c->sig_src && c->sig_src->describe) {
    char ctx[256];
    c->sig_src->describe(c->sig_src->owner, h + 4, ctx, sizeof ctx);
    snprintf(buf + n, len - (size_t)n, " in %s", ctx);
  }
}

/* Builds this rank's header for the next collective of c and folds it into the running hash. */
static void build(zs_coll *c, zs_sig_op op, size_t count, zs_cdt dt, int root, uint64_t *h) {
  memset(h, 0, ZS_SIG_WORDS * sizeof *h);
  h[0] = SIG_MAGIC;
  h[1] = c->sig_seq++;
  h[2] = (uint64_t)op | (uint64_t)dt << 8 | (uint64_t)(root + 1) << 16;
  h[3] = count;
  if (c->sig_src && c->sig_src->context) c->sig_src->context(c->sig_src->owner, h + 4);
  uint64_t *run = c->sig_unhashed ? &c->sig_role_hash : &c->sig_hash, x = *run;
  for (int i = 0; i < ZS_SIG_POSTED; i++) { /* the times are neither compared nor hashed */
    if (i == 1) /* nor the sequence: a running hash has the order already, and a paused */
      continue; /* stretch (zs_coll_hash_pause) leaves the numbers ahead */
    x = (x ^ h[i]) * 0x100000001b3ull;
    x ^= x >> 29;
  }
  *run = x;
}

zs_status zs_sig_diverged(const zs_coll *c, const uint64_t *mine, const uint64_t *theirs, size_t q,
                          int queued) {
  char what[640], other[640];
  describe(c, mine, what, sizeof what);
  describe(c, theirs, other, sizeof other);
  return zs_err(ZS_ERR_COMM,
                "ranks diverged at collective #%llu of a %d-rank %s group: this rank (%d) "
                "called %s; rank %zu called %s. Every rank must make the same collective "
                "calls in the same order; %s, but the group is unusable: destroy the engine and "
                "fix the program",
                (unsigned long long)mine[1], c->size, c->backend, c->rank, what, q, other,
                queued ? "the data collectives were already queued (their buffers may hold wrong "
                         "data)"
                       : "no data moved");
}

/* Copies h into this rank's row of the exchange buffer with its times and starts the exchange. */
static zs_status post(zs_coll *c, const uint64_t *h, const char *what) {
  const size_t W = (size_t)c->size, NW = ZS_SIG_WORDS;
  if (!c->sig_buf) {
    c->sig_buf = malloc(W * NW * sizeof(uint64_t));
    if (!c->sig_buf)
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the collective headers");
  }
  uint64_t *mine = c->sig_buf + (size_t)c->rank * NW;
  memcpy(mine, h, NW * sizeof *mine);
  const uint64_t t0 = zs_clock_wall_us();
  mine[ZS_SIG_POSTED] = t0;
  const double wait_us = c->timeout_s * 1e6; /* a timeout of years: no deadline (and no overflow) */
  mine[ZS_SIG_DEADLINE] = c->timeout_s > 0 && wait_us < 1e18 ? t0 + (uint64_t)wait_us : 0;
  return c->ops->exchange_post(c, c->sig_buf, NW, what);
}

/* Waits for the exchange and reads every rank's header: the same verdict on every rank. */
static zs_status verdict(zs_coll *c, const char *what) {
  const size_t W = (size_t)c->size, NW = ZS_SIG_WORDS;
  zs_status rc = c->ops->exchange_wait(c, c->sig_buf, what);
  if (rc == ZS_ERR_TIMEOUT) c->sig_buf = NULL; /* the backend keeps it until MPI lets go */
  if (rc != ZS_OK) return rc;
  const uint64_t *all = c->sig_buf, *mine = all + (size_t)c->rank * NW;
  if (mine[0] == SIG_MAGIC && (mine[2] & 0xff) == ZS_SIG_ABORT) return ZS_OK; /* leaving anyway */
  for (size_t q = 0; q < W; q++) {
    const uint64_t *h = all + q * NW;
    if ((int)q == c->rank || h[0] != SIG_MAGIC || (h[2] & 0xff) != ZS_SIG_ABORT) continue;
    char theirs[640];
    describe(c, h, theirs, sizeof theirs);
    return zs_err(ZS_ERR_COMM,
                  "%s (rank %d of a %d-rank %s group) cannot complete: rank %zu left the group "
                  "(%s, %s); the group is unusable: destroy the engine and look at rank %zu's "
                  "own error",
                  what, c->rank, c->size, c->backend, q, theirs,
                  h[3] == ZS_GOODBYE_ABORTED ? "its engine was aborted by zs_engine_abort"
                                             : "its engine had failed",
                  q);
  }
  const size_t cmp = ZS_SIG_POSTED * sizeof(uint64_t); /* every word before the times */
  for (size_t q = 0; q < W; q++) {
    const uint64_t *h = all + q * NW;
    if ((int)q != c->rank && memcmp(h, mine, cmp)) return zs_sig_diverged(c, mine, h, q, 0);
  }
  /* Same call everywhere; did a rank give up before the last one arrived? Only exchanged words
     decide (the latest posting time against the earliest deadline), so all ranks agree. */
  size_t late = 0, first = W;
  for (size_t q = 0; q < W; q++) {
    const uint64_t *h = all + q * NW;
    if (h[ZS_SIG_POSTED] > all[late * NW + ZS_SIG_POSTED]) late = q;
    if (h[ZS_SIG_DEADLINE] &&
        (first == W || h[ZS_SIG_DEADLINE] < all[first * NW + ZS_SIG_DEADLINE]))
      first = q;
  }
  if (first < W && all[late * NW + ZS_SIG_POSTED] > all[first * NW + ZS_SIG_DEADLINE])
    return zs_err(ZS_ERR_TIMEOUT,
                  "%s (rank %d of a %d-rank %s group): rank %zu gave up waiting for it %.1f s "
                  "before rank %zu arrived (its timeout passed); the group is unusable: destroy "
                  "it and end the job, or raise comm_timeout_s if rank %zu is only slow",
                  what, c->rank, c->size, c->backend, first,
                  (double)(all[late * NW + ZS_SIG_POSTED] - all[first * NW + ZS_SIG_DEADLINE]) *
                      1e-6,
                  late, late);
  return ZS_OK;
}

zs_status zs_sig_check(zs_coll *c, zs_sig_op op, size_t count, zs_cdt dt, int root, void *stream) {
  if (!c->sig_hash_on) return ZS_OK;
  uint64_t h[ZS_SIG_WORDS];
  build(c, op, count, dt, root, h);
  if (!c->sig_on) return ZS_OK;
  const double t0 = zs_clock_now_s();
  zs_status rc = ZS_OK;
  if (c->ops->sig_enqueue) {
    rc = c->ops->sig_enqueue(c, h, stream);
  } else {
    char what[640];
    describe(c, h, what, sizeof what);
    rc = post(c, h, what);
    if (rc == ZS_OK) rc = verdict(c, what);
  }
  c->sig_seconds += zs_clock_now_s() - t0;
  return rc;
}

zs_status zs_coll_goodbye(zs_coll *const *cs, int n, int reason) {
  enum { MAXG = 8 };
  char what[MAXG][640];
  int posted[MAXG] = {0};
  zs_status first = ZS_OK;
  char first_msg[1024] = "";
  /* Every group's exchange is started before any is waited for: peers may reach them in any
     order (a hybrid's shard group before its world). */
  for (int i = 0; i < n && i < MAXG; i++) {
    zs_coll *c = cs[i];
    if (!c || !c->sig_on || c->desync || !c->ops->exchange_post) continue;
    uint64_t h[ZS_SIG_WORDS];
    build(c, reason ? ZS_SIG_ABORT : ZS_SIG_CHECK, (size_t)reason, ZS_CDT_BYTE, -1, h);
    describe(c, h, what[i], sizeof what[i]);
    zs_status rc = post(c, h, what[i]);
    if (rc == ZS_OK) {
      posted[i] = 1;
    } else {
      zs_coll_mark_broken(c);
      if (first == ZS_OK) {
        first = rc;
        snprintf(first_msg, sizeof first_msg, "%s", zs_last_error());
      }
    }
  }
  for (int i = 0; i < n && i < MAXG; i++) {
    if (!posted[i]) continue;
    zs_status rc = verdict(cs[i], what[i]);
    if (rc == ZS_OK) continue;
    zs_coll_mark_broken(cs[i]);
    if (first == ZS_OK) {
      first = rc;
      snprintf(first_msg, sizeof first_msg, "%s", zs_last_error());
    }
  }
  return first == ZS_OK ? ZS_OK : zs_err(first, "%s", first_msg);
}
