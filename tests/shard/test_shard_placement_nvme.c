/* The NVMe tier's placement (src/shard/placement.c, zs_config.nvme_path) against a reference
 * written here: for random unit sizes (many ties), stages, world sizes, frozen units, host tiers
 * (the ZS_OFFLOAD_* bits, or an offload budget) and host caps (offload_host_bytes), the units
 * whose optimizer state goes to the tier must be exactly the greedy prefix of (optimizer-state
 * bytes descending, unit index ascending) over the host-tier units that brings the host bytes
 * (every unit's host-arena bytes, plus the tier's staging of 3 x offload_chunk x the mode's
 * bytes per element once a unit is there) within the cap, with the bytes recomputed here from the
 * stage rule and the precision mode (per element of this rank's shard: an fp32 master 4, or the
 * remainders 2, or none in lean mode; m and v 4 or 2 each; a param shard on the host stays
 * there; in memory each array holds whole pages, on disk its bytes). Then the properties: never
 * over the cap when it fits (every host-tier unit on the tier when it does not), monotone in the
 * cap, the same answer twice, the unit tables (master, m and v on ZS_TIER_NVME exactly for the
 * tier's units), and zs_plan_memory: device categories unchanged by the tier, host_pinned equal to
 * the placement's host bytes. Last, the configurations the tier refuses (zs_config_validate) and
 * ZS_NVME_PATH (zs_config_resolve). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "shard/placement.h"
#include "shard/plan.h"
#include "shard/plan_memory.h"
#include "zs_test.h"

#define MAXU 12

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void) {
  return zs_test_rand(&rng);
}

/* A host-arena array's bytes: whole pages, each array a region of its own. */
static size_t pages(size_t b) {
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return b ? (b + pg - 1) / pg * pg : pg;
}

/* The reference greedy: nvme[i] for the cap; returns 1 when it fits. host_b[i]: unit i's host
   bytes, opt[i]: its optimizer-state bytes on the host (0: not on the host tier; in whole pages
   per array), dsk[i]: the same state's bytes on disk (as they are). */
