/* zs_comm_init_mpi never hangs on a rank that does not come (run at -np 2). The program initialises
 * MPI itself and sets ZS_COMM_TIMEOUT_S to 1.5 s. Rank 1 stalls before zs_comm_init_mpi (it waits
 * for a message rank 0 sends only after giving up), so rank 0's duplication of MPI_COMM_WORLD
 * must end in ZS_ERR_TIMEOUT after about 1.5 s (at most timeout + 20 s: a loaded 2-core machine),
 * with a message naming the step, the time and ZS_COMM_TIMEOUT_S; a second zs_comm_init_mpi is
 * then refused at once (ZS_ERR_STATE). Rank 1 then comes late: its duplication completes (rank 0's
 * abandoned one is its partner), but rank 0 never reaches the next step, so rank 1 too must end in
 * ZS_ERR_TIMEOUT, naming the arrival check before MPI_Comm_split_type. Both then meet in a barrier
 * of the program's own and finalise MPI. Before the bound existed rank 0 spun in MPI_Comm_dup
 * forever (and rank 1 waited for it): the test then fails by its ctest timeout. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zshard.h"
#include "zs_test.h"

#define TIMEOUT_S 1.5
#define SLACK_S 20.0 /* generous: ranks share two loaded cores with other jobs */

/* Monotonic seconds (the test's own clock). */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Checks one rank's timed-out init: status, no comm, bounded time, and a message that says what. */
static void check_timeout(int r, zs_status rc, const zs_comm *c, double dt, const char *step) {
  const char *m = zs_last_error();
  ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "rank %d: got %s (%s)", r, zs_status_str(rc), m);
  ZS_EXPECT(c == NULL, "rank %d: a comm was returned with an error", r);
  ZS_EXPECT(dt >= TIMEOUT_S - 0.05 && dt <= TIMEOUT_S + SLACK_S, "rank %d: returned after %.2f s",
            r, dt);
  ZS_EXPECT(strstr(m, "zs_comm_init_mpi") && strstr(m, step) && strstr(m, "1.5 s") &&
                strstr(m, "ZS_COMM_TIMEOUT_S"),
            "rank %d: the message does not name the step (%s), the time and the variable: %s", r,
            step, m);
  printf("rank %d after %.2f s: %s: %s\n", r, dt, zs_status_str(rc), m);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv); /* the program's own: MPI stays usable after zshard gave up */
  int r = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (r == 0) fprintf(stderr, "test_comm_boot_timeout needs exactly 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  setenv("ZS_COMM_TIMEOUT_S", "1.5", 1);
  zs_comm *c = NULL;
  int token = 0;
  if (r == 0) {
    double t0 = now();
    zs_status rc = zs_comm_init_mpi(&argc, &argv, &c);
    check_timeout(r, rc, c, now() - t0, "MPI_Comm_idup");
    ZS_EXPECT(strstr(zs_last_error(), "did not reach zs_comm_init_mpi") != NULL,
              "the message does not say a rank did not come: %s", zs_last_error());
    t0 = now();
    rc = zs_comm_init_mpi(&argc, &argv, &c);
    ZS_EXPECT(rc == ZS_ERR_STATE && now() - t0 < 1.0, "init after a timeout: %s after %.2f s (%s)",
              zs_status_str(rc), now() - t0, zs_last_error());
    MPI_Send(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD); /* rank 1 may come now */
  } else {
    MPI_Recv(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* the stall */
    double t0 = now();
    zs_status rc = zs_comm_init_mpi(&argc, &argv, &c);
    check_timeout(r, rc, c, now() - t0, "MPI_Comm_split_type");
  }
  /* Rank 0's barrier also progresses its abandoned MPI_Comm_idup, which rank 1's completes. */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  if (r == 0 && !zs_test_failures) printf("test_comm_boot_timeout: OK\n");
  ZS_TEST_END("test_comm_boot_timeout");
}
