/* Pinned NUMA host arena (CPU device here; the pinned check on a GPU is test_offload_pinned_cuda):
 * memory sits on the arena's node (get_mempolicy), stats are exact (reserved: every live
 * allocation's whole pages, one page for 0 bytes, and nothing more), sizes from 0 bytes to 80 MiB
 * work and freeing gives the pages back, only exact pointers are accepted, capacity exhaustion is
 * ZS_ERR_OUT_OF_MEMORY with a message naming bytes, and destroy returns everything (ASan). */
#include <linux/mempolicy.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "offload/host_arena.h"
#include "zs_test.h"

#define MiB ((size_t)1 << 20)

/* What an allocation of b bytes reserves: its whole pages (one for 0 bytes). */
static size_t pages(size_t b) {
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return b ? (b + pg - 1) / pg * pg : pg;
}

/* Node the page at p lives on (it is touched first), or -1. */
static int page_node(void *p) {
  int node = -1;
  if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, p, (unsigned long)(MPOL_F_NODE | MPOL_F_ADDR)))
    return -1;
  return node;
}

/* Policy of the mapping at p: mode, and whether `node` is in its node mask. */
static int page_policy(void *p, int node, int *in_mask) {
  int mode = -1;
  unsigned long mask[16] = {0};
  if (syscall(SYS_get_mempolicy, &mode, mask, 16UL * 8 * sizeof(unsigned long), p,
              (unsigned long)MPOL_F_ADDR))
    return -1;
  *in_mask = node >= 0 && node < 1024 && ((mask[node / 64] >> (node % 64)) & 1);
  return mode;
}

/* Touches every page of [p, p+n) and checks first/middle/last page are on `node`. */
static void check_on_node(void *p, size_t n, int node, int bound, const char *what) {
  if (!n) return;
  memset(p, 0xa5, n);
  char *c = p;
  char *probe[3] = {c, c + n / 2, c + n - 1};
  for (int i = 0; i < 3; i++) {
    int got = page_node(probe[i]);
    ZS_EXPECT(got == node, "%s: page %d of %zu bytes is on node %d, arena node %d", what, i, n, got,
              node);
  }
  if (bound) {
    int in = 0, mode = page_policy(c, node, &in);
    ZS_EXPECT(mode == MPOL_BIND && in, "%s: policy %d (want MPOL_BIND=%d) node %d in mask: %d",
              what, mode, MPOL_BIND, node, in);
  }
}

