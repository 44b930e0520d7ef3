/* zs_comm_allreduce, the reduction of the caller's own host values, against a float64 reference
 * computed here from rank-seeded inputs (every rank regenerates every rank's values):
 *   (no argument, under mpirun -np 1..4)  the MPI bootstrap: f32/f64/i64 x sum/mean/max/min,
 *                                         in place and not, several counts, NaN and ties;
 *   --env        one process forking ranks 1..W-1 for W = 1..4 over the TCP rendezvous of the
 *                env bootstrap (zs_comm_env_make: zs_comm_init_env without its GPU check), and a
 *                silent peer there;
 *   --timeout    under mpirun -np 3: rank 1 stays silent, ranks 0 and 2 get ZS_ERR_TIMEOUT within
 *                the timeout + 5 s and ZS_ERR_COMM at once afterwards.
 * Results must equal the reference bit for bit on every rank. Argument errors, on every rank or on
 * one, and calls that differ across ranks are refused on every rank before any value moves, on
 * every path, and the next call still pairs. */
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "zs_test.h"
#include "test_free_port.h"

/* Monotonic seconds. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A 64-bit hash of (rank, index, salt): the rank-seeded input generator. */
static uint64_t mix(uint64_t r, uint64_t i, uint64_t salt) {
  uint64_t x = r * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull + salt * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd39ull;
  x ^= x >> 29;
  return x;
}

/* Values spanning 2^-12 .. 2^12 with both signs, so that the order and precision of the sum show
   in the last bits; every 7th element equal on all ranks (ties for max/min). */
static double value(int r, size_t i, int salt) {
  uint64_t h = mix((uint64_t)(i % 7 == 3 ? 0 : r), i, (uint64_t)salt);
  double mant = 1.0 + (double)(h & 0xfffffffffffffull) / 4503599627370496.0;
  int ex = (int)((h >> 52) % 25) - 12;
  return ((h >> 63) ? -1.0 : 1.0) * ldexp(mant, ex);
}

static int64_t ivalue(int r, size_t i) {
  return (int64_t)mix((uint64_t)r, i, 99); /* the whole range: sums wrap */
}

/* The reference of element i in float64, ranks in order. */
static double ref_float(int world, size_t i, int salt, int f32, zs_reduce_op op) {
  double acc = 0;
  for (int r = 0; r < world; r++) {
    double x = f32 ? (double)(float)value(r, i, salt) : value(r, i, salt);
    if (r == 0)
      acc = x;
    else if (op == ZS_RED_SUM || op == ZS_RED_MEAN)
      acc += x;
    else if (op == ZS_RED_MAX)
      acc = x > acc ? x : acc;
    else
      acc = x < acc ? x : acc;
  }
  return op == ZS_RED_MEAN ? acc / world : acc;
}

static int64_t ref_int(int world, size_t i, zs_reduce_op op) {
  uint64_t sum = 0;
  int64_t acc = ivalue(0, i);
  for (int r = 0; r < world; r++) {
    int64_t x = ivalue(r, i);
    sum += (uint64_t)x;
    if (op == ZS_RED_MAX && x > acc) acc = x;
    if (op == ZS_RED_MIN && x < acc) acc = x;
  }
  return op == ZS_RED_SUM ? (int64_t)sum : acc;
}

static const char *const op_name[] = {"sum", "mean", "max", "min"};

