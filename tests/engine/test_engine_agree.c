/* zs_engine_agree (src/engine/agree.c) on 3 or more ranks, called directly on a created engine:
 *  - every rank OK: ZS_OK everywhere, and zs_engine_agree_words fills every rank's words;
 *  - ranks 1 and W-1 fail with different statuses and messages: each keeps its own status and
 *    message; every other rank returns the caller's status with "<what>: rank 1<phrase>; 2 of W
 *    ranks failed";
 *  - one_status with no phrase (the checkpoints' form): the failing ranks return rank 1's status
 *    (each its own message), the others rank 1's status naming it with the default phrase;
 *  - msg NULL: a failing rank keeps zs_last_error() as it was at the call. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine/agree.h"
#include "zs_test.h"

static int rank, world;

/* Rank 1's and rank W-1's failures (their own messages); every other rank is OK. */
static zs_status outcome(const char **msg) {
  *msg = rank == 1 ? "rank one's own failure" : rank == world - 1 ? "the last rank's own" : NULL;
  return rank == 1 ? ZS_ERR_IO : rank == world - 1 ? ZS_ERR_CORRUPT : ZS_OK;
}

static void all_ok(zs_engine *e) {
  const zs_agree_text say = {.what = "op", .phrase = " broke", .theirs = ZS_ERR_STATE};
  ZS_EXPECT(zs_engine_agree(e, ZS_OK, NULL, &say) == ZS_OK, "rank %d: %s", rank, zs_last_error());
  const uint64_t words[2] = {(uint64_t)rank * 10, (uint64_t)rank * 10 + 1};
  uint64_t all[3 * 64] = {0};
  ZS_EXPECT(zs_engine_agree_words(e, ZS_OK, NULL, &say, words, 2, all) == ZS_OK, "rank %d: %s",
            rank, zs_last_error());
  for (int r = 0; r < world; r++)
    ZS_EXPECT(all[3 * r] == ZS_OK && all[3 * r + 1] == (uint64_t)r * 10 &&
                  all[3 * r + 2] == (uint64_t)r * 10 + 1,
              "rank %d: row %d is %llu %llu %llu", rank, r, (unsigned long long)all[3 * r],
              (unsigned long long)all[3 * r + 1], (unsigned long long)all[3 * r + 2]);
}

static void two_fail(zs_engine *e) {
  const char *msg;
  const zs_status mine = outcome(&msg);
  const zs_agree_text say = {.what = "op", .phrase = " broke", .theirs = ZS_ERR_STATE};
  const zs_status rc = zs_engine_agree(e, mine, msg, &say);
  char want[256];
  snprintf(want, sizeof want, "op: rank 1 broke; 2 of %d ranks failed", world);
  if (mine != ZS_OK)
    ZS_EXPECT(rc == mine && !strcmp(zs_last_error(), msg), "rank %d: %s: %s", rank,
              zs_status_str(rc), zs_last_error());
  else
    ZS_EXPECT(rc == ZS_ERR_STATE && !strcmp(zs_last_error(), want), "rank %d: %s: '%s', want '%s'",
              rank, zs_status_str(rc), zs_last_error(), want);
}

static void one_status(zs_engine *e) {
  const char *msg;
  const zs_status mine = outcome(&msg);
  const zs_agree_text say = {.what = "op", .one_status = 1};
  const zs_status rc = zs_engine_agree(e, mine, msg, &say);
  char want[256];
  snprintf(want, sizeof want,
           "op: rank 1 failed (%s; that rank's zs_last_error says why); 2 of %d ranks failed",
           zs_status_str(ZS_ERR_IO), world);
  ZS_EXPECT(rc == ZS_ERR_IO, "rank %d: %s, want rank 1's status everywhere", rank,
            zs_status_str(rc));
  const char *expect = mine != ZS_OK ? msg : want;
  ZS_EXPECT(!strcmp(zs_last_error(), expect), "rank %d: '%s', want '%s'", rank, zs_last_error(),
            expect);
}

static void last_error(zs_engine *e) {
  const zs_status mine = rank == 1 ? zs_engine_commit(NULL) : ZS_OK; /* sets the message */
  char own[256];
  snprintf(own, sizeof own, "%s", zs_last_error());
  const zs_agree_text say = {.what = "op", .phrase = " broke", .theirs = ZS_ERR_STATE};
  const zs_status rc = zs_engine_agree(e, mine, NULL, &say);
  if (rank == 1)
    ZS_EXPECT(rc == ZS_ERR_INVALID_ARG && !strcmp(zs_last_error(), own), "rank 1: %s: '%s'",
              zs_status_str(rc), zs_last_error());
  else
    ZS_EXPECT(rc == ZS_ERR_STATE && strstr(zs_last_error(), "op: rank 1 broke; 1 of "),
              "rank %d: %s: '%s'", rank, zs_status_str(rc), zs_last_error());
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  rank = zs_comm_rank(comm);
  world = zs_comm_size(comm);
  if (world < 3 || world > 64) {
    fprintf(stderr, "test_engine_agree: run it on 3 to 64 ranks\n");
    return 1;
  }
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.comm_timeout_s = 60;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  all_ok(e);
  two_fail(e);
  one_status(e);
  last_error(e);
  all_ok(e); /* the group is still in step */
  zs_engine_destroy(e);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_agree");
}