/* Alloc/free of many sizes with stats, reuse, residency and pointer checks. */
static void test_sizes(unsigned flags) {
  zs_host_arena *a;
  ZS_OK_OR_DIE(zs_host_arena_create(-1, 0, flags, &a));
  int node = zs_host_arena_node(a);
  int bound = (flags & ZS_HOST_ARENA_FORCE_BIND) != 0;
  printf("arena (flags 0x%x): %s\n", flags, zs_host_arena_info(a));
  ZS_EXPECT(node >= 0, "node %d", node);
  ZS_EXPECT(!zs_host_arena_pinned(a), "a CPU-device arena is never pinned");
  ZS_EXPECT(strstr(zs_host_arena_info(a), bound ? "bound to node" : "NUMA node") != NULL,
            "info: %s", zs_host_arena_info(a));

  const size_t sizes[] = {0,    1,      7,   64,          100,      4096,
                          4097, 100000, MiB, 3 * MiB + 5, 64 * MiB, 80 * MiB};
  enum { N = sizeof sizes / sizeof sizes[0] };
  void *p[N];
  size_t want = 0, want_rsv = 0, cur, peak, reserved;
  for (int i = 0; i < N; i++) {
    ZS_OK_OR_DIE(zs_host_arena_alloc(a, sizes[i], &p[i]));
    ZS_EXPECT(p[i] != NULL && (uintptr_t)p[i] % ZS_HOST_ARENA_ALIGN == 0, "size %zu: %p", sizes[i],
              p[i]);
    for (int j = 0; j < i; j++)
      ZS_EXPECT(p[i] != p[j], "size %zu: pointer reused while live", sizes[i]);
    check_on_node(p[i], sizes[i], node, bound, "alloc");
    want += sizes[i];
    want_rsv += pages(sizes[i]);
  }
  ZS_OK_OR_DIE(zs_host_arena_stats(a, &cur, &peak, &reserved));
  ZS_EXPECT(cur == want && peak == want, "cur %zu peak %zu, want %zu", cur, peak, want);
  ZS_EXPECT(reserved == want_rsv, "reserved %zu, want %zu (whole pages)", reserved, want_rsv);
  printf("  %d allocations, %zu bytes handed out, %zu reserved\n", N, cur, reserved);

  /* Exact pointers only: interior, foreign and double frees are refused and change nothing. */
  int local;
  ZS_EXPECT_STATUS(zs_host_arena_free(a, (char *)p[N - 1] + 64), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_host_arena_free(a, &local), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_host_arena_free(a, p[3]));
  ZS_EXPECT_STATUS(zs_host_arena_free(a, p[3]), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_host_arena_free(a, NULL));
  want -= sizes[3];
  want_rsv -= pages(sizes[3]);
  ZS_OK_OR_DIE(zs_host_arena_stats(a, &cur, &peak, &reserved));
  ZS_EXPECT(cur == want && peak == want + sizes[3], "after free: cur %zu peak %zu", cur, peak);
  ZS_EXPECT(reserved == want_rsv, "after free: reserved %zu, want %zu", reserved, want_rsv);

  /* Freeing and re-allocating the big blocks reserves the same again. */
  ZS_OK_OR_DIE(zs_host_arena_stats(a, NULL, NULL, &reserved));
  for (int round = 0; round < 3; round++) {
    for (int i = N - 3; i < N; i++)
      ZS_OK_OR_DIE(zs_host_arena_free(a, p[i]));
    for (int i = N - 3; i < N; i++)
      ZS_OK_OR_DIE(zs_host_arena_alloc(a, sizes[i], &p[i]));
  }
  size_t reserved2;
  ZS_OK_OR_DIE(zs_host_arena_stats(a, &cur, NULL, &reserved2));
  ZS_EXPECT(reserved2 == reserved, "re-allocation reserved more: %zu -> %zu", reserved, reserved2);
  ZS_EXPECT(cur == want, "cur %zu want %zu", cur, want);

  /* Churn of small and medium blocks: reserved is the live blocks' pages after each pass. */
  void *q[64] = {0};
  size_t qs[64] = {0};
  for (int pass = 0; pass < 2; pass++) {
    for (int it = 0; it < 2000; it++) {
      int k = (it * 37) % 64;
      if (q[k]) ZS_OK_OR_DIE(zs_host_arena_free(a, q[k]));
      qs[k] = (size_t)(it * 7919) % 300000 + 1;
      ZS_OK_OR_DIE(zs_host_arena_alloc(a, qs[k], &q[k]));
    }
    size_t live = want_rsv;
    for (int k = 0; k < 64; k++)
      live += q[k] ? pages(qs[k]) : 0;
    ZS_OK_OR_DIE(zs_host_arena_stats(a, NULL, NULL, &reserved2));
    ZS_EXPECT(reserved2 == live, "churn pass %d: reserved %zu, want %zu", pass, reserved2, live);
  }
  for (int k = 0; k < 64; k++)
    ZS_OK_OR_DIE(zs_host_arena_free(a, q[k]));
  for (int i = 0; i < N / 2; i++)
    if (i != 3) ZS_OK_OR_DIE(zs_host_arena_free(a, p[i]));
  /* The rest is still outstanding: destroy must return it too (ASan/LSan would see a leak). */
  zs_host_arena_destroy(a);
}

/* Capacity: a request beyond it, and filling it up, fail with byte counts in the message. */
static void test_capacity(void) {
  zs_host_arena *a;
  size_t cap = 48 * MiB;
  ZS_OK_OR_DIE(zs_host_arena_create(-1, cap, 0, &a));
  void *big;
  ZS_EXPECT_STATUS(zs_host_arena_alloc(a, 64 * MiB, &big), ZS_ERR_OUT_OF_MEMORY);
  ZS_EXPECT(big == NULL, "failed alloc must leave NULL");
  ZS_EXPECT(strstr(zs_last_error(), "67108864") && strstr(zs_last_error(), "50331648"),
            "message names bytes asked and capacity: %s", zs_last_error());
  void *p[64];
  int n = 0;
  zs_status rc = ZS_OK;
  while (n < 64 && (rc = zs_host_arena_alloc(a, 4 * MiB, &p[n])) == ZS_OK)
    n++;
  ZS_EXPECT(rc == ZS_ERR_OUT_OF_MEMORY, "filling: %s", zs_status_str(rc));
  ZS_EXPECT(strstr(zs_last_error(), "4194304") && strstr(zs_last_error(), "reserved"),
            "message names bytes: %s", zs_last_error());
  printf("capacity %zu: %d x 4 MiB fit; then: %s\n", cap, n, zs_last_error());
  size_t cur, reserved;
  ZS_OK_OR_DIE(zs_host_arena_stats(a, &cur, NULL, &reserved));
  ZS_EXPECT(cur == (size_t)n * 4 * MiB, "cur %zu after %d allocations", cur, n);
  ZS_EXPECT(reserved <= cap, "reserved %zu over capacity %zu", reserved, cap);
  ZS_EXPECT(n == 12, "%d x 4 MiB fit in %zu bytes, want exactly 12", n, cap);
  for (int i = 0; i < n; i++)
    ZS_OK_OR_DIE(zs_host_arena_free(a, p[i]));
  ZS_OK_OR_DIE(zs_host_arena_alloc(a, 4 * MiB, &p[0])); /* usable again after freeing */
  ZS_OK_OR_DIE(zs_host_arena_free(a, p[0]));
  zs_host_arena_destroy(a);
}