/* One reduction of count elements, checked bit for bit; in place when inplace. */
static void check_one(zs_comm *c, zs_host_dtype dt, zs_reduce_op op, size_t count, int inplace) {
  const int r = zs_comm_rank(c), w = zs_comm_size(c), salt = (int)dt * 10 + (int)op;
  const size_t es = dt == ZS_HOST_F32 ? 4 : 8;
  char *send = malloc(count * es + 1), *recv = inplace ? send : malloc(count * es + 1);
  for (size_t i = 0; i < count; i++) {
    if (dt == ZS_HOST_F32) ((float *)send)[i] = (float)value(r, i, salt);
    if (dt == ZS_HOST_F64) ((double *)send)[i] = value(r, i, salt);
    if (dt == ZS_HOST_I64) ((int64_t *)send)[i] = ivalue(r, i);
  }
  zs_status rc = zs_comm_allreduce(c, send, recv, count, dt, op);
  ZS_EXPECT(rc == ZS_OK, "rank %d: %s", r, zs_last_error());
  int bad = 0;
  for (size_t i = 0; rc == ZS_OK && i < count && bad < 3; i++) {
    int ok;
    if (dt == ZS_HOST_F32) {
      float want = (float)ref_float(w, i, salt, 1, op), got = ((float *)recv)[i];
      ok = memcmp(&want, &got, 4) == 0;
      if (!ok) fprintf(stderr, "  f32 %s [%zu]: %.9g want %.9g\n", op_name[op], i, got, want);
    } else if (dt == ZS_HOST_F64) {
      double want = ref_float(w, i, salt, 0, op), got = ((double *)recv)[i];
      ok = memcmp(&want, &got, 8) == 0;
      if (!ok) fprintf(stderr, "  f64 %s [%zu]: %.17g want %.17g\n", op_name[op], i, got, want);
    } else {
      int64_t want = ref_int(w, i, op), got = ((int64_t *)recv)[i];
      ok = want == got;
      if (!ok)
        fprintf(stderr, "  i64 %s [%zu]: %lld want %lld\n", op_name[op], i, (long long)got,
                (long long)want);
    }
    bad += !ok;
  }
  ZS_EXPECT(bad == 0, "rank %d of %d: dtype %d %s count %zu%s differs from the reference", r, w,
            (int)dt, op_name[op], count, inplace ? " in place" : "");
  free(send);
  if (!inplace) free(recv);
}

/* A NaN on one rank wins max and min everywhere. */
static void check_nan(zs_comm *c) {
  const int r = zs_comm_rank(c), w = zs_comm_size(c);
  float x[2] = {(float)r, r == w - 1 ? NAN : (float)r};
  float mx[2], mn[2];
  ZS_OK_OR_DIE(zs_comm_allreduce(c, x, mx, 2, ZS_HOST_F32, ZS_RED_MAX));
  ZS_OK_OR_DIE(zs_comm_allreduce(c, x, mn, 2, ZS_HOST_F32, ZS_RED_MIN));
  ZS_EXPECT(mx[0] == (float)(w - 1) && mn[0] == 0.0f && isnan(mx[1]) && isnan(mn[1]),
            "rank %d: max %g %g min %g %g", r, mx[0], mx[1], mn[0], mn[1]);
}

/* Refusals: made locally on every rank, no message sent (the later checks still match). */
static void check_args(zs_comm *c) {
  float a[4] = {1, 2, 3, 4}, b[4];
  int64_t n = 3;
  ZS_EXPECT_STATUS(zs_comm_allreduce(NULL, a, b, 4, ZS_HOST_F32, ZS_RED_SUM), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, NULL, b, 4, ZS_HOST_F32, ZS_RED_SUM), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, a, NULL, 4, ZS_HOST_F32, ZS_RED_SUM), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, a, b, 4, (zs_host_dtype)7, ZS_RED_SUM), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "ZS_HOST_F32") != NULL, "names the dtypes: %s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, a, b, 4, ZS_HOST_F32, (zs_reduce_op)9), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, &n, &n, 1, ZS_HOST_I64, ZS_RED_MEAN), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "ZS_RED_SUM") != NULL, "says what to do: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, a, a + 1, 3, ZS_HOST_F32, ZS_RED_SUM), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "overlap") != NULL, "names the overlap: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_comm_set_timeout(c, 0.0), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_comm_set_timeout(c, NAN), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_comm_set_timeout(NULL, 5.0), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_comm_allreduce(c, NULL, NULL, 0, ZS_HOST_F64, ZS_RED_SUM)); /* count 0 */
}

/* Calls that differ across ranks: one rank's refusal and a count, dtype or op of the last rank's
   own are ZS_ERR_INVALID_ARG on every rank, and the next call still pairs (its sum is right). */
