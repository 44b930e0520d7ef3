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
 * abandoned header exchange, sees their deadlines in the past and fails at once instead of
 * starting a data collective nobody will join: then no rank keeps a stuck request and every
 * rank can finalise MPI. (Deadlines are wall-clock, so hosts' clocks must agree to well within
 * comm_timeout_s; a skew only moves this early verdict, the timeouts stay.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/coll_impl.h"

#define SIG_MAGIC 0x7a73686172647369ull /* "zshardsi": a header, not stray data */

/* ZS_COMM_CHECK: "0" turns the check off; anything else (or unset) keeps it on. */
static int check_wanted(void) {
  const char *s = getenv("ZS_COMM_CHECK");
  return !(s && !strcmp(s, "0"));
}

/* Wall-clock microseconds (comparable across the hosts of a job, unlike the monotonic clock). */
static uint64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void zs_sig_init(zs_coll *c) {
  c->sig_on = c->ops->exchange != NULL && c->size > 1 && check_wanted();
}

void zs_coll_set_sig_src(zs_coll *c, const zs_coll_sig_src *src) {
  if (c) c->sig_src = src;
}

static const char *op_name(uint64_t op) {
  static const char *names[] = {"?",          "all_gather", "reduce_scatter",
                                "all_reduce", "all_to_all", "broadcast",
                                "barrier",    "split",      "check"};
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

zs_status zs_sig_check(zs_coll *c, zs_sig_op op, size_t count, zs_cdt dt, int root) {
  if (!c->sig_on) return ZS_OK;
  const size_t W = (size_t)c->size, NW = ZS_SIG_WORDS;
  if (!c->sig_buf) {
    c->sig_buf = malloc(W * NW * sizeof(uint64_t));
    if (!c->sig_buf)
      return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the collective headers");
  }
  uint64_t *all = c->sig_buf, *mine = all + (size_t)c->rank * NW;
  memset(mine, 0, NW * sizeof *mine);
  mine[0] = SIG_MAGIC;
  mine[1] = c->sig_seq;
  mine[2] = (uint64_t)op | (uint64_t)dt << 8 | (uint64_t)(root + 1) << 16;
  mine[3] = count;
  if (c->sig_src && c->sig_src->context) c->sig_src->context(c->sig_src->owner, mine + 4);
  const uint64_t t0 = wall_us();
  mine[ZS_SIG_DEADLINE] = c->timeout_s > 0 ? t0 + (uint64_t)(c->timeout_s * 1e6) : 0;
  char what[640];
  describe(c, mine, what, sizeof what);
  zs_status rc = c->ops->exchange(c, all, NW, what);
  if (rc == ZS_ERR_TIMEOUT) c->sig_buf = NULL; /* the backend keeps it until MPI lets go */
  if (rc != ZS_OK) return rc;
  c->sig_seq++;
  const size_t cmp = ZS_SIG_DEADLINE * sizeof(uint64_t); /* every word before the deadline */
  for (size_t q = 0; q < W; q++) {
    const uint64_t *h = all + q * NW;
    if ((int)q == c->rank || !memcmp(h, mine, cmp)) continue;
    char theirs[640];
    describe(c, h, theirs, sizeof theirs);
    return zs_err(ZS_ERR_COMM,
                  "ranks diverged at collective #%llu of a %d-rank %s group: this rank (%d) "
                  "called %s; rank %zu called %s. Every rank must make the same collective "
                  "calls in the same order; no data moved, but the group is unusable: destroy "
                  "the engine and fix the program",
                  (unsigned long long)mine[1], c->size, c->backend, c->rank, what, q, theirs);
  }
  /* Same call everywhere; did a peer give up before this rank arrived? */
  const uint64_t now = wall_us();
  for (size_t q = 0; q < W; q++) {
    const uint64_t d = all[q * NW + ZS_SIG_DEADLINE];
    if ((int)q == c->rank || !d || now <= d) continue;
    return zs_err(ZS_ERR_TIMEOUT,
                  "%s (rank %d of a %d-rank %s group): rank %zu gave up waiting for it %.1f s "
                  "ago (its timeout passed before this rank arrived); the group is unusable: "
                  "destroy it and end the job, or raise comm_timeout_s if this rank is only slow",
                  what, c->rank, c->size, c->backend, q, (double)(now - d) * 1e-6);
  }
  return ZS_OK;
}