static int ref_nvme(const size_t *host_b, const size_t *opt, const size_t *dsk, int n, size_t cap,
                    size_t staging, int *nvme, size_t *host_out, size_t *disk_out) {
  size_t h = 0, freed = 0, disk = 0;
  int order[MAXU], k = 0;
  for (int i = 0; i < n; i++) {
    h += host_b[i];
    nvme[i] = 0;
    if (opt[i]) order[k++] = i;
  }
  for (int i = 1; i < k; i++) /* insertion sort: bytes descending, index ascending */
    for (int j = i; j > 0 && opt[order[j]] > opt[order[j - 1]]; j--) {
      const int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  if (h > cap)
    for (int j = 0; j < k && h - freed + staging > cap; j++) {
      nvme[order[j]] = 1;
      freed += opt[order[j]];
      disk += dsk[order[j]];
    }
  *host_out = h - freed + (freed ? staging : 0);
  *disk_out = disk;
  return *host_out <= cap;
}

/* The tier's refusals and its variable. */
static void check_config(void) {
  zs_config c;
  zs_config_default(&c);
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_host_bytes = 1 << 20;
  c.nvme_path = "/some/dir";
  zs_config r;
  ZS_EXPECT(zs_config_complete(&c, &r) == ZS_OK && zs_config_validate(&r) == ZS_OK,
            "a tier with optimizer offload and a cap: %s", zs_last_error());
  struct {
    const char *what, *says;
    void (*change)(zs_config *);
  } bad[] = {
      {"no host tier", "without a host tier", NULL},
      {"no cap", "without offload_host_bytes", NULL},
      {"empty path", "nvme_path is empty", NULL},
  };
  for (int k = 0; k < (int)(sizeof bad / sizeof bad[0]); k++) {
    zs_config b = r;
    if (k == 0) b.offload = 0;
    if (k == 1) b.offload_host_bytes = 0;
    if (k == 2) b.nvme_path = "";
    ZS_EXPECT_STATUS(zs_config_validate(&b), ZS_ERR_INVALID_ARG);
    ZS_EXPECT(strstr(zs_last_error(), bad[k].says) != NULL, "%s: '%s' does not say '%s'",
              bad[k].what, zs_last_error(), bad[k].says);
  }
  /* Every precision mode has the tier (bf16 params where the mode needs them). */
  for (int m = 0; m < 4; m++)
    for (int md = 0; md < 2; md++) {
      zs_config pm = r;
      pm.master = m == 0   ? ZS_MASTER_FP32
                  : m == 1 ? ZS_MASTER_PARAMS
                  : m == 2 ? ZS_MASTER_REMAINDER
                           : ZS_MASTER_LEAN;
      pm.moment_dtype = md ? ZS_BF16 : ZS_F32;
      if (m >= 2) pm.param_dtype = ZS_BF16;
      ZS_EXPECT(zs_config_validate(&pm) == ZS_OK, "a tier with master %d, moments %d: %s", m, md,
                zs_last_error());
    }
  /* The tier runs on either device (on CUDA the copy pipeline stages gradients and params). */
  zs_config cu = r;
  cu.device = ZS_DEVICE_CUDA;
  ZS_EXPECT(zs_config_validate(&cu) == ZS_OK, "a tier on CUDA: %s", zs_last_error());
  /* A budget is a host tier too. */
  zs_config b = r;
  b.offload = 0;
  b.offload_budget_bytes = 1 << 20;
  ZS_EXPECT(zs_config_validate(&b) == ZS_OK, "a tier with a budget: %s", zs_last_error());
  /* ZS_NVME_PATH: taken when the field is NULL, the program's string wins. */
  setenv("ZS_NVME_PATH", "/from/env", 1);
  zs_config d;
  zs_config_default(&d);
  char src[4096];
  ZS_EXPECT(zs_config_resolve(&d, &r, src, sizeof src) == ZS_OK && r.nvme_path &&
                !strcmp(r.nvme_path, "/from/env") &&
                strstr(src, "nvme_path=/from/env (ZS_NVME_PATH)") != NULL,
            "ZS_NVME_PATH not taken: %s / %s", r.nvme_path ? r.nvme_path : "NULL", src);
  d.nvme_path = "/from/program";
  ZS_EXPECT(zs_config_resolve(&d, &r, NULL, 0) == ZS_OK && !strcmp(r.nvme_path, "/from/program"),
            "the program's nvme_path lost to ZS_NVME_PATH");
  unsetenv("ZS_NVME_PATH");
  d.nvme_path = NULL;
  ZS_EXPECT(zs_config_resolve(&d, &r, NULL, 0) == ZS_OK && r.nvme_path == NULL,
            "no tier without ZS_NVME_PATH");
}

int main(void) {
  check_config();
  int cases = 0, mixed = 0, refused = 0;
  for (int iter = 0; iter < 2000; iter++) {
    zs_config c;
    zs_config_default(&c);
    c.stage = 1 + (int)(next() % 3);
    c.param_dtype = next() % 2 ? ZS_BF16 : ZS_F32;
    /* The precision mode: fp32 master, remainder master or lean (bf16 params for the last two),
       moments fp32 or bf16. mb: the master file's bytes per element; mm: a moment's. */
    const int mode = (int)(next() % 4);
    c.master = mode == 0   ? ZS_MASTER_FP32
               : mode == 1 ? ZS_MASTER_REMAINDER
               : mode == 2 ? ZS_MASTER_LEAN
                           : ZS_MASTER_PARAMS;
    if (mode == 1 || mode == 2) c.param_dtype = ZS_BF16;
    if (mode == 3) c.param_dtype = ZS_F32; /* fp32 params: the params are the master */
    c.moment_dtype = next() % 2 ? ZS_BF16 : ZS_F32;
    /* ZS_MASTER_PARAMS: an fp32 master file unless the unit's param shard is in the arena with
       its state (then those params are the master); the staging is sized for the file anyway. */
    const size_t mb = mode == 0 || mode == 3 ? 4
                      : mode == 1            ? 2
                                             : 0,
                 mm = c.moment_dtype == ZS_BF16 ? 2 : 4;
    c.reduce_dtype = c.param_dtype;
    c.deterministic = (int)(next() % 2);
    c.prefetch_units = 1;
    c.bucket_bytes = c.max_live_bytes = 0;
    c.offload_threads = c.offload_allow_unpinned = c.ckpt_keep = 0;
    c.offload_chunk = 1 + next() % 64;
    const int budget = iter % 3 == 2; /* else the offload bits */
    c.offload =
        budget ? 0u : ZS_OFFLOAD_OPTIMIZER | (c.stage == 3 && next() % 2 ? ZS_OFFLOAD_PARAMS : 0);
    c.offload_budget_bytes = 0;
    const int world = 1 + (int)(next() % 4);
    zs_plan p;
    ZS_EXPECT(zs_plan_make(&c, world, &p) == ZS_OK, "plan stage %d", c.stage);
    const int n = 1 + (int)(next() % MAXU);
    int64_t numel[MAXU];
    const int64_t sizes[5] = {1, 7, 64, 64, 1000}; /* repeats: ties */
    for (int i = 0; i < n; i++)
      numel[i] = next() % 3 ? sizes[next() % 5] : 1 + (int64_t)(next() % 3000);
    int frozen[MAXU];
    for (int i = 0; i < n; i++)
      frozen[i] = iter % 2 && (iter / 2 + i) % 4 == 0;
    const zs_plan_units us = {NULL, numel, n, frozen, NULL, NULL, NULL, NULL};
    size_t nonvme[ZS_MEM_NCAT];
    if (budget) { /* somewhere between every unit on the host and none */
      zs_placement b;
      c.offload_budget_bytes = SIZE_MAX - 1;
      zs_placement_make(&p, &c, world, &us, &b);
      c.offload_budget_bytes = b.floor_bytes + next() % (b.ceil_bytes - b.floor_bytes + 1);
    }
    zs_plan_memory(&p, &c, world, &us, nonvme);
    /* The reference bytes, the budget's host units taken from the placement (its own test). */
    zs_placement b0;
    zs_placement_make(&p, &c, world, &us, &b0);
    const size_t S = (size_t)p.nshards, ps = c.param_dtype == ZS_BF16 ? 2 : 4;
    size_t host_b[MAXU], opt[MAXU], dsk[MAXU], total = 0;
    int has_master[MAXU];
    for (int i = 0; i < n; i++) {
      const size_t s = ((size_t)numel[i] + S - 1) / S;
      const int on_host = budget ? zs_placement_host(&b0, &p, &us, i) : 1;
      const int shard_host =
          budget ? on_host && p.shard_params : (c.offload & ZS_OFFLOAD_PARAMS) && p.shard_params;
      const size_t mbi = mode == 3 && shard_host ? 0 : mb;
      const int has_opt = on_host && !frozen[i];
      opt[i] = has_opt ? (mbi ? pages(mbi * s) : 0) + 2 * pages(mm * s) : 0;
      dsk[i] = has_opt ? (mbi + 2 * mm) * s : 0;
      has_master[i] = mbi > 0;
      host_b[i] = opt[i] + (shard_host ? pages(ps * s) : 0);
      total += host_b[i];
      ZS_EXPECT(zs_placement_nvme_bytes(&p, &us, i, budget && on_host) == opt[i],
                "unit %d: %zu NVMe bytes, want %zu", i,
                zs_placement_nvme_bytes(&p, &us, i, budget && on_host), opt[i]);
    }
    ZS_EXPECT(nonvme[ZS_MEM_HOST_PINNED] == total, "host bytes %zu, want %zu",
              nonvme[ZS_MEM_HOST_PINNED], total);
    const size_t staging = 3 * (mb + 2 * mm) * c.offload_chunk;
    size_t caps[8];
    for (int k = 0; k < 8; k++)
      caps[k] = 1 + (size_t)(next() % (total + staging + 2));
    caps[0] = total;   /* exactly the host bytes: nothing on the tier */
    caps[1] = staging; /* the least a tier could use */
    for (int i = 1; i < 8; i++)
      for (int j = i; j > 0 && caps[j] < caps[j - 1]; j--) {
        const size_t t = caps[j];
        caps[j] = caps[j - 1];
        caps[j - 1] = t;
      }
    c.nvme_path = "/unused";
    int prev[MAXU];
    for (int k = 0; k < 8; k++) {
      c.offload_host_bytes = caps[k];
      zs_placement pl, again;
      zs_placement_make(&p, &c, world, &us, &pl);
      zs_placement_make(&p, &c, world, &us, &again);
      ZS_EXPECT(!memcmp(&pl, &again, sizeof pl), "the same inputs placed differently");
      int want[MAXU], got[MAXU], nn = 0;
      size_t host_want, disk_want;
      const int fits =
          ref_nvme(host_b, opt, dsk, n, caps[k], staging, want, &host_want, &disk_want);
      for (int i = 0; i < n; i++) {
        got[i] = zs_placement_nvme(&pl, &p, &us, i);
        nn += got[i];
        ZS_EXPECT(got[i] == want[i],
                  "iter %d stage %d world %d cap %zu (host %zu, staging %zu): unit %d (%lld "
                  "elements, %zu bytes) %s the tier, want %s",
                  iter, c.stage, world, caps[k], total, staging, i, (long long)numel[i], opt[i],
                  got[i] ? "on" : "off", want[i] ? "on" : "off");
        zs_state_table t;
        zs_placement_unit_of(&pl, &p, &us, i, &t);
        for (int s = 0; s < ZS_ST_N; s++) {
          const int on =
              zs_state_is(&t, (zs_state)s, ZS_LIFE_PERSISTENT) && t.s[s].tier == ZS_TIER_NVME;
          const int want_on = want[i] && (s == ZS_ST_OPT0 || s == ZS_ST_OPT1 ||
                                          (s == ZS_ST_MASTER && mb == 4 && has_master[i]) ||
                                          (s == ZS_ST_MASTER_REM && mb == 2));
          ZS_EXPECT(on == want_on, "unit %d state %d on the tier: %d, want %d", i, s, on, want_on);
        }
      }
      ZS_EXPECT(pl.nvme && pl.host_cap == caps[k] && pl.nnvme == nn && pl.host_fits == fits &&
                    pl.host_bytes == host_want && pl.disk_bytes == disk_want &&
                    pl.staging_bytes == (nn ? staging : 0),
                "summary: nnvme %d/%d fits %d/%d host %zu/%zu disk %zu/%zu", pl.nnvme, nn,
                pl.host_fits, fits, pl.host_bytes, host_want, pl.disk_bytes, disk_want);
      if (fits)
        ZS_EXPECT(pl.host_bytes <= caps[k], "over the cap: %zu > %zu", pl.host_bytes, caps[k]);
      if (k > 0)
        for (int i = 0; i < n; i++)
          ZS_EXPECT(!got[i] || prev[i], "cap %zu puts unit %d on the tier, smaller %zu does not",
                    caps[k], i, caps[k - 1]);
      memcpy(prev, got, sizeof got);
      /* The planner: device bytes as without the tier, host bytes the placement's. */
      size_t m[ZS_MEM_NCAT];
      zs_plan_memory(&p, &c, world, &us, m);
      for (int q = ZS_MEM_PARAMS; q <= ZS_MEM_BUFFERS; q++)
        ZS_EXPECT(m[q] == nonvme[q], "category %d: %zu with the tier, %zu without", q, m[q],
                  nonvme[q]);
      ZS_EXPECT(m[ZS_MEM_HOST_PINNED] == pl.host_bytes, "plan host %zu, placement %zu",
                m[ZS_MEM_HOST_PINNED], pl.host_bytes);
      cases++;
      mixed += nn > 0 && nn < n;
      refused += !fits;
    }
    c.nvme_path = NULL;
  }
  printf("test_shard_placement_nvme: %d placements (%d mixed, %d over the cap)\n", cases, mixed,
         refused);
  ZS_EXPECT(mixed > 1000 && refused > 100, "too few mixed (%d) or refused (%d) cases", mixed,
            refused);
  ZS_TEST_END("test_shard_placement_nvme");
}
