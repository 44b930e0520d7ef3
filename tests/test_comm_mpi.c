/* The mpi backend under mpirun -np 1..4: every collective against a reference each rank computes
 * on its own. Rank r's contribution to element i is a known function of (r, i), so the expected
 * sums / gathers need no communication. f32 and bf16 values are small multiples of 0.5, whose sums
 * are exact in any order, so results must match bit for bit; a separate bf16 case checks rounding
 * to nearest even; u64 sums wrap. In and out of place, odd counts, count 0, sub-groups, bad args.
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "comm/comm.h"
#include "zs_test.h"

/* bf16 of a double by rounding the 8-bit significand to nearest even (independent of the code
   under test; valid for normal numbers and 0). */
static uint16_t ref_bf16(double x) {
  if (x == 0) return signbit(x) ? 0x8000 : 0;
  int e = 0;
  double m = frexp(fabs(x), &e);     /* x = m * 2^e, m in [0.5, 1) */
  double q = nearbyint(ldexp(m, 8)); /* 8 significant bits, ties to even */
  float f = (float)ldexp(q, e - 8) * (x < 0 ? -1.0f : 1.0f);
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16); /* exact: f has at most 8 significant bits */
}

/* Contribution of world rank w to element i as raw bits, for salt s (so cases differ). */
static uint64_t contrib(zs_cdt dt, int w, size_t i, int s) {
  double v = 0.5 * (double)((int)((w * 7 + (int)(i % 1000) * 3 + s * 5) % 23) - 11);
  switch (dt) {
  case ZS_CDT_F32: {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  case ZS_CDT_BF16:
    return ref_bf16(v);
  case ZS_CDT_U64:
    return 0xF000000000000000ull + (uint64_t)w * 1000003ull + i * 77ull + (uint64_t)s;
  case ZS_CDT_BYTE:
    return (uint64_t)((w * 31 + i * 7 + (size_t)s) & 0xff);
  }
  return 0;
}

/* Value of raw bits as double (f32/bf16). */
static double as_double(zs_cdt dt, uint64_t b) {
  uint32_t u = dt == ZS_CDT_BF16 ? (uint32_t)b << 16 : (uint32_t)b;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Expected sum over the members' contributions. */
static uint64_t ref_sum(zs_cdt dt, const int *members, int n, size_t i, int s) {
  if (dt == ZS_CDT_U64) {
    uint64_t t = 0;
    for (int k = 0; k < n; k++)
      t += contrib(dt, members[k], i, s);
    return t;
  }
  double t = 0;
  for (int k = 0; k < n; k++)
    t += as_double(dt, contrib(dt, members[k], i, s));
  if (dt == ZS_CDT_BF16) return ref_bf16(t);
  float f = (float)t;
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Raw bits of element i of buf. */
static uint64_t load(zs_cdt dt, const void *buf, size_t i) {
  size_t es = zs_cdt_size(dt);
  uint64_t v = 0;
  memcpy(&v, (const char *)buf + i * es, es); /* little-endian host */
  return v;
}

/* Stores raw bits into element i of buf. */
static void store(zs_cdt dt, void *buf, size_t i, uint64_t v) {
  memcpy((char *)buf + i * zs_cdt_size(dt), &v, zs_cdt_size(dt));
}

/* A buffer of n elements filled with a pattern no collective produces by accident. */
static void *garbage(zs_cdt dt, size_t n) {
  size_t bytes = n * zs_cdt_size(dt) + 8;
  void *p = malloc(bytes);
  if (!p) exit(2);
  memset(p, 0x5b, bytes);
  return p;
}

static int me_world;

/* Compares n elements of got against want(i); reports the first few mismatches. */
#define CHECK_ELEMS(what, dt, n, got_expr, want_expr)                                              \
  do {                                                                                             \
    int bad_ = 0;                                                                                  \
    for (size_t i = 0; i < (n); i++) {                                                             \
      uint64_t g_ = (got_expr), w_ = (want_expr);                                                  \
      if (g_ != w_ && bad_++ < 3)                                                                  \
        ZS_EXPECT(0, "rank %d %s %s count %zu: element %zu is %#llx, want %#llx", me_world, what,  \
                  zs_cdt_name_t(dt), (size_t)(n), i, (unsigned long long)g_,                       \
                  (unsigned long long)w_);                                                         \
    }                                                                                              \
  } while (0)

/* Test-side dtype name (not the library's). */
static const char *zs_cdt_name_t(zs_cdt dt) {
  return dt == ZS_CDT_F32 ? "f32" : dt == ZS_CDT_BF16 ? "bf16" : dt == ZS_CDT_U64 ? "u64" : "byte";
}

/* all_reduce in or out of place. */
static void t_all_reduce(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int inplace, int s) {
  int me = mem[zs_coll_rank(c)], g = zs_coll_size(c);
  void *send = garbage(dt, n), *recv = inplace ? send : garbage(dt, n);
  for (size_t i = 0; i < n; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  ZS_OK_OR_DIE(zs_coll_all_reduce(c, send, recv, n, dt, NULL));
  CHECK_ELEMS(inplace ? "all_reduce in place" : "all_reduce", dt, n, load(dt, recv, i),
              ref_sum(dt, mem, g, i, s));
  if (!inplace) free(recv);
  free(send);
}

/* all_gather in or out of place. */
static void t_all_gather(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int inplace, int s) {
  int r = zs_coll_rank(c), me = mem[r], g = zs_coll_size(c);
  void *recv = garbage(dt, n * (size_t)g);
  void *send = inplace ? (char *)recv + (size_t)r * n * zs_cdt_size(dt) : garbage(dt, n);
  for (size_t i = 0; i < n; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  ZS_OK_OR_DIE(zs_coll_all_gather(c, send, recv, n, dt, NULL));
  CHECK_ELEMS(inplace ? "all_gather in place" : "all_gather", dt, n * (size_t)g, load(dt, recv, i),
              contrib(dt, mem[i / (n ? n : 1)], i % (n ? n : 1), s));
  if (!inplace) free(send);
  free(recv);
}

/* reduce_scatter in or out of place: block r of the sum lands on rank r. */
static void t_reduce_scatter(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int inplace, int s) {
  int r = zs_coll_rank(c), me = mem[r], g = zs_coll_size(c);
  void *send = garbage(dt, n * (size_t)g);
  void *recv = inplace ? (char *)send + (size_t)r * n * zs_cdt_size(dt) : garbage(dt, n);
  for (size_t i = 0; i < n * (size_t)g; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  ZS_OK_OR_DIE(zs_coll_reduce_scatter(c, send, recv, n, dt, NULL));
  CHECK_ELEMS(inplace ? "reduce_scatter in place" : "reduce_scatter", dt, n, load(dt, recv, i),
              ref_sum(dt, mem, g, (size_t)r * n + i, s));
  if (!inplace) free(recv);
  free(send);
}

/* all_to_all: block j of send goes to rank j. */
static void t_all_to_all(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int s) {
  int r = zs_coll_rank(c), me = mem[r], g = zs_coll_size(c);
  void *send = garbage(dt, n * (size_t)g), *recv = garbage(dt, n * (size_t)g);
  for (size_t i = 0; i < n * (size_t)g; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  ZS_OK_OR_DIE(zs_coll_all_to_all(c, send, recv, n, dt, NULL));
  /* recv block j came from rank j, which sent its block r there. */
  CHECK_ELEMS("all_to_all", dt, n * (size_t)g, load(dt, recv, i),
              contrib(dt, mem[i / (n ? n : 1)], (size_t)r * n + i % (n ? n : 1), s));
  free(send);
  free(recv);
}

/* broadcast from root. */
static void t_broadcast(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int root, int s) {
  void *buf = garbage(dt, n);
  if (zs_coll_rank(c) == root)
    for (size_t i = 0; i < n; i++)
      store(dt, buf, i, contrib(dt, mem[root], i, s));
  ZS_OK_OR_DIE(zs_coll_broadcast(c, buf, n, dt, root, NULL));
  CHECK_ELEMS("broadcast", dt, n, load(dt, buf, i), contrib(dt, mem[root], i, s));
  free(buf);
}

/* Every collective, every dtype, several counts, on group c whose rank k is world rank mem[k]. */
static void all_cases(zs_coll *c, const int *mem) {
  const zs_cdt dts[] = {ZS_CDT_F32, ZS_CDT_BF16, ZS_CDT_U64};
  const size_t counts[] = {0, 1, 7, 1001};
  int s = 0;
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 4; k++, s++) {
      zs_cdt dt = dts[d];
      size_t n = counts[k];
      for (int inplace = 0; inplace < 2; inplace++) {
        t_all_reduce(c, mem, dt, n, inplace, s);
        t_all_gather(c, mem, dt, n, inplace, s + 1);
        t_reduce_scatter(c, mem, dt, n, inplace, s + 2);
      }
      t_all_to_all(c, mem, dt, n, s + 3);
      t_broadcast(c, mem, dt, n, 0, s + 4);
      t_broadcast(c, mem, dt, n, zs_coll_size(c) - 1, s + 5);
    }
  t_all_gather(c, mem, ZS_CDT_BYTE, 13, 0, 9);
  t_all_to_all(c, mem, ZS_CDT_BYTE, 5, 10);
  ZS_OK_OR_DIE(zs_coll_barrier(c));
  ZS_OK_OR_DIE(zs_coll_sync(c, NULL));
}

/* bf16 rounding: ranks 0 and 1 add a = 1 + k/128 and b = j/512 (everyone else adds 0, which is
   exact), so the one inexact addition must round to nearest even, ties included. */
static void bf16_rounding(zs_coll *c) {
  const size_t n = 2 * 128 * 8;
  int r = zs_coll_rank(c), g = zs_coll_size(c);
  uint16_t *buf = malloc(n * 2), *rs = malloc(n / (size_t)g * 2 + 2);
  uint16_t *full = malloc(n * 2);
  for (size_t i = 0; i < n; i++) {
    size_t k = (i / 8) % 128, j = i % 8;
    double sign = i >= n / 2 ? -1.0 : 1.0;
    double a = sign * (1.0 + (double)k / 128.0), b = sign * (double)j / 512.0;
    double mine = r == 0 ? a : r == 1 ? b : 0.0;
    buf[i] = ref_bf16(mine);
    full[i] = ref_bf16(g == 1 ? a : a + b); /* one rounding of the exact sum */
  }
  uint16_t *copy = malloc(n * 2);
  memcpy(copy, buf, n * 2);
  ZS_OK_OR_DIE(zs_coll_all_reduce(c, buf, buf, n, ZS_CDT_BF16, NULL));
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    if (buf[i] != full[i] && bad++ < 3)
      ZS_EXPECT(0, "bf16 all_reduce rounding, element %zu: got %#x want %#x", i, buf[i], full[i]);
  size_t blk = n / (size_t)g;
  ZS_OK_OR_DIE(zs_coll_reduce_scatter(c, copy, rs, blk, ZS_CDT_BF16, NULL));
  for (size_t i = 0; i < blk; i++)
    if (rs[i] != full[(size_t)r * blk + i] && bad++ < 3)
      ZS_EXPECT(0, "bf16 reduce_scatter rounding, element %zu", i);
  /* Check the reference itself on known ties: 1 + 1/256 -> 1 (even), 1 + 3/256 -> 1 + 4/256. */
  ZS_EXPECT(ref_bf16(1.0 + 1.0 / 256) == 0x3f80 && ref_bf16(1.0 + 3.0 / 256) == 0x3f82,
            "reference rounding is wrong");
  free(buf);
  free(rs);
  free(full);
  free(copy);
}

/* Arguments that must be refused, identically on every rank (no communication happens). */
static void bad_args(zs_coll *c) {
  float a[8] = {0}, b[8] = {0};
  ZS_EXPECT_STATUS(zs_coll_all_reduce(c, a, b, 2, ZS_CDT_BYTE, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_coll_all_reduce(c, a, a + 1, 2, ZS_CDT_F32, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_coll_all_reduce(c, NULL, b, 2, ZS_CDT_F32, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_coll_all_to_all(c, a, a, 1, ZS_CDT_F32, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_coll_broadcast(c, a, 1, ZS_CDT_F32, zs_coll_size(c), NULL),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_coll_broadcast(c, a, 1, ZS_CDT_F32, -1, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_coll_all_gather(c, a, b, 1, (zs_cdt)42, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_coll_all_gather(NULL, a, b, 1, ZS_CDT_F32, NULL), ZS_ERR_INVALID_ARG);
  zs_coll *x = (zs_coll *)1;
  ZS_EXPECT_STATUS(zs_coll_split(c, -1, 0, &x), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(x == NULL, "split must clear *out on failure");
  ZS_EXPECT(zs_coll_rank(NULL) == -1 && zs_coll_size(NULL) == -1, "NULL coll rank/size");
  /* count 0 with NULL buffers is a no-op */
  ZS_OK_OR_DIE(zs_coll_all_reduce(c, NULL, NULL, 0, ZS_CDT_F32, NULL));
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  int wr = -1, ws = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  me_world = wr;
  ZS_EXPECT(zs_comm_rank(comm) == wr && zs_comm_size(comm) == ws,
            "comm rank/size %d/%d vs MPI %d/%d", zs_comm_rank(comm), zs_comm_size(comm), wr, ws);
  ZS_EXPECT(comm->local_size == ws && comm->local_rank == wr, "one host: local rank %d size %d",
            comm->local_rank, comm->local_size);
  ZS_EXPECT(comm->mpi_initialized_here == 1 && comm->from_env == 0, "bootstrap flags");
  ZS_EXPECT(zs_comm_rank(NULL) == -1 && zs_comm_size(NULL) == -1, "NULL comm rank/size");

  unsetenv("ZS_COMM");
  zs_coll *world = NULL;
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CPU, 30.0, &world));
  ZS_EXPECT(!strcmp(zs_coll_backend(world), "mpi"), "backend %s", zs_coll_backend(world));
  ZS_EXPECT(zs_coll_rank(world) == wr && zs_coll_size(world) == ws, "world coll rank/size");
  int *mem = malloc(sizeof(int) * (size_t)ws);
  for (int i = 0; i < ws; i++)
    mem[i] = i;
  all_cases(world, mem);
  bf16_rounding(world);
  bad_args(world);

  /* Sub-groups: color = rank % 2, key = -rank (reverse order inside each group). */
  zs_coll *sub = NULL;
  ZS_OK_OR_DIE(zs_coll_split(world, wr % 2, -wr, &sub));
  int gs = 0, *gm = malloc(sizeof(int) * (size_t)ws);
  for (int w = ws - 1; w >= 0; w--)
    if (w % 2 == wr % 2) gm[gs++] = w;
  ZS_EXPECT(zs_coll_size(sub) == gs, "split size %d want %d", zs_coll_size(sub), gs);
  ZS_EXPECT(gm[zs_coll_rank(sub)] == wr, "split rank %d is not world rank %d", zs_coll_rank(sub),
            wr);
  all_cases(sub, gm);
  zs_coll *sub2 = NULL; /* a split of a split */
  ZS_OK_OR_DIE(zs_coll_split(sub, 0, wr, &sub2));
  ZS_EXPECT(zs_coll_size(sub2) == gs, "split of split");
  zs_coll_destroy(sub2);
  zs_coll_destroy(sub);

  /* Backend choice by env: nccl on the CPU is refused, garbage is refused. */
  zs_coll *x = NULL;
  setenv("ZS_COMM", "nccl", 1);
  ZS_EXPECT_STATUS(zs_coll_open(comm, ZS_DEVICE_CPU, 1.0, &x), ZS_ERR_UNSUPPORTED);
  setenv("ZS_COMM", "carrier-pigeon", 1);
  ZS_EXPECT_STATUS(zs_coll_open(comm, ZS_DEVICE_CPU, 1.0, &x), ZS_ERR_INVALID_ARG);
  setenv("ZS_COMM", "mpi", 1);
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CPU, 30.0, &x));
  ZS_OK_OR_DIE(zs_coll_barrier(x));
  zs_coll_destroy(x);
  unsetenv("ZS_COMM");
#ifndef ZS_HAVE_CUDA
  ZS_EXPECT_STATUS(zs_coll_open(comm, ZS_DEVICE_CUDA, 1.0, &x), ZS_ERR_UNSUPPORTED);
#endif

  zs_coll_destroy(world);
  zs_coll_destroy(NULL);
  free(mem);
  free(gm);
  zs_comm_destroy(comm);
  int fin = 0;
  MPI_Finalized(&fin);
  ZS_EXPECT(fin == 1, "zs_comm_destroy must finalise the MPI it initialised");
  if (wr == 0 && !zs_test_failures) printf("test_comm_mpi: %d ranks OK\n", ws);
  ZS_TEST_END("test_comm_mpi");
}
