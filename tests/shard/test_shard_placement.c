/* Budgeted partial offload (src/shard/placement.c) against a reference written here: for random
 * unit sizes (many ties), configurations and budgets, the units on the host must be exactly the
 * greedy prefix of (moved bytes descending, unit index ascending) that brings the device bytes
 * within the budget, with the moved bytes recomputed here from the stage rule (optimizer state:
 * 12 bytes per element of this rank's shard; with sharded params also the param shard). Then the
 * properties on their own: never over the budget when it fits (every unit on the host when it does
 * not), monotone in the budget (a larger budget's host units are a subset of a smaller one's), no
 * device unit larger than a host unit (ties: lower index first), the same answer twice, and
 * zs_plan_memory's categories equal to the placement's sums. Every other iteration freezes every
 * fourth unit (zs_plan_units.frozen): a frozen unit has no optimizer state and moves its param
 * shard alone (sharded params) or nothing. The precision modes take turns (ZS_MASTER_PARAMS with
 * fp32 params, bf16 moments): the moved bytes are the device bytes freed, and the host bytes
 * add the fp32 master a ZS_MASTER_PARAMS unit keeps there when its params stay on the device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shard/placement.h"
#include "shard/plan.h"
#include "shard/plan_memory.h"
#include "zs_test.h"

#define MAXU 12

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  return zs_test_rand(&rng);
}

/* Device bytes a unit of n elements frees on the host, from the stage rule (frozen: no optimizer
   state): m and v (4 or 2 bytes each, moment_dtype), the fp32 master unless the params are the
   master (ZS_MASTER_PARAMS: none on the device), the param shard when sharded. */
static size_t ref_moved(const zs_plan *p, const zs_config *c, size_t n, int frozen) {
  const size_t S = (size_t)p->nshards, s = (n + S - 1) / S;
  const size_t ps = c->param_dtype == ZS_BF16 ? 2 : 4, ms = c->moment_dtype == ZS_BF16 ? 2 : 4;
  const size_t master = c->master == ZS_MASTER_PARAMS ? 0 : 4;
  return (frozen ? 0 : (2 * ms + master) * s) + (p->shard_params ? ps * s : 0);
}

/* Host bytes it then holds: the same arrays, each in whole pages (the host arena maps one region
   per array), except that ZS_MASTER_PARAMS with full params (left on the device) keeps an fp32
   master on the host (zshard.h, zs_config.master). */
static size_t ref_host(const zs_plan *p, const zs_config *c, size_t n, int frozen) {
  const size_t S = (size_t)p->nshards, s = (n + S - 1) / S, pg = (size_t)sysconf(_SC_PAGESIZE);
  const size_t ps = c->param_dtype == ZS_BF16 ? 2 : 4, ms = c->moment_dtype == ZS_BF16 ? 2 : 4;
  const int master = c->master != ZS_MASTER_PARAMS || !p->shard_params; /* fp32, on the host */
#define PAGES(b) (((b) + pg - 1) / pg * pg) /* each array whole pages in the host arena */
  return (frozen ? 0 : 2 * PAGES(ms * s) + (master ? PAGES(4 * s) : 0)) +
         (p->shard_params ? PAGES(ps * s) : 0);
#undef PAGES
}

/* The greedy reference: host[i] for the budget; returns 1 when it fits. */
static int ref_place(const zs_plan *p, const zs_config *c, const int64_t *numel, const int *frozen,
                     int n, size_t dev, size_t budget, int *host) {
  int order[MAXU];
  for (int i = 0; i < n; i++)
    order[i] = i, host[i] = 0;
  for (int i = 1; i < n; i++) /* insertion sort: moved descending, index ascending */
    for (int j = i; j > 0; j--) {
      const size_t a = ref_moved(p, c, (size_t)numel[order[j - 1]], frozen[order[j - 1]]);
      const size_t b = ref_moved(p, c, (size_t)numel[order[j]], frozen[order[j]]);
      if (b > a) {
        const int t = order[j];
        order[j] = order[j - 1];
        order[j - 1] = t;
      }
    }
  for (int k = 0; k < n && dev > budget; k++) {
    host[order[k]] = 1;
    dev -= ref_moved(p, c, (size_t)numel[order[k]], frozen[order[k]]);
  }
  if (dev > budget) {
    for (int i = 0; i < n; i++)
      host[i] = 1;
    return 0;
  }
  return 1;
}

