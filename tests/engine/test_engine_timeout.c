/* A stuck peer: rank 1 stops calling the engine in the middle of a stage-3 forward. The other
 * ranks must get ZS_ERR_TIMEOUT within comm_timeout_s + 5 s (never hang), with a message naming
 * the operation, and the engine then refuses further steps with ZS_ERR_STATE. Rank 1 later makes
 * the gather: it completes the header exchange the others abandoned, learns that they gave up and
 * fails at once (ZS_ERR_TIMEOUT) without starting an all-gather nobody joins, so that every rank
 * shuts MPI down cleanly.
 * --diverge: rank 1 gathers u0 where the others gather u1; every rank gets ZS_ERR_COMM.
 * --commit: rank 1 comes to zs_engine_commit late; the others' commit times out, rank 1's fails.
 * With ZS_FLIGHT_DIR set (flight_test.sh), every rank's message must name its flight record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zs_test.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm);
  const double timeout = 2.0;
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.prefetch_units = 0;
  c.comm_timeout_s = timeout;
  zs_engine *e = NULL;
  zs_tensor_desc t[1] = {{"w", 1, {1000, 0, 0, 0}, 0}};
  zs_unit *u0 = NULL, *u1 = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "u0", 1, t, &u0));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "u1", 1, t, &u1));
  const char *flight = getenv("ZS_FLIGHT_DIR");
  char want[600] = "";
  if (flight) snprintf(want, sizeof want, "flight record: %s/flight-rank%d.json", flight, rank);
  if (argc > 1 && !strcmp(argv[1], "--commit")) {
    if (rank == 1) sleep((unsigned)timeout + 1);
    zs_status rc = zs_engine_commit(e);
    ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "rank %d: commit got %s (%s), want ZS_ERR_TIMEOUT", rank,
              zs_status_str(rc), zs_last_error());
    ZS_EXPECT(strstr(zs_last_error(), want) != NULL, "rank %d: no '%s' in: %s", rank, want,
              zs_last_error());
    zs_engine_destroy(e);
    zs_comm_destroy(comm);
    ZS_TEST_END("test_engine_timeout --commit");
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_OK_OR_DIE(zs_unit_gather(u0)); /* everyone takes part in the first gather */
  ZS_OK_OR_DIE(zs_unit_release(u0));
  if (argc > 1 && !strcmp(argv[1], "--diverge")) {
    zs_status rc = zs_unit_gather(rank == 1 ? u0 : u1);
    ZS_EXPECT(rc == ZS_ERR_COMM, "rank %d: got %s (%s), want ZS_ERR_COMM", rank, zs_status_str(rc),
              zs_last_error());
    ZS_EXPECT(strstr(zs_last_error(), want) != NULL, "rank %d: no '%s' in: %s", rank, want,
              zs_last_error());
    zs_engine_destroy(e);
    zs_comm_destroy(comm);
    ZS_TEST_END("test_engine_timeout --diverge");
  }
  if (rank == 1) {
    sleep((unsigned)timeout + 1); /* stuck: the others time out meanwhile */
    double t0 = now();
    zs_status rc = zs_unit_gather(u1); /* completes the header exchange the others abandoned */
    ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "late gather: got %s (%s), want ZS_ERR_TIMEOUT",
              zs_status_str(rc), zs_last_error());
    ZS_EXPECT(now() - t0 < 5.0, "late gather answered after %.2f s", now() - t0);
    ZS_EXPECT(strstr(zs_last_error(), "gave up") != NULL, "late gather: %s", zs_last_error());
    ZS_EXPECT(strstr(zs_last_error(), want) != NULL, "late gather: no '%s' in: %s", want,
              zs_last_error());
    ZS_EXPECT_STATUS(zs_engine_step(e, NULL), ZS_ERR_STATE);
  } else {
    double t0 = now();
    zs_status rc = zs_unit_gather(u1);
    double dt = now() - t0;
    ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "rank %d: got %s (%s), want ZS_ERR_TIMEOUT", rank,
              zs_status_str(rc), zs_last_error());
    ZS_EXPECT(dt <= timeout + 5.0, "rank %d: timed out after %.2f s (limit %.1f + 5)", rank, dt,
              timeout);
    ZS_EXPECT(dt >= timeout * 0.9, "rank %d: returned after %.2f s, before the timeout", rank, dt);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", zs_last_error());
    ZS_EXPECT(strstr(msg, "gather") != NULL, "message names the op: %s", msg);
    ZS_EXPECT(strstr(msg, want) != NULL, "rank %d: no '%s' in: %s", rank, want, msg);
    ZS_EXPECT_STATUS(zs_engine_step(e, NULL), ZS_ERR_STATE);
    ZS_EXPECT_STATUS(zs_engine_begin_step(e, 1), ZS_ERR_STATE);
    if (rank == 0) printf("test_engine_timeout: ZS_ERR_TIMEOUT after %.2f s: %s\n", dt, msg);
  }
  zs_engine_destroy(e);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_timeout");
}