static void check_divergent(zs_comm *c) {
  const int r = zs_comm_rank(c), W = zs_comm_size(c), last = r == W - 1;
  if (W < 2) return;
  double a[3] = {1, 2, 3}, b[3];
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, last ? NULL : a, b, 1, ZS_HOST_F64, ZS_RED_SUM),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), last ? "NULL with count" : "refused its arguments"), "%s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, a, b, last ? 2 : 1, ZS_HOST_F64, ZS_RED_SUM),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "the ranks' calls differ"), "%s", zs_last_error());
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, a, b, 1, last ? ZS_HOST_F32 : ZS_HOST_F64, ZS_RED_SUM),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, a, b, 1, ZS_HOST_F64, last ? ZS_RED_MAX : ZS_RED_SUM),
                   ZS_ERR_INVALID_ARG);
  double x = 1 + r, sum = 0;
  ZS_OK_OR_DIE(zs_comm_allreduce(c, &x, &sum, 1, ZS_HOST_F64, ZS_RED_SUM));
  ZS_EXPECT(sum == W * (W + 1) / 2.0, "after the refusals: sum %g, want %g", sum,
            W * (W + 1) / 2.0);
}

/* Every dtype x op x layout: the suite each rank runs on every path. */
static void check_all(zs_comm *c) {
  check_args(c);
  check_divergent(c);
  const size_t counts[] = {1, 5, 300000}; /* 300000 f64: 2.4 MB, several rendezvous chunks */
  for (int dt = 0; dt < 3; dt++)
    for (int op = 0; op < 4; op++)
      for (int k = 0; k < 3; k++) {
        if (dt == ZS_HOST_I64 && op == ZS_RED_MEAN) continue;
        if (k == 2 && op != ZS_RED_SUM) continue;
        check_one(c, (zs_host_dtype)dt, (zs_reduce_op)op, counts[k], k == 1);
      }
  check_nan(c);
}

static int reap(pid_t p) {
  int st = 0;
  if (waitpid(p, &st, 0) != p || !WIFEXITED(st)) return 99;
  return WEXITSTATUS(st);
}

/* W ranks over the env rendezvous: this process is rank 0, children the others. */
static void env_world(int world) {
  const int port = zs_test_free_port();
  pid_t kids[4];
  for (int k = 1; k < world; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      zs_comm *c = NULL;
      ZS_OK_OR_DIE(zs_comm_env_make(k, world, k, world, "127.0.0.1", port, &c));
      ZS_OK_OR_DIE(zs_comm_set_timeout(c, 30.0));
      check_all(c);
      zs_comm_destroy(c);
      _exit(zs_test_failures ? 1 : 0);
    }
  }
  zs_comm *c = NULL;
  if (world == 1) { /* the real bootstrap: WORLD_SIZE=1 needs no MASTER_* */
    setenv("WORLD_SIZE", "1", 1);
    setenv("RANK", "0", 1);
    ZS_OK_OR_DIE(zs_comm_init_env(&c));
  } else {
    ZS_OK_OR_DIE(zs_comm_env_make(0, world, 0, world, "127.0.0.1", port, &c));
  }
  ZS_OK_OR_DIE(zs_comm_set_timeout(c, 30.0));
  check_all(c);
  zs_comm_destroy(c);
  for (int k = 1; k < world; k++)
    ZS_EXPECT(reap(kids[k]) == 0, "env world %d: rank %d failed", world, k);
}

