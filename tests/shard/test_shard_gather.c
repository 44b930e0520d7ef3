/* src/shard/gather.c on its own, without an engine: a hand-filled zs_shard_ctx (CPU device, MPI
 * groups, a counting allocator) with sharded params. Each rank's shard holds values only it
 * has; a gather must assemble the full unit exactly (every rank's slot, padding zero), prefetch
 * the next unit in the direction of traversal, drop prefetched units outside the window, keep
 * the byte count of gathered units equal to what is allocated, refuse a gather that
 * max_live_bytes leaves no room for with nothing changed, and free everything on drop_all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "comm/comm.h"
#include "device/device.h"
#include "fake_ctx.h"
#include "shard/shard.h"
#include "zs_test.h"

#define NU 5

/* The value of flat element i of unit k (what set_param would have written everywhere). */
static float val(int k, size_t i) {
  return (float)(k * 1000) + (float)i * 0.5f;
}

static void check_full(const zs_unit *u, int k) {
  const float *p = u->param_full;
  int bad = -1;
  for (size_t i = 0; i < u->lay.padded && bad < 0; i++) {
    const float want = i < u->lay.numel_total ? val(k, i) : 0.0f;
    if (p[i] != want) bad = (int)i;
  }
  ZS_EXPECT(bad < 0, "unit %d: gathered element %d is %g, want %g", k, bad,
            bad >= 0 ? (double)p[bad] : 0.0, bad >= 0 ? (double)val(k, (size_t)bad) : 0.0);
}

static int gathered_count(zs_unit *u) {
  int n = 0;
  for (int i = 0; i < NU; i++)
    n += u[i].gathered;
  return n;
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int W = zs_comm_size(comm), R = zs_comm_rank(comm);
  zs_coll *world = NULL;
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CPU, 60, &world));
  const char *want_backend = getenv("ZS_COMM"); /* the ctest runs it over mpi and over self */
  ZS_EXPECT(!want_backend || !strcmp(zs_coll_backend(world), want_backend),
            "backend %s, asked for %s", zs_coll_backend(world), want_backend);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.prefetch_units = 1;
  zs_plan plan;
  ZS_OK_OR_DIE(zs_plan_make(&cfg, W, &plan));
  zs_dev dev;
  ZS_OK_OR_DIE(zs_dev_open(&dev, ZS_DEVICE_CPU, -1));
  zs_mem_init(&fake_mem, &dev);
  zs_unit units[NU], *up[NU];
  zs_shard_ctx x = {.cfg = &cfg,
                    .plan = &plan,
                    .dev = &dev,
                    .world = world,
                    .shard = world,
                    .world_rank = R,
                    .world_size = W,
                    .shard_rank = R,
                    .shard_size = W,
                    .units = up,
                    .nunits = NU,
                    .in_step = 0,

                    .mem = &fake_mem,
                    .fail_hard = fake_fail,
                    .owner = NULL};
  memset(units, 0, sizeof units);
  size_t bytes[NU];
  for (int k = 0; k < NU; k++) {
    zs_unit *u = &units[k];
    up[k] = u;
    u->ctx = &x;
    u->st = plan.table; /* as zs_engine_commit */
    u->index = k;
    snprintf(u->name, sizeof u->name, "u%d", k);
    const zs_tensor_desc d[1] = {{"w", 1, {11 + 7 * k, 0, 0, 0}, 0}}; /* odd sizes: padding */
    ZS_OK_OR_DIE(zs_layout_build(&u->lay, 1, d));
    zs_layout_shard(&u->lay, plan.nshards, R);
    ZS_OK_OR_DIE(zs_dev_alloc(&dev, u->lay.shard * 4, &u->param_shard, NULL));
    float *s = u->param_shard;
    for (size_t j = 0; j < u->lay.shard; j++) {
      const size_t i = u->lay.shard_off + j;
      s[j] = i < u->lay.numel_total ? val(k, i) : 0.0f;
    }
    bytes[k] = u->lay.padded * 4;
  }
  /* Forward pass outside a step: each gather prefetches the next unit only. */
  for (int k = 0; k < NU; k++) {
    ZS_OK_OR_DIE(zs_shard_gather_user(&units[k]));
    units[k].held = 1;
    check_full(&units[k], k);
    if (k + 1 < NU) {
      ZS_EXPECT(units[k + 1].gathered, "gather of u%d prefetches u%d", k, k + 1);
      check_full(&units[k + 1], k + 1);
    }
    ZS_EXPECT(gathered_count(units) <= 2, "at u%d: %d units gathered (held 1 + prefetch 1)", k,
              gathered_count(units));
    size_t sum = 0;
    for (int i = 0; i < NU; i++)
      sum += units[i].gathered ? bytes[i] : 0;
    ZS_EXPECT(sum == x.live_gathered_bytes && fake_live_bytes() == sum,
              "at u%d: gathered bytes %zu, counted %zu, allocated %zu", k, sum,
              x.live_gathered_bytes, fake_live_bytes());
    zs_shard_release_user(&units[k]);
    ZS_EXPECT(!units[k].gathered, "release frees u%d", k);
  }
  ZS_EXPECT(gathered_count(units) == 0, "nothing prefetched after the last unit");
  /* A partial pass, then a pass from the start: the stale prefetch outside the window goes. */
  ZS_OK_OR_DIE(zs_shard_gather_user(&units[1])); /* prefetches u2 */
  units[1].held = 1;
  zs_shard_release_user(&units[1]);
  ZS_OK_OR_DIE(zs_shard_gather_user(&units[0])); /* window {u1}: u2 dropped */
  units[0].held = 1;
  ZS_EXPECT(!units[2].gathered && units[1].gathered, "window follows the traversal");
  /* max_live_bytes: room for u0 held plus one more unit only. */
  cfg.max_live_bytes = bytes[0] + bytes[4];
  ZS_OK_OR_DIE(zs_shard_gather_user(&units[4])); /* drops the prefetched u1 */
  units[4].held = 1;
  ZS_EXPECT(!units[1].gathered && units[4].gathered, "prefetch dropped for room");
  const size_t before = fake_live_bytes();
  ZS_EXPECT(zs_shard_gather_user(&units[3]) == ZS_ERR_OUT_OF_MEMORY,
            "a gather with no room is refused");
  ZS_EXPECT(fake_live_bytes() == before && !units[3].gathered && units[0].gathered &&
                units[4].gathered,
            "a refused gather changes nothing");
  cfg.max_live_bytes = 0;
  zs_shard_drop_all(&x);
  ZS_EXPECT(fake_live_bytes() == 0 && x.live_gathered_bytes == 0 && gathered_count(units) == 0,
            "drop_all frees every gathered copy (%zu bytes left)", fake_live_bytes());
  for (int k = 0; k < NU; k++) {
    zs_dev_free(&dev, units[k].param_shard, NULL);
    zs_layout_free(&units[k].lay);
  }
  zs_dev_close(&dev);
  zs_coll_destroy(world);
  if (R == 0) printf("test_shard_gather: world %d: %d failure(s)\n", W, zs_test_failures);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_shard_gather");
}