/* Two threads allocating and freeing at once keep exact stats. */
static void *churn(void *arg) {
  zs_host_arena *a = arg;
  for (int i = 0; i < 3000; i++) {
    void *p;
    if (zs_host_arena_alloc(a, (size_t)(i % 97) * 1000 + 1, &p) != ZS_OK) return arg;
    ((char *)p)[0] = 1;
    if (zs_host_arena_free(a, p) != ZS_OK) return arg;
  }
  return NULL;
}

static void test_threads(void) {
  zs_host_arena *a;
  ZS_OK_OR_DIE(zs_host_arena_create(-1, 0, 0, &a));
  pthread_t t[2];
  void *r[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, churn, a);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], &r[i]);
  ZS_EXPECT(!r[0] && !r[1], "a thread failed: %s", zs_last_error());
  size_t cur, peak;
  ZS_OK_OR_DIE(zs_host_arena_stats(a, &cur, &peak, NULL));
  ZS_EXPECT(cur == 0 && peak > 0 && peak <= 2 * 97000, "cur %zu peak %zu", cur, peak);
  zs_host_arena_destroy(a);
}

/* Bad arguments and the node override. */
static void test_args(void) {
  zs_host_arena *a = (zs_host_arena *)1;
  ZS_EXPECT_STATUS(zs_host_arena_create(-1, 0, 1u << 20, &a), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(a == NULL, "out must be NULL after a failure");
  ZS_EXPECT_STATUS(zs_host_arena_create(-2, 0, 0, &a), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_host_arena_create(-1, 0, 0, NULL), ZS_ERR_INVALID_ARG);
#ifndef ZS_HAVE_CUDA
  ZS_EXPECT_STATUS(zs_host_arena_create(0, 0, 0, &a), ZS_ERR_UNSUPPORTED);
#endif
  ZS_EXPECT_STATUS(zs_host_arena_alloc(NULL, 1, (void **)&a), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_host_arena_stats(NULL, NULL, NULL, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(zs_host_arena_node(NULL) == -1, "node of NULL");
  zs_host_arena_destroy(NULL);

  setenv("ZS_OFFLOAD_NUMA_NODE", "0", 1);
  ZS_OK_OR_DIE(zs_host_arena_create(-1, 0, 0, &a));
  ZS_EXPECT(zs_host_arena_node(a) == 0 && strstr(zs_host_arena_info(a), "ZS_OFFLOAD_NUMA_NODE"),
            "override: %s", zs_host_arena_info(a));
  zs_host_arena_destroy(a);
  setenv("ZS_OFFLOAD_NUMA_NODE", "4095", 1);
  ZS_EXPECT_STATUS(zs_host_arena_create(-1, 0, 0, &a), ZS_ERR_INVALID_ARG);
  setenv("ZS_OFFLOAD_NUMA_NODE", "x", 1);
  ZS_EXPECT_STATUS(zs_host_arena_create(-1, 0, 0, &a), ZS_ERR_INVALID_ARG);
  unsetenv("ZS_OFFLOAD_NUMA_NODE");
}

int main(void) {
  test_sizes(0);
  test_sizes(ZS_HOST_ARENA_FORCE_BIND);
  test_capacity();
  test_threads();
  test_args();
  if (!zs_test_failures) printf("test_offload_arena: ok\n");
  ZS_TEST_END("test_offload_arena");
}
