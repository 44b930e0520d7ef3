/* src/shard/reduce.c on its own, without an engine: a zs_shard_ctx filled here (CPU device, MPI
 * groups, a counting allocator) and units with awkward sizes. Every rank fills its full gradient
 * (deterministic with full gradients: the staging buffer) with values only it has; the reduction
 * must leave, in the place the plan says (the whole buffer, this rank's slot of it, or the
 * gradient shard), the sum over ranks:
 *  - deterministic: exactly the float sum in world-rank order ((g0 + g1) + g2) + ..., computed
 *    here, for every reduction kind, with and without buckets, flat and hybrid (groups of 2);
 *  - a second micro-step (sharded gradients, and every kind in deterministic mode) accumulates
 *    rank by rank: ((acc + g0) + g1) + ..., the association of one rank adding the same
 *    micro-batches one after another (global order: micro-step-major);
 *  - non-deterministic: within 1e-6 of the float64 sum.
 * The allocator must be back to zero after each reduction (no scratch leaks). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "device/device.h"
#include "base/error.h"
#include "fake_ctx.h"
#include "shard/shard.h"
#include "zs_test.h"

/* The value rank r puts at flat element i of unit `seed` in micro-step k. */
static float val(int seed, int k, int r, size_t i) {
  uint64_t h =
      (uint64_t)seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)k << 40) ^ ((uint64_t)r << 32) ^ i;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return (float)((double)(h >> 40) / (double)(1u << 24) - 0.5) * 3.0f;
}

