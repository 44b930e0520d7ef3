/* NUMA-bound worker pool: the parallel-for runs every item exactly once, workers run at the same
 * time, each worker's affinity (sched_getaffinity) is a subset of its node's CPUs, runs from two
 * threads at once do not mix, and bad arguments are refused. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "offload/worker_pool.h"
#include "zs_test.h"

/* Parses a Linux cpulist ("0-3,8") into set; 0 on success. */
static int parse_cpulist(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  while (*s && *s != '\n') {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s) return -1;
    if (*end == '-') b = strtol(end + 1, &end, 10);
    for (long c = a; c <= b && c < CPU_SETSIZE; c++)
      CPU_SET((int)c, set);
    s = *end == ',' ? end + 1 : end;
  }
  return 0;
}

/* The node's CPUs as the kernel lists them. */
static int node_cpus(int node, cpu_set_t *set) {
  char path[96], buf[4096] = {0};
  snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return parse_cpulist(buf, set);
}

typedef struct {
  atomic_int *hits;
  int nworkers;
  atomic_int bad_worker;
} count_ctx;

/* Counts each item. */
static void count_item(void *ctx, size_t item, int worker) {
  count_ctx *c = ctx;
  atomic_fetch_add(&c->hits[item], 1);
  if (worker < 0 || worker >= c->nworkers) atomic_store(&c->bad_worker, 1);
}

/* Runs n items and checks each ran once. */
static void check_cover(zs_pool *p, size_t n) {
  count_ctx c = {calloc(n ? n : 1, sizeof(atomic_int)), zs_pool_size(p), 0};
  ZS_OK_OR_DIE(zs_pool_run(p, n, count_item, &c));
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++)
    wrong += atomic_load(&c.hits[i]) != 1;
  ZS_EXPECT(wrong == 0, "n=%zu: %zu items not run exactly once", n, wrong);
  ZS_EXPECT(!atomic_load(&c.bad_worker), "n=%zu: worker index out of range", n);
  free(c.hits);
}

typedef struct {
  int n;
  atomic_int arrived;
  atomic_int timeout, outside, seen_mask;
  cpu_set_t allowed;
} rendezvous_ctx;

/* Every item waits until all n items have started (so each worker holds exactly one), then
   checks the worker's own affinity against the node's CPUs. */
static void rendezvous_item(void *ctx, size_t item, int worker) {
  rendezvous_ctx *c = ctx;
  atomic_fetch_add(&c->arrived, 1);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (atomic_load(&c->arrived) < c->n) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 10) {
      atomic_store(&c->timeout, 1);
      break;
    }
    sched_yield();
  }
  cpu_set_t mine, both;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) atomic_store(&c->outside, 1);
  CPU_AND(&both, &mine, &c->allowed);
  if (!CPU_EQUAL(&both, &mine)) atomic_store(&c->outside, 1);
  atomic_fetch_or(&c->seen_mask, 1 << (worker & 30));
}

/* Workers bound to the caller's node (default size = the node's cores). */
static void test_bound(void) {
  zs_pool *p;
  ZS_OK_OR_DIE(zs_pool_create(0, ZS_POOL_CALLER_NODE, &p));
  int node = zs_pool_node(p);
  printf("pool: %s\n", zs_pool_info(p));
  ZS_EXPECT(node >= 0 && zs_pool_size(p) >= 1, "node %d size %d", node, zs_pool_size(p));
  cpu_set_t sys, pool_cpus, both;
  ZS_EXPECT(node_cpus(node, &sys) == 0, "cannot read node %d's cpulist", node);
  ZS_EXPECT(parse_cpulist(zs_pool_cpulist(p), &pool_cpus) == 0 && CPU_COUNT(&pool_cpus) > 0,
            "pool cpulist \"%s\"", zs_pool_cpulist(p));
  CPU_AND(&both, &pool_cpus, &sys);
  ZS_EXPECT(CPU_EQUAL(&both, &pool_cpus), "pool CPUs %s are not all on node %d", zs_pool_cpulist(p),
            node);
  ZS_EXPECT(zs_pool_size(p) <= CPU_COUNT(&pool_cpus), "%d workers for %d CPUs (one per core)",
            zs_pool_size(p), CPU_COUNT(&pool_cpus));

  rendezvous_ctx r = {.n = zs_pool_size(p)};
  r.allowed = sys;
  ZS_OK_OR_DIE(zs_pool_run(p, (size_t)r.n, rendezvous_item, &r));
  ZS_EXPECT(!atomic_load(&r.timeout), "workers did not all run at once");
  ZS_EXPECT(!atomic_load(&r.outside), "a worker's affinity leaves node %d", node);

  const size_t ns[] = {0, 1, 2, 3, 17, 1000, 100003};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
    check_cover(p, ns[i]);
  for (int i = 0; i < 3000; i++)
    check_cover(p, (size_t)(i % 5)); /* many short runs */
  zs_pool_destroy(p);
}

static void *run_from_thread(void *arg) {
  for (int i = 0; i < 200; i++)
    check_cover(arg, 5000);
  return NULL;
}

/* More workers than cores, unbound, and two callers at once. */
static void test_sizes_and_callers(void) {
  zs_pool *p;
  ZS_OK_OR_DIE(zs_pool_create(5, ZS_POOL_UNBOUND, &p));
  ZS_EXPECT(zs_pool_size(p) == 5 && zs_pool_node(p) == -1 && !zs_pool_cpulist(p)[0],
            "size %d node %d", zs_pool_size(p), zs_pool_node(p));
  rendezvous_ctx r = {.n = 5};
  ZS_EXPECT(sched_getaffinity(0, sizeof r.allowed, &r.allowed) == 0, "sched_getaffinity");
  ZS_OK_OR_DIE(zs_pool_run(p, 5, rendezvous_item, &r));
  ZS_EXPECT(!atomic_load(&r.timeout), "5 workers did not all run at once");
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, run_from_thread, p);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  zs_pool_destroy(p);
  ZS_OK_OR_DIE(zs_pool_create(0, 0, &p)); /* node 0 always exists */
  ZS_EXPECT(zs_pool_node(p) == 0, "node %d", zs_pool_node(p));
  check_cover(p, 1234);
  zs_pool_destroy(p);
}

static void test_args(void) {
  zs_pool *p = (zs_pool *)1;
  ZS_EXPECT_STATUS(zs_pool_create(-1, ZS_POOL_UNBOUND, &p), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(p == NULL, "out must be NULL after a failure");
  ZS_EXPECT_STATUS(zs_pool_create(1, 4095, &p), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_pool_create(1, -7, &p), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_pool_create(1, 0, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_pool_run(NULL, 1, count_item, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(zs_pool_size(NULL) == 0, "size of NULL");
  zs_pool_destroy(NULL);
}

int main(void) {
  test_bound();
  test_sizes_and_callers();
  test_args();
  if (!zs_test_failures) printf("test_offload_pool: ok\n");
  ZS_TEST_END("test_offload_pool");
}
