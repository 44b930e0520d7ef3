/* A silent peer becomes ZS_ERR_TIMEOUT, never a hang (run at -np 3). Rank 1 sleeps while ranks 0
 * and 2 all-reduce with a 2 s timeout: they must fail with ZS_ERR_TIMEOUT after about 2 s (at most
 * timeout + 5 s), with a message naming the operation; the broken group then refuses every call at
 * once with ZS_ERR_COMM. Rank 1 finally wakes and calls the all-reduce: it completes the header
 * exchange ranks 0 and 2 abandoned (comm.h, divergence check), sees that they gave up, and fails at
 * once with ZS_ERR_TIMEOUT instead of starting an all-reduce nobody joins; the requests ranks 0
 * and 2 abandoned complete inside zs_coll_destroy, and every rank finalises cleanly. */
#include <mpi.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "zs_test.h"

#define TIMEOUT_S 2.0

/* Monotonic seconds (the test's own clock). */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  int r = zs_comm_rank(comm), n = zs_comm_size(comm);
  zs_coll *c = NULL;
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CPU, TIMEOUT_S, &c));
  ZS_OK_OR_DIE(zs_coll_barrier(c));
  /* These buffers stay alive until after zs_coll_destroy: MPI may still write them (comm.h). */
  float buf[5] = {0};
  for (int i = 0; i < 5; i++)
    buf[i] = (float)(r + 1) * (float)(i + 1);

  if (n < 2) {
    fprintf(stderr, "test_comm_timeout needs at least 2 ranks; nothing to test\n");
  } else if (r != 1) {
    double t0 = now();
    zs_status rc = zs_coll_all_reduce(c, buf, buf, 5, ZS_CDT_F32, NULL);
    double dt = now() - t0;
    ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "rank %d: got %s (%s)", r, zs_status_str(rc), zs_last_error());
    ZS_EXPECT(dt >= TIMEOUT_S - 0.05 && dt <= TIMEOUT_S + 5.0, "rank %d: timed out after %.2f s", r,
              dt);
    ZS_EXPECT(strstr(zs_last_error(), "all_reduce") != NULL, "message does not name the op: %s",
              zs_last_error());
    if (r == 0) printf("rank 0 after %.2f s: %s: %s\n", dt, zs_status_str(rc), zs_last_error());
    t0 = now();
    rc = zs_coll_all_reduce(c, buf, buf, 5, ZS_CDT_F32, NULL);
    dt = now() - t0;
    ZS_EXPECT(rc == ZS_ERR_COMM, "broken group: got %s", zs_status_str(rc));
    ZS_EXPECT(dt < 0.5, "broken group answered after %.2f s", dt);
    ZS_EXPECT(strstr(zs_last_error(), "timed out") != NULL, "message does not say why: %s",
              zs_last_error());
    ZS_EXPECT_STATUS(zs_coll_barrier(c), ZS_ERR_COMM);
    zs_coll *sub = NULL;
    ZS_EXPECT_STATUS(zs_coll_split(c, 0, r, &sub), ZS_ERR_COMM);
  } else {
    struct timespec ts = {3, 500000000L}; /* TIMEOUT_S + 1.5 s: the others have given up by now */
    nanosleep(&ts, NULL);
    zs_coll_set_timeout(c, 30.0);
    double t0 = now();
    zs_status rc = zs_coll_all_reduce(c, buf, buf, 5, ZS_CDT_F32, NULL);
    double dt = now() - t0;
    ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "late rank: got %s (%s)", zs_status_str(rc), zs_last_error());
    ZS_EXPECT(dt < 5.0, "late rank answered after %.2f s", dt);
    ZS_EXPECT(strstr(zs_last_error(), "gave up") && strstr(zs_last_error(), "all_reduce"),
              "late rank's message does not say the peers gave up: %s", zs_last_error());
    ZS_EXPECT(buf[0] == 2.0f, "the late rank's buffer changed: %g", buf[0]);
  }
  double t0 = now();
  zs_coll_destroy(c); /* ranks 0 and 2: their abandoned header exchange completed with rank 1 */
  ZS_EXPECT(now() - t0 < 10.0, "destroy took %.1f s", now() - t0);
  zs_comm_destroy(comm);
  if (r == 0 && !zs_test_failures) printf("test_comm_timeout: OK\n");
  ZS_TEST_END("test_comm_timeout");
}
