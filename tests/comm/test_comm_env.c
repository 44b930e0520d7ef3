/* zs_comm_init_env and the TCP rendezvous, in one process plus forked children (no MPI):
 * missing or garbage variables are ZS_ERR_INVALID_ARG with a message naming the variable;
 * WORLD_SIZE=1 works and gives a one-rank "self" group on the CPU; a multi-rank env job asking for
 * CPU collectives gets ZS_ERR_UNSUPPORTED; 3 processes exchange a 128-byte id over the rendezvous;
 * a missing peer and a WORLD_SIZE mismatch are reported, not waited for forever. */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device/device.h"
#include "comm/comm.h"
#include "comm/rendezvous.h"
#include "zs_test.h"
#include "test_free_port.h"

/* Monotonic seconds. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Clears every variable the bootstrap reads. */
static void clear_env(void) {
  const char *v[] = {"RANK",        "WORLD_SIZE",  "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                     "MASTER_ADDR", "MASTER_PORT", "ZS_COMM"};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    unsetenv(v[i]);
}

/* init_env must fail with INVALID_ARG and a message containing word. */
static void expect_bad(const char *word) {
  zs_comm *c = (zs_comm *)1;
  ZS_EXPECT_STATUS(zs_comm_init_env(&c), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(c == NULL, "*out must be NULL on failure");
  ZS_EXPECT(strstr(zs_last_error(), word) != NULL, "message should name %s: %s", word,
            zs_last_error());
}

/* The id rank 0 hands out. */
static void fill_id(unsigned char *id) {
  for (int i = 0; i < 128; i++)
    id[i] = (unsigned char)(i * 37 + 11);
}

/* Waits for a child and returns its exit code (or 99 if it did not exit normally). */
static int reap(pid_t p) {
  int st = 0;
  if (waitpid(p, &st, 0) != p || !WIFEXITED(st)) return 99;
  return WEXITSTATUS(st);
}

/* Variables: missing, garbage, out of range. */
static void variables(void) {
  clear_env();
  expect_bad("WORLD_SIZE");
  setenv("WORLD_SIZE", "two", 1);
  expect_bad("WORLD_SIZE");
  setenv("WORLD_SIZE", "0", 1);
  expect_bad("WORLD_SIZE");
  setenv("WORLD_SIZE", "2", 1);
  expect_bad("RANK");
  setenv("RANK", "2", 1);
  expect_bad("RANK");
  setenv("RANK", "1x", 1);
  expect_bad("RANK");
  setenv("RANK", "1", 1);
  expect_bad("MASTER_ADDR");
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  expect_bad("MASTER_PORT");
  setenv("MASTER_PORT", "99999", 1);
  expect_bad("MASTER_PORT");
  setenv("MASTER_PORT", "29500", 1);
  setenv("LOCAL_RANK", "-1", 1);
  expect_bad("LOCAL_RANK");
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "no-such-host.invalid", 1);
  expect_bad("MASTER_ADDR");
  ZS_EXPECT_STATUS(zs_comm_init_env(NULL), ZS_ERR_INVALID_ARG);
}

/* WORLD_SIZE=1: no MASTER_* needed, a "self" group whose collectives are copies. */
static void single_rank(void) {
  clear_env();
  setenv("WORLD_SIZE", "1", 1);
  setenv("RANK", "0", 1);
  zs_comm *c = NULL;
  ZS_OK_OR_DIE(zs_comm_init_env(&c));
  ZS_EXPECT(zs_comm_rank(c) == 0 && zs_comm_size(c) == 1 && c->from_env == 1, "rank/size");
  zs_coll *g = NULL;
  ZS_OK_OR_DIE(zs_coll_open(c, ZS_DEVICE_CPU, 5.0, &g));
  ZS_EXPECT(!strcmp(zs_coll_backend(g), "self"), "backend %s", zs_coll_backend(g));
  float a[3] = {1.5f, -2.0f, 3.25f}, b[3] = {0};
  ZS_OK_OR_DIE(zs_coll_all_reduce(g, a, b, 3, ZS_CDT_F32, NULL));
  ZS_EXPECT(b[0] == 1.5f && b[1] == -2.0f && b[2] == 3.25f, "self all_reduce");
  memset(b, 0, sizeof b);
  ZS_OK_OR_DIE(zs_coll_all_gather(g, a, b, 3, ZS_CDT_F32, NULL));
  ZS_EXPECT(b[2] == 3.25f, "self all_gather");
  memset(b, 0, sizeof b);
  ZS_OK_OR_DIE(zs_coll_reduce_scatter(g, a, b, 3, ZS_CDT_F32, NULL));
  ZS_EXPECT(b[1] == -2.0f, "self reduce_scatter");
  memset(b, 0, sizeof b);
  ZS_OK_OR_DIE(zs_coll_all_to_all(g, a, b, 3, ZS_CDT_F32, NULL));
  ZS_EXPECT(b[0] == 1.5f, "self all_to_all");
  ZS_OK_OR_DIE(zs_coll_all_reduce(g, a, a, 3, ZS_CDT_F32, NULL));
  ZS_EXPECT(a[1] == -2.0f, "self all_reduce in place");
  ZS_OK_OR_DIE(zs_coll_broadcast(g, a, 3, ZS_CDT_F32, 0, NULL));
  ZS_EXPECT_STATUS(zs_coll_broadcast(g, a, 3, ZS_CDT_F32, 1, NULL), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_coll_barrier(g));
  zs_coll *s = NULL;
  ZS_OK_OR_DIE(zs_coll_split(g, 3, 0, &s));
  ZS_EXPECT(zs_coll_size(s) == 1 && zs_coll_rank(s) == 0, "self split");
  zs_coll_destroy(s);
  zs_coll_destroy(g);
  setenv("ZS_COMM", "mpi", 1);
  ZS_EXPECT_STATUS(zs_coll_open(c, ZS_DEVICE_CPU, 5.0, &g), ZS_ERR_UNSUPPORTED);
  unsetenv("ZS_COMM");
#ifndef ZS_HAVE_CUDA
  ZS_EXPECT_STATUS(zs_coll_open(c, ZS_DEVICE_CUDA, 5.0, &g), ZS_ERR_UNSUPPORTED);
#endif
  zs_comm_destroy(c);
}

/* A multi-rank env job cannot do CPU collectives: refused at once, no peer needed. */
static void cpu_multi_rank(void) {
  clear_env();
  setenv("WORLD_SIZE", "4", 1);
  setenv("RANK", "2", 1);
  setenv("LOCAL_RANK", "2", 1);
  setenv("MASTER_ADDR", "localhost", 1);
  setenv("MASTER_PORT", "29511", 1);
  zs_comm *c = NULL;
  if (zs_dev_cuda_count() == 0) {
    /* No GPU: these ranks could only use the CPU device, so init itself refuses. */
    ZS_EXPECT_STATUS(zs_comm_init_env(&c), ZS_ERR_UNSUPPORTED);
    ZS_EXPECT(strstr(zs_last_error(), "mpirun") != NULL, "message should say mpirun: %s",
              zs_last_error());
    ZS_EXPECT(c == NULL, "no comm on failure");
    return;
  }
  ZS_OK_OR_DIE(zs_comm_init_env(&c));
  ZS_EXPECT(zs_comm_rank(c) == 2 && zs_comm_size(c) == 4 && c->local_rank == 2, "rank/size");
  zs_coll *g = NULL;
  double t0 = now();
  ZS_EXPECT_STATUS(zs_coll_open(c, ZS_DEVICE_CPU, 5.0, &g), ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(strstr(zs_last_error(), "mpirun") != NULL, "message should say mpirun: %s",
            zs_last_error());
  ZS_EXPECT(now() - t0 < 1.0, "refusal took %.2f s", now() - t0);
  zs_comm_destroy(c);
}

/* Three processes: rank 0 hands a 128-byte id to ranks 1 and 2 (started before rank 0 listens, so
   their connect retries are exercised). */
static void rendezvous_ok(void) {
  int port = zs_test_free_port();
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      unsigned char id[128] = {0}, want[128];
      fill_id(want);
      zs_status rc = zs_rendezvous_exchange("127.0.0.1", port, k + 1, 3, id, sizeof id, 10.0);
      if (rc != ZS_OK) fprintf(stderr, "child rank %d: %s\n", k + 1, zs_last_error());
      _exit(rc != ZS_OK ? 1 : memcmp(id, want, sizeof id) ? 2 : 0);
    }
  }
  struct timespec ts = {0, 300000000L};
  nanosleep(&ts, NULL);
  unsigned char id[128];
  fill_id(id);
  ZS_OK_OR_DIE(zs_rendezvous_exchange(NULL, port, 0, 3, id, sizeof id, 10.0));
  for (int k = 0; k < 2; k++)
    ZS_EXPECT(reap(kids[k]) == 0, "rank %d did not receive the id intact", k + 1);
}

