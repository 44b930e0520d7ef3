/* The mpi backend under mpirun -np 1..4: every collective against a reference each rank computes
 * on its own. Rank r's contribution to element i is a known function of (r, i), so the expected
 * sums / gathers need no communication. f32 and bf16 values are small multiples of 0.5, whose sums
 * are exact in any order, so results must match bit for bit; a separate bf16 case checks rounding
 * to nearest even; u64 sums wrap. In and out of place, odd counts, count 0, sub-groups, bad args.
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "test_comm_ref.h"

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

/* zs_coll_bus_bytes on a fresh group, from its definition in comm.h: an all-reduce of 48 bytes
   moves 2 * 48 (n - 1) / n, an all-gather and a reduce-scatter of 3 floats per rank and an
   all-to-all of 2 per rank (n - 1) / n of their 12 n and 8 n bytes, a broadcast of 5 floats 20;
   one rank moves nothing. */
static void bus_bytes(zs_coll *c) {
  const uint64_t n = (uint64_t)zs_coll_size(c);
  float a[64] = {0}, b[64] = {0};
  ZS_EXPECT(zs_coll_bus_bytes(c) == 0, "a fresh group moved %llu bytes",
            (unsigned long long)zs_coll_bus_bytes(c));
  ZS_OK_OR_DIE(zs_coll_all_reduce(c, a, a, 12, ZS_CDT_F32, NULL));
  ZS_OK_OR_DIE(zs_coll_all_gather(c, a, b, 3, ZS_CDT_F32, NULL));
  ZS_OK_OR_DIE(zs_coll_reduce_scatter(c, b, a, 3, ZS_CDT_F32, NULL));
  ZS_OK_OR_DIE(zs_coll_all_to_all(c, a, b, 2, ZS_CDT_F32, NULL));
  ZS_OK_OR_DIE(zs_coll_broadcast(c, a, 5, ZS_CDT_F32, 0, NULL));
  const uint64_t want = n == 1 ? 0 : 96 * (n - 1) / n + 12 * (n - 1) * 2 + 8 * (n - 1) + 20;
  ZS_EXPECT(zs_coll_bus_bytes(c) == want, "bus bytes %llu, want %llu at %llu ranks",
            (unsigned long long)zs_coll_bus_bytes(c), (unsigned long long)want,
            (unsigned long long)n);
  ZS_EXPECT(zs_coll_bus_bytes(NULL) == 0, "NULL group");
}

/* Every rank's value of v, equal on all of them. */
static int same_everywhere(zs_coll *c, uint64_t v) {
  uint64_t all[64] = {0};
  const int n = zs_coll_size(c);
  ZS_OK_OR_DIE(zs_coll_all_gather(c, &v, all, 1, ZS_CDT_U64, NULL));
  for (int i = 0; i < n && i < 64; i++)
    if (all[i] != v) return 0;
  return 1;
}

/* zs_coll_hash_pause (comm.h): the calls made while paused move the role hash and leave the
   running hash as it was, the others the reverse; both equal on every rank that made the same
   calls. One rank: both 0. */
static void hash_pause(zs_coll *c) {
  float a[4] = {1, 2, 3, 4};
  const uint64_t h0 = zs_coll_sig_hash(c), r0 = zs_coll_sig_role_hash(c);
  zs_coll_hash_pause(c, 1);
  ZS_OK_OR_DIE(zs_coll_all_reduce(c, a, a, 4, ZS_CDT_F32, NULL));
  zs_coll_hash_pause(c, 0);
  const uint64_t h1 = zs_coll_sig_hash(c), r1 = zs_coll_sig_role_hash(c);
  ZS_OK_OR_DIE(zs_coll_all_reduce(c, a, a, 4, ZS_CDT_F32, NULL));
  const uint64_t h2 = zs_coll_sig_hash(c), r2 = zs_coll_sig_role_hash(c);
  if (zs_coll_size(c) == 1) {
    ZS_EXPECT(h2 == 0 && r2 == 0, "one rank: hashes %llx %llx", (unsigned long long)h2,
              (unsigned long long)r2);
    return;
  }
  ZS_EXPECT(h1 == h0 && r1 != r0, "a paused call moved the running hash or not the role hash");
  ZS_EXPECT(h2 != h1 && r2 == r1,
            "a call after the pause moved the role hash or not the running one");
  ZS_EXPECT(same_everywhere(c, h2) && same_everywhere(c, r2), "the ranks' hashes differ");
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
  hash_pause(world);

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
  bus_bytes(x);
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