/* Env: rank 1 answers once, then stays silent past rank 0's 1 s timeout. */
static void env_timeout(void) {
  const int port = zs_test_free_port();
  pid_t kid = fork();
  if (kid == 0) {
    zs_comm *c = NULL;
    float x = 1.0f, y = 0.0f;
    ZS_OK_OR_DIE(zs_comm_env_make(1, 2, 1, 2, "127.0.0.1", port, &c));
    ZS_OK_OR_DIE(zs_comm_allreduce(c, &x, &y, 1, ZS_HOST_F32, ZS_RED_SUM));
    struct timespec ts = {2, 500000000L};
    nanosleep(&ts, NULL);
    zs_comm_destroy(c);
    _exit(y == 3.0f ? 0 : 1);
  }
  zs_comm *c = NULL;
  float x = 2.0f, y = 0.0f;
  ZS_OK_OR_DIE(zs_comm_env_make(0, 2, 0, 2, "127.0.0.1", port, &c));
  ZS_OK_OR_DIE(zs_comm_set_timeout(c, 1.0));
  ZS_OK_OR_DIE(zs_comm_allreduce(c, &x, &y, 1, ZS_HOST_F32, ZS_RED_SUM));
  double t0 = now();
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, &x, &y, 1, ZS_HOST_F32, ZS_RED_SUM), ZS_ERR_TIMEOUT);
  double dt = now() - t0;
  ZS_EXPECT(dt >= 0.95 && dt <= 1.0 + 3.0, "env: timed out after %.2f s", dt);
  ZS_EXPECT(strstr(zs_last_error(), "rank 1") != NULL, "names the silent rank: %s",
            zs_last_error());
  t0 = now();
  ZS_EXPECT_STATUS(zs_comm_allreduce(c, &x, &y, 1, ZS_HOST_F32, ZS_RED_SUM), ZS_ERR_COMM);
  ZS_EXPECT(now() - t0 < 0.5, "a broken comm answers at once");
  zs_comm_destroy(c);
  ZS_EXPECT(reap(kid) == 0, "env: rank 1's first reduction was wrong");
}

/* MPI, -np 3: ranks 0 and 2 time out on rank 1, which joins late with a long timeout: it
   completes their abandoned exchange, and its verdict is theirs (ZS_ERR_TIMEOUT, then broken). */
static void mpi_timeout(zs_comm *c) {
  const int r = zs_comm_rank(c);
  double x[3] = {1, 2, 3}, y[3];
  ZS_OK_OR_DIE(zs_comm_allreduce(c, x, y, 3, ZS_HOST_F64, ZS_RED_SUM));
  if (r != 1) {
    ZS_OK_OR_DIE(zs_comm_set_timeout(c, 2.0));
    double t0 = now();
    ZS_EXPECT_STATUS(zs_comm_allreduce(c, x, y, 3, ZS_HOST_F64, ZS_RED_SUM), ZS_ERR_TIMEOUT);
    double dt = now() - t0;
    ZS_EXPECT(dt >= 1.95 && dt <= 2.0 + 5.0, "rank %d timed out after %.2f s", r, dt);
    ZS_EXPECT(strstr(zs_last_error(), "zs_comm_allreduce") != NULL, "names the call: %s",
              zs_last_error());
    t0 = now();
    ZS_EXPECT_STATUS(zs_comm_allreduce(c, x, y, 3, ZS_HOST_F64, ZS_RED_SUM), ZS_ERR_COMM);
    ZS_EXPECT(now() - t0 < 0.5, "a broken comm answers at once");
  } else {
    struct timespec ts = {3, 500000000L};
    nanosleep(&ts, NULL);
    ZS_OK_OR_DIE(zs_comm_set_timeout(c, 30.0));
    ZS_EXPECT_STATUS(zs_comm_allreduce(c, x, y, 3, ZS_HOST_F64, ZS_RED_SUM), ZS_ERR_TIMEOUT);
    ZS_EXPECT(strstr(zs_last_error(), "rank 1 called") && strstr(zs_last_error(), "gave up"),
              "names the late rank: %s", zs_last_error());
    ZS_EXPECT_STATUS(zs_comm_allreduce(c, x, y, 3, ZS_HOST_F64, ZS_RED_SUM), ZS_ERR_COMM);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "--env")) {
    for (int w = 1; w <= 4; w++)
      env_world(w);
    env_timeout();
    if (!zs_test_failures) printf("test_comm_host_reduce --env: OK\n");
    ZS_TEST_END("test_comm_host_reduce");
  }
  zs_comm *c = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &c));
  if (!strcmp(mode, "--timeout"))
    mpi_timeout(c);
  else
    check_all(c);
  int r = zs_comm_rank(c);
  zs_comm_destroy(c);
  if (r == 0 && !zs_test_failures) printf("test_comm_host_reduce %s: OK\n", mode);
  ZS_TEST_END("test_comm_host_reduce");
}