int main(void) {
  int cases = 0, mixed = 0, refused = 0;
  for (int iter = 0; iter < 3000; iter++) {
    zs_config c;
    zs_config_default(&c);
    c.stage = 1 + (int)(next() % 3);
    c.param_dtype = next() % 2 ? ZS_BF16 : ZS_F32;
    c.reduce_dtype = c.param_dtype;
    c.deterministic = (int)(next() % 2);
    c.prefetch_units = 1;
    c.bucket_bytes = 0;
    c.max_live_bytes = 0;
    c.offload_host_bytes = c.offload_chunk = 0;
    c.offload_threads = c.offload_allow_unpinned = c.ckpt_keep = 0;
    c.offload_budget_bytes = 0;
    /* The precision modes, without drawing (the sequence stays the one before them). */
    if (c.param_dtype == ZS_F32 && (iter / 2) % 2) c.master = ZS_MASTER_PARAMS;
    if ((iter / 4) % 2) c.moment_dtype = ZS_BF16;
    const int world = 1 + (int)(next() % 4);
    zs_plan p;
    ZS_EXPECT(zs_plan_make(&c, world, &p) == ZS_OK, "plan stage %d", c.stage);
    const int n = 1 + (int)(next() % MAXU);
    int64_t numel[MAXU];
    const int64_t sizes[5] = {1, 7, 64, 64, 1000}; /* repeats: ties */
    for (int i = 0; i < n; i++)
      numel[i] = next() % 3 ? sizes[next() % 5] : 1 + (int64_t)(next() % 3000);
    int frozen[MAXU]; /* without drawing: the random sequence stays the one before frozen units */
    for (int i = 0; i < n; i++)
      frozen[i] = iter % 2 && (iter / 2 + i) % 4 == 0;
    const zs_plan_units us = {NULL, numel, n, frozen, NULL, NULL, NULL, NULL};
    size_t none[ZS_MEM_NCAT];
    zs_plan_memory(&p, &c, world, &us, none);
    size_t dev = 0;
    for (int k = ZS_MEM_PARAMS; k <= ZS_MEM_BUFFERS; k++)
      dev += none[k];
    size_t total = 0;
    for (int i = 0; i < n; i++) {
      total += ref_moved(&p, &c, (size_t)numel[i], frozen[i]);
      ZS_EXPECT(zs_placement_moved(&p, &us, i) == ref_moved(&p, &c, (size_t)numel[i], frozen[i]),
                "unit %d of %lld elements: moves %zu, want %zu", i, (long long)numel[i],
                zs_placement_moved(&p, &us, i), ref_moved(&p, &c, (size_t)numel[i], frozen[i]));
    }
    /* Budgets from below the floor to above no offload, sorted ascending for monotonicity. */
    size_t budgets[8];
    for (int b = 0; b < 8; b++)
      budgets[b] = 1 + (size_t)(next() % (dev + dev / 8 + 2));
    budgets[0] = dev - total; /* exactly the floor: fits with every unit on the host */
    budgets[1] = dev;         /* exactly no offload */
    for (int i = 1; i < 8; i++)
      for (int j = i; j > 0 && budgets[j] < budgets[j - 1]; j--) {
        const size_t t = budgets[j];
        budgets[j] = budgets[j - 1];
        budgets[j - 1] = t;
      }
    int prev[MAXU];
    for (int b = 0; b < 8; b++) {
      c.offload_budget_bytes = budgets[b];
      zs_placement pl, again;
      zs_placement_make(&p, &c, world, &us, &pl);
      zs_placement_make(&p, &c, world, &us, &again);
      ZS_EXPECT(!memcmp(&pl, &again, sizeof pl), "the same inputs placed differently");
      int want[MAXU], got[MAXU], nh = 0;
      const int fits = ref_place(&p, &c, numel, frozen, n, dev, budgets[b], want);
      size_t left = dev, held = 0;
      for (int i = 0; i < n; i++) {
        got[i] = zs_placement_host(&pl, &p, &us, i);
        nh += got[i];
        if (got[i]) left -= ref_moved(&p, &c, (size_t)numel[i], frozen[i]);
        if (got[i]) held += ref_host(&p, &c, (size_t)numel[i], frozen[i]);
        ZS_EXPECT(got[i] == want[i],
                  "iter %d stage %d world %d budget %zu (device %zu): unit %d (%lld elements) on "
                  "the %s, want the %s",
                  iter, c.stage, world, budgets[b], dev, i, (long long)numel[i],
                  got[i] ? "host" : "device", want[i] ? "host" : "device");
      }
      ZS_EXPECT(pl.host_moved == held, "host bytes %zu, want %zu (master %d, moments %d)",
                pl.host_moved, held, c.master, (int)c.moment_dtype);
      ZS_EXPECT(pl.active && pl.fits == fits && pl.nhost == nh && pl.device_bytes == left &&
                    pl.floor_bytes == dev - total && pl.ceil_bytes == dev,
                "summary: fits %d/%d nhost %d/%d device %zu/%zu floor %zu/%zu", pl.fits, fits,
                pl.nhost, nh, pl.device_bytes, left, pl.floor_bytes, dev - total);
      if (fits) ZS_EXPECT(left <= budgets[b], "over the budget: %zu > %zu", left, budgets[b]);
      /* Largest first: no device unit moves more than a host unit; ties by index. */
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
          if (got[j] && !got[i]) {
            const size_t mi = ref_moved(&p, &c, (size_t)numel[i], frozen[i]);
            const size_t mj = ref_moved(&p, &c, (size_t)numel[j], frozen[j]);
            ZS_EXPECT(mj > mi || (mj == mi && j < i), "device unit %d (%zu) before host %d (%zu)",
                      i, mi, j, mj);
          }
      if (b > 0)
        for (int i = 0; i < n; i++)
          ZS_EXPECT(!got[i] || prev[i], "budget %zu offloads unit %d, smaller %zu does not",
                    budgets[b], i, budgets[b - 1]);
      memcpy(prev, got, sizeof got);
      /* The planner counts each unit where it is placed. */
      size_t m[ZS_MEM_NCAT];
      zs_plan_memory(&p, &c, world, &us, m);
      size_t d = 0;
      for (int k = ZS_MEM_PARAMS; k <= ZS_MEM_BUFFERS; k++)
        d += m[k];
      ZS_EXPECT(d == pl.device_bytes && m[ZS_MEM_HOST_PINNED] == pl.host_moved &&
                    m[ZS_MEM_BUFFERS] == none[ZS_MEM_BUFFERS],
                "plan memory: device %zu host %zu, placement %zu %zu", d, m[ZS_MEM_HOST_PINNED],
                pl.device_bytes, pl.host_moved);
      cases++;
      mixed += nh > 0 && nh < n;
      refused += !fits;
    }
  }
  printf("test_shard_placement: %d placements (%d mixed, %d over budget)\n", cases, mixed, refused);
  ZS_EXPECT(mixed > 1000 && refused > 100, "too few mixed (%d) or refused (%d) cases", mixed,
            refused);
  ZS_TEST_END("test_shard_placement");
}