/* Nobody listening / nobody connecting: ZS_ERR_TIMEOUT after the timeout, naming who is missing. */
static void rendezvous_timeouts(void) {
  unsigned char id[128] = {0};
  int port = zs_test_free_port();
  double t0 = now();
  ZS_EXPECT_STATUS(zs_rendezvous_exchange("127.0.0.1", port, 1, 2, id, sizeof id, 0.5),
                   ZS_ERR_TIMEOUT);
  double dt = now() - t0;
  ZS_EXPECT(dt >= 0.45 && dt < 3.0, "connect gave up after %.2f s", dt);
  t0 = now();
  ZS_EXPECT_STATUS(zs_rendezvous_exchange(NULL, port, 0, 3, id, sizeof id, 0.5), ZS_ERR_TIMEOUT);
  dt = now() - t0;
  ZS_EXPECT(dt >= 0.45 && dt < 3.0, "accept gave up after %.2f s", dt);
  ZS_EXPECT(strstr(zs_last_error(), "missing: 1 2") != NULL, "message should list ranks: %s",
            zs_last_error());
}

/* A rank with another WORLD_SIZE is refused on both sides. */
static void rendezvous_mismatch(void) {
  int port = zs_test_free_port();
  pid_t kid = fork();
  if (kid == 0) {
    unsigned char id[128];
    zs_status rc = zs_rendezvous_exchange("127.0.0.1", port, 1, 3, id, sizeof id, 5.0);
    _exit(rc == ZS_ERR_INVALID_ARG ? 0 : 1);
  }
  unsigned char id[128];
  fill_id(id);
  ZS_EXPECT_STATUS(zs_rendezvous_exchange(NULL, port, 0, 2, id, sizeof id, 5.0),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "WORLD_SIZE") != NULL, "message: %s", zs_last_error());
  ZS_EXPECT(reap(kid) == 0, "the mismatched rank was not refused");
}

int main(void) {
  variables();
  single_rank();
  cpu_multi_rank();
  rendezvous_ok();
  rendezvous_timeouts();
  rendezvous_mismatch();
  clear_env();
  if (!zs_test_failures) printf("test_comm_env: OK\n");
  ZS_TEST_END("test_comm_env");
}