/* One configuration: stage (the plan), deterministic, bucket, hybrid group size (0 = world). */
static void run(zs_comm *comm, zs_coll *world, int stage, int det, size_t bucket, int group) {
  const int W = zs_comm_size(comm), R = zs_comm_rank(comm);
  const int S = group ? group : W;
  if (W % S) return;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.deterministic = det;
  cfg.bucket_bytes = bucket;
  cfg.shard_group_size = group;
  zs_plan plan;
  ZS_OK_OR_DIE(zs_plan_make(&cfg, S, &plan));
  zs_dev dev;
  ZS_OK_OR_DIE(zs_dev_open(&dev, ZS_DEVICE_CPU, -1));
  zs_mem_init(&fake_mem, &dev);
  zs_coll *shard = world, *replica = NULL;
  if (S != W) {
    ZS_OK_OR_DIE(zs_coll_split(world, R / S, R, &shard));
    ZS_OK_OR_DIE(zs_coll_split(world, R % S, R, &replica));
  }
  zs_shard_ctx x = {.cfg = &cfg,
                    .plan = &plan,
                    .dev = &dev,
                    .world = world,
                    .shard = shard,
                    .replica = replica,
                    .world_rank = R,
                    .world_size = W,
                    .shard_rank = R % S,
                    .shard_size = S,

                    .mem = &fake_mem,
                    .fail_hard = fake_fail,
                    .owner = NULL};
  /* Units of 1, 7 and 257 + 13 elements: smaller than the group, odd, and two tensors. */
  const zs_tensor_desc d1[1] = {{"a", 1, {1, 0, 0, 0}, 0}};
  const zs_tensor_desc d2[1] = {{"b", 2, {7, 1, 0, 0}, 0}};
  const zs_tensor_desc d3[2] = {{"c", 1, {257, 0, 0, 0}, 0}, {"d", 1, {13, 0, 0, 0}, 0}};
  const zs_tensor_desc *ds[3] = {d1, d2, d3};
  const int nts[3] = {1, 1, 2};
  for (int ui = 0; ui < 3; ui++) {
    zs_unit u;
    memset(&u, 0, sizeof u);
    u.ctx = &x;
    u.st = plan.table; /* as zs_engine_commit */
    ZS_OK_OR_DIE(zs_layout_build(&u.lay, nts[ui], ds[ui]));
    zs_layout_shard(&u.lay, plan.nshards, plan.nshards > 1 ? R % S : 0);
    const size_t P = u.lay.padded, s = u.lay.shard, n = u.lay.numel_total;
    const int full_grads = !plan.shard_grads;
    if (full_grads) ZS_OK_OR_DIE(zs_dev_alloc(&dev, P * 4, &u.grad_full, NULL));
    if (full_grads) memset(u.grad_full, 0, P * 4); /* as zs_engine_begin_step */
    const int staged = det && full_grads;
    if (!full_grads) ZS_OK_OR_DIE(zs_dev_alloc(&dev, s * 4, &u.grad_shard, NULL));
    const int micros = plan.reduce_every_micro ? 2 : 1;
    float *want = calloc(P, sizeof *want);
    double *want64 = calloc(P, sizeof *want64);
    const size_t before = fake_live_bytes();
    for (int k = 0; k < micros; k++) {
      if (!full_grads) ZS_OK_OR_DIE(zs_shard_grad_buffer(&u));
      if (staged) ZS_OK_OR_DIE(zs_shard_grad_stage(&u));
      float *g = staged ? u.grad_stage : u.grad_full;
      for (size_t i = 0; i < P; i++)
        g[i] = i < n ? val(ui, k, R, i) : 0.0f; /* the padding tail is zero */
      /* Expected: the ranks' values added in world-rank order, onto what the shard holds from
         earlier micro-steps (((acc + g0) + g1) + ...: the association of one rank adding the
         same micro-batches one after another). */
      for (size_t i = 0; i < P; i++) {
        float acc = k == 0 ? (i < n ? val(ui, k, 0, i) : 0.0f)
                           : want[i] + (i < n ? val(ui, k, 0, i) : 0.0f);
        double s64 = i < n ? val(ui, k, 0, i) : 0.0f;
        for (int r = 1; r < W; r++) {
          const float v = i < n ? val(ui, k, r, i) : 0.0f;
          acc = acc + v;
          s64 += v;
        }
        want[i] = acc;
        want64[i] += s64;
      }
      ZS_OK_OR_DIE(zs_shard_reduce(&u, k == micros - 1));
    }
    ZS_EXPECT(fake_live_bytes() == before,
              "stage %d det %d bucket %zu group %d unit %d: %zu bytes of "
              "scratch left",
              stage, det, bucket, group, ui, fake_live_bytes() - before);
    /* Where the plan puts the result. */
    const float *got = NULL;
    size_t lo = 0, cnt = P;
    if (plan.reduce == ZS_REDUCE_ALL) {
      got = u.grad_full;
    } else if (plan.reduce == ZS_REDUCE_OWN_SLOT) {
      got = (const float *)u.grad_full + u.lay.shard_off;
      lo = u.lay.shard_off;
      cnt = s;
    } else {
      got = u.grad_shard;
      lo = u.lay.shard_off;
      cnt = s;
    }
    int bad = -1;
    for (size_t j = 0; j < cnt && bad < 0; j++) {
      const size_t i = lo + j;
      const int ok = det ? memcmp(&got[j], &want[i], 4) == 0
                         : fabs((double)got[j] - want64[i]) <= 1e-6 * (1 + fabs(want64[i]));
      if (!ok) bad = (int)i;
    }
    ZS_EXPECT(bad < 0,
              "stage %d det %d bucket %zu group %d unit %d rank %d: element %d is %.9g, want %.9g",
              stage, det, bucket, group, ui, R, bad, bad >= 0 ? (double)got[bad - (int)lo] : 0.0,
              bad >= 0 ? (double)want[bad] : 0.0);
    free(want);
    free(want64);
    if (u.grad_full) zs_dev_free(&dev, u.grad_full, NULL);
    if (u.grad_shard) zs_dev_free(&dev, u.grad_shard, NULL);
    zs_layout_free(&u.lay);
  }
  ZS_EXPECT(fake_failures == 0, "no failure reported (%d)", fake_failures);
  if (replica) zs_coll_destroy(replica);
  if (shard != world) zs_coll_destroy(shard);
  zs_dev_close(&dev);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  zs_coll *world = NULL;
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CPU, 60, &world));
  const char *want_backend = getenv("ZS_COMM"); /* the ctest runs it over mpi and over self */
  ZS_EXPECT(!want_backend || !strcmp(zs_coll_backend(world), want_backend),
            "backend %s, asked for %s", zs_coll_backend(world), want_backend);
  static const size_t buckets[] = {0, 40, 12};
  for (int stage = 0; stage <= 3; stage++)
    for (int det = 0; det <= 1; det++)
      for (int b = 0; b < 3; b++) {
        run(comm, world, stage, det, buckets[b], 0);
        if (zs_comm_size(comm) == 4 && stage >= 1) run(comm, world, stage, det, buckets[b], 2);
      }
  zs_coll_destroy(world);
  if (zs_comm_rank(comm) == 0)
    printf("test_shard_reduce: world %d: %d failure(s)\n", zs_comm_size(comm), zs_test_failures);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_shard_reduce");
}
