/* The plan's state table (src/shard/state_table.c, plan.c): for every stage, every value of the
 * three sharding switches, every offload, deterministic or not and both param dtypes, each state's
 * entry against expectations written here from docs/ARCHITECTURE.md ("One step, by stage": params
 * bΨ or bΨ/N, grads bΨ or bΨ/N, optimizer KΨ or KΨ/N; offloaded state in host_pinned), and
 * zs_plan_unit_bytes, which sums the table, against the per-category formula recomputed here. A
 * frozen unit's copy of each table (src/shard/frozen.c) keeps the params' entries and no
 * gradient or optimizer state: its bytes are the params' alone. The precision modes with every
 * offload and a budget's host table: the master exists exactly where the fp32 params' home and
 * the optimizer state live on different tiers (written here from zshard.h's zs_config.master),
 * the moments in their dtype on the optimizer's tier, and the bytes by the same rule. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shard/frozen.h"
#include "shard/placement.h"
#include "shard/plan.h"
#include "shard/state_table.h"
#include "zs_test.h"

/* A switch as the plan resolves it: ZS_SHARD_AS_STAGE follows the stage. */
static int want_switch(int sw, int from_stage) {
  return sw == ZS_SHARD_AS_STAGE ? from_stage : sw == ZS_SHARD_YES;
}

/* a + b * c saturating, as a model too large for size_t must read. */
static size_t sat(size_t a, size_t b, size_t c) {
  if (c && b > SIZE_MAX / c) return SIZE_MAX;
  return a > SIZE_MAX - b * c ? SIZE_MAX : a + b * c;
}

/* A host-arena array of b bytes: its whole pages (saturating). */
static size_t pages(size_t b) {
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return b > SIZE_MAX - (pg - 1) ? SIZE_MAX : (b + pg - 1) / pg * pg;
}

static void expect_entry(const char *what, const zs_state_table *t, zs_state s, zs_life life,
                         zs_tier tier, zs_dtype dt, int sharded, zs_mem_cat cat) {
  const zs_state_entry *e = &t->s[s];
  ZS_EXPECT(e->life == life, "%s state %d: life %d, want %d", what, (int)s, (int)e->life,
            (int)life);
  if (life == ZS_LIFE_NONE) return; /* the rest says nothing for a state that does not exist */
  ZS_EXPECT(e->tier == tier, "%s state %d: tier %d, want %d", what, (int)s, (int)e->tier,
            (int)tier);
  ZS_EXPECT(e->dtype == dt, "%s state %d: dtype %d, want %d", what, (int)s, (int)e->dtype, (int)dt);
  ZS_EXPECT(e->sharded == sharded, "%s state %d: sharded %d, want %d", what, (int)s, e->sharded,
            sharded);
  ZS_EXPECT(e->cat == cat, "%s state %d: category %d, want %d", what, (int)s, (int)e->cat,
            (int)cat);
}

/* The bytes one rank holds of a unit of n elements, by category (persistent state only), from the
   stage table: params b per element (a shard when sharded, in host_pinned when offloaded), grads b
   (a shard when sharded), optimizer 12 (a shard when sharded, host_pinned when offloaded). */
static void want_bytes(int sp, int sg, int so, int op, int oo, size_t b, int S, size_t n,
                       size_t out[ZS_MEM_NCAT]) {
  memset(out, 0, sizeof(size_t) * ZS_MEM_NCAT);
  const size_t N = so ? (size_t)S : 1;
  size_t P = n > SIZE_MAX - N ? SIZE_MAX : (n + N - 1) / N * N;
  if (P < N) P = N;
  const size_t s = P / N;
  const size_t params = sat(0, sp ? s : P, b), opt = sat(0, so ? s : P, 4);
  if (sp && op)
    out[ZS_MEM_HOST_PINNED] = pages(params);
  else
    out[ZS_MEM_PARAMS] = params;
  out[ZS_MEM_GRADS] = sat(0, sg ? s : P, b);
  if (oo) /* master, m and v: three arrays of whole pages in the host arena */
    out[ZS_MEM_HOST_PINNED] = sat(out[ZS_MEM_HOST_PINNED], pages(opt), 3);
  else
    out[ZS_MEM_OPTIMIZER] = sat(0, so ? s : P, 12);
}

static int check_config(int stage, int swp, int swg, int swo, int offload, int det, zs_dtype dt,
                        int S) {
  zs_config c;
  zs_config_default(&c);
  c.stage = stage;
  c.shard_params = swp;
  c.shard_grads = swg;
  c.shard_optimizer = swo;
  c.offload = offload;
  c.deterministic = det;
  c.param_dtype = dt;
  const int sp = want_switch(swp, stage >= 3), sg = want_switch(swg, stage >= 2),
            so = want_switch(swo, stage >= 1);
  const int op = (offload & ZS_OFFLOAD_PARAMS) != 0, oo = (offload & ZS_OFFLOAD_OPTIMIZER) != 0;
  const int valid = !((sg || sp) && !so) && !(op && !sp) && !(oo && !so);
  zs_plan p;
  const zs_status rc = zs_plan_make(&c, S, &p);
  char what[160];
  snprintf(what, sizeof what, "stage %d switches %d/%d/%d offload %d det %d %s S %d", stage, swp,
           swg, swo, offload, det, dt == ZS_BF16 ? "bf16" : "fp32", S);
  ZS_EXPECT((rc == ZS_OK) == valid, "%s: zs_plan_make says %s, want %s", what, zs_status_str(rc),
            valid ? "OK" : "invalid");
  if (rc != ZS_OK) return 0;
  const zs_state_table *t = &p.table;
  const zs_life PER = ZS_LIFE_PERSISTENT, TRA = ZS_LIFE_TRANSIENT, NONE = ZS_LIFE_NONE;
  const zs_tier DEV = ZS_TIER_DEVICE, HOST = ZS_TIER_HOST;
  /* Params: full and persistent, or a persistent shard (host when offloaded) and a gathered copy
     while gathered. */
  expect_entry(what, t, ZS_ST_PARAM_FULL, sp ? TRA : PER, DEV, dt, 0,
               sp ? ZS_MEM_BUFFERS : ZS_MEM_PARAMS);
  expect_entry(what, t, ZS_ST_PARAM_SHARD, sp ? PER : NONE, op ? HOST : DEV, dt, 1,
               op ? ZS_MEM_HOST_PINNED : ZS_MEM_PARAMS);
  /* Gradients: full and persistent, or a persistent shard and a full buffer until reduced. */
  expect_entry(what, t, ZS_ST_GRAD_FULL, sg ? TRA : PER, DEV, dt, 0,
               sg ? ZS_MEM_BUFFERS : ZS_MEM_GRADS);
  expect_entry(what, t, ZS_ST_GRAD_SHARD, sg ? PER : NONE, DEV, dt, 1, ZS_MEM_GRADS);
  /* The deterministic staging buffer of a full gradient. */
  expect_entry(what, t, ZS_ST_GRAD_STAGE, det && !sg ? TRA : NONE, DEV, dt, 0, ZS_MEM_BUFFERS);
  /* fp32 master, m, v: over the unit or the shard, device or host arena. */
  for (int k = ZS_ST_MASTER; k <= ZS_ST_OPT1; k++)
    expect_entry(what, t, (zs_state)k, PER, oo ? HOST : DEV, ZS_F32, so,
                 oo ? ZS_MEM_HOST_PINNED : ZS_MEM_OPTIMIZER);
  /* The persistent state of each role. */
  ZS_EXPECT(zs_state_home(t, ZS_ST_PARAM_FULL) == (sp ? ZS_ST_PARAM_SHARD : ZS_ST_PARAM_FULL),
            "%s: params home", what);
  ZS_EXPECT(zs_state_home(t, ZS_ST_GRAD_SHARD) == (sg ? ZS_ST_GRAD_SHARD : ZS_ST_GRAD_FULL),
            "%s: gradients home", what);
  /* Ranges over a laid-out unit: shard states cover this rank's shard, the others the unit. */
  zs_layout l = {0};
  l.padded = 12;
  l.shard = 4;
  l.shard_off = 8;
  for (int k = 0; k < ZS_ST_N; k++) {
    size_t off, n;
    zs_state_range(t, (zs_state)k, &l, &off, &n);
    const int sh = t->s[k].sharded;
    ZS_EXPECT(off == (sh ? 8u : 0u) && n == (sh ? 4u : 12u), "%s state %d: range [%zu, +%zu)", what,
              k, off, n);
  }
  /* The planner's sum of the table against the formula, for sizes below, at and above the shard
     count, and one so large that it saturates. */
  const size_t sizes[] = {1, 2, 7, 1000, 4096 + 3, SIZE_MAX / 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t got[ZS_MEM_NCAT] = {0}, want[ZS_MEM_NCAT];
    zs_plan_unit_bytes(&p, sizes[i], got);
    want_bytes(sp, sg, so, op, oo, dt == ZS_BF16 ? 2 : 4, S, sizes[i], want);
    for (int k = 0; k < ZS_MEM_NCAT; k++)
      ZS_EXPECT(got[k] == want[k], "%s n %zu: category %d holds %zu bytes, want %zu", what,
                sizes[i], k, got[k], want[k]);
    /* Frozen: the params' bytes only (their host part when offloaded), nothing else. */
    zs_state_table ft = *t;
    zs_state_table_freeze(&ft);
    ZS_EXPECT(zs_state_table_frozen(&ft) && !zs_state_table_frozen(t), "%s: frozen flag", what);
    for (int k = ZS_ST_PARAM_FULL; k <= ZS_ST_PARAM_SHARD; k++)
      ZS_EXPECT(!memcmp(&ft.s[k], &t->s[k], sizeof ft.s[k]), "%s: frozen params entry %d", what, k);
    size_t fgot[ZS_MEM_NCAT] = {0}, pwant[ZS_MEM_NCAT];
    zs_plan_unit_bytes_of(&p, &ft, sizes[i], fgot);
    want_bytes(sp, sg, so, op, 0, dt == ZS_BF16 ? 2 : 4, S, sizes[i], pwant);
    ZS_EXPECT(fgot[ZS_MEM_PARAMS] == pwant[ZS_MEM_PARAMS] && fgot[ZS_MEM_GRADS] == 0 &&
                  fgot[ZS_MEM_OPTIMIZER] == 0 && fgot[ZS_MEM_BUFFERS] == 0 &&
                  fgot[ZS_MEM_HOST_PINNED] == pwant[ZS_MEM_HOST_PINNED],
              "%s n %zu: frozen unit holds %zu/%zu/%zu/%zu bytes", what, sizes[i],
              fgot[ZS_MEM_PARAMS], fgot[ZS_MEM_GRADS], fgot[ZS_MEM_OPTIMIZER],
              fgot[ZS_MEM_HOST_PINNED]);
  }
  return 1;
}

/* The precision modes of one valid configuration (fp32 params): master_params x moment dtype,
   the plan's table and a budget's host table (offload 0 only, as budgets are). The master
   exists unless master_params and the params' home (the shard when sharded, host when offloaded
   with it) sits on the optimizer state's tier; m and v in their dtype beside it; the host_pinned
   bytes of a unit of n elements by hand. Returns the tables checked. */
static int check_modes(int stage, int offload, int S) {
  int checked = 0;
  for (int mp = 0; mp <= 1; mp++)
    for (int m16 = 0; m16 <= 1; m16++) {
      zs_config c;
      zs_config_default(&c);
      c.stage = stage;
      c.offload = offload;
      c.param_dtype = ZS_F32;
      c.master = mp ? ZS_MASTER_PARAMS : ZS_MASTER_FP32;
      c.moment_dtype = m16 ? ZS_BF16 : ZS_F32;
      zs_plan p;
      if (zs_plan_make(&c, S, &p) != ZS_OK) continue;
      const int sp = stage >= 3, so = stage >= 1;
      for (int host = 0; host <= (offload ? 0 : so); host++) {
        zs_state_table t;
        zs_placement_table(&p, host, &t);
        const int oo = host || (offload & ZS_OFFLOAD_OPTIMIZER) != 0;
        const int ph = sp && (host || (offload & ZS_OFFLOAD_PARAMS) != 0);
        const int master = !mp || ph != oo;
        char what[128];
        snprintf(what, sizeof what, "stage %d offload %d S %d master_params %d m16 %d host %d",
                 stage, offload, S, mp, m16, host);
        const zs_mem_cat oc = oo ? ZS_MEM_HOST_PINNED : ZS_MEM_OPTIMIZER;
        const zs_tier ot = oo ? ZS_TIER_HOST : ZS_TIER_DEVICE;
        expect_entry(what, &t, ZS_ST_MASTER, master ? ZS_LIFE_PERSISTENT : ZS_LIFE_NONE, ot, ZS_F32,
                     so, oc);
        for (int k = ZS_ST_OPT0; k <= ZS_ST_OPT1; k++)
          expect_entry(what, &t, (zs_state)k, ZS_LIFE_PERSISTENT, ot, m16 ? ZS_BF16 : ZS_F32, so,
                       oc);
        const size_t n = 1001, N = so ? (size_t)S : 1, sh = (n + N - 1) / N, P = sh * N;
        const size_t r = so ? sh : P, opt = r * ((master ? 4 : 0) + (m16 ? 4 : 8));
        const size_t host_opt = (master ? pages(4 * r) : 0) + 2 * pages((m16 ? 2 : 4) * r);
        const size_t want_host = (oo ? host_opt : 0) + (ph ? pages(4 * sh) : 0);
        size_t got[ZS_MEM_NCAT] = {0};
        zs_plan_unit_bytes_of(&p, &t, n, got);
        ZS_EXPECT(got[ZS_MEM_HOST_PINNED] == want_host && got[ZS_MEM_OPTIMIZER] == (oo ? 0 : opt),
                  "%s: host %zu optimizer %zu, want %zu %zu", what, got[ZS_MEM_HOST_PINNED],
                  got[ZS_MEM_OPTIMIZER], want_host, oo ? (size_t)0 : opt);
        checked++;
      }
    }
  return checked;
}

int main(void) {
  const int sw[3] = {ZS_SHARD_AS_STAGE, ZS_SHARD_YES, ZS_SHARD_NO};
  const int offloads[4] = {0, ZS_OFFLOAD_OPTIMIZER, ZS_OFFLOAD_PARAMS,
                           ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS};
  const zs_dtype dts[2] = {ZS_F32, ZS_BF16};
  int valid = 0;
  for (int stage = 0; stage <= 3; stage++)
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        for (int o = 0; o < 3; o++)
          for (int f = 0; f < 4; f++)
            for (int det = 0; det <= 1; det++)
              for (int d = 0; d < 2; d++)
                for (int S = 1; S <= 4; S++)
                  valid += check_config(stage, sw[a], sw[b], sw[o], offloads[f], det, dts[d], S);
  ZS_EXPECT(valid > 0, "no valid configuration was checked");
  /* The precision modes: a table whose params are the master (no master entry) with bf16
     moments is still a trainable unit's; frozen, it has no m or v either. */
  for (int so = 0; so <= 1; so++) {
    zs_state_table pt, ft;
    zs_state_table_make(&pt, so, so, so, 0, 0, 0, ZS_F32, ZS_F32, ZS_MASTER_PARAMS, ZS_BF16, 2);
    ft = pt;
    zs_state_table_freeze(&ft);
    ZS_EXPECT(!zs_state_table_frozen(&pt) && zs_state_table_frozen(&ft),
              "params-as-master table (sharded %d): frozen flag", so);
    for (int k = ZS_ST_GRAD_FULL; k < ZS_ST_N; k++)
      ZS_EXPECT(ft.s[k].life == ZS_LIFE_NONE, "frozen params-as-master table: state %d exists", k);
  }
  /* fp32 accumulation of bf16 gradients: the persistent gradient (full, or the shard) is fp32;
     the buffer the backward writes stays bf16: a transient full buffer when sharded, else a
     per-micro-step staging buffer. */
  for (int sg = 0; sg <= 1; sg++) {
    zs_state_table at;
    zs_state_table_make(&at, sg, sg, sg, 0, 0, 0, ZS_BF16, ZS_F32, ZS_MASTER_FP32, ZS_F32, 2);
    const zs_state_entry *full = &at.s[ZS_ST_GRAD_FULL], *sh = &at.s[ZS_ST_GRAD_SHARD],
                         *st = &at.s[ZS_ST_GRAD_STAGE];
    ZS_EXPECT(
        sg ? full->life == ZS_LIFE_TRANSIENT && full->dtype == ZS_BF16 &&
                 sh->life == ZS_LIFE_PERSISTENT && sh->dtype == ZS_F32 && st->life == ZS_LIFE_NONE
           : full->life == ZS_LIFE_PERSISTENT && full->dtype == ZS_F32 &&
                 sh->life == ZS_LIFE_NONE && st->life == ZS_LIFE_TRANSIENT && st->dtype == ZS_BF16,
        "fp32 accumulation (sharded grads %d): full %d/%d shard %d/%d stage %d/%d", sg, full->life,
        (int)full->dtype, sh->life, (int)sh->dtype, st->life, (int)st->dtype);
    ZS_EXPECT(zs_state_bytes(&at, zs_state_home(&at, ZS_ST_GRAD_FULL), 12, 4) == (sg ? 16u : 48u),
              "fp32 accumulator bytes (sharded grads %d)", sg);
  }
  /* The remainder master: no fp32 master, a 2-byte remainder placed and sized as the master was
     (the unit or the shard, the optimizer's category); none in the other modes; frozen, none. */
  for (int so = 0; so <= 1; so++) {
    zs_state_table rt, ft, dt;
    zs_state_table_make(&rt, so, so, so, 0, 0, 1, ZS_BF16, ZS_BF16, ZS_MASTER_REMAINDER, ZS_F32, 2);
    zs_state_table_make(&dt, so, so, so, 0, 0, 1, ZS_BF16, ZS_BF16, ZS_MASTER_FP32, ZS_F32, 2);
    const zs_state_entry *r = &rt.s[ZS_ST_MASTER_REM];
    ZS_EXPECT(rt.s[ZS_ST_MASTER].life == ZS_LIFE_NONE && r->life == ZS_LIFE_PERSISTENT &&
                  r->dtype == ZS_BF16 && r->sharded == so && r->tier == ZS_TIER_DEVICE &&
                  r->cat == ZS_MEM_OPTIMIZER,
              "remainder table (sharded %d): master %d, remainder life %d dtype %d sharded %d", so,
              rt.s[ZS_ST_MASTER].life, r->life, (int)r->dtype, r->sharded);
    ZS_EXPECT(zs_state_bytes(&rt, ZS_ST_MASTER_REM, 12, 4) == (so ? 8u : 24u),
              "remainder bytes (sharded %d)", so);
    ZS_EXPECT(dt.s[ZS_ST_MASTER_REM].life == ZS_LIFE_NONE &&
                  dt.s[ZS_ST_MASTER].life == ZS_LIFE_PERSISTENT,
              "fp32-master table has a remainder");
    ft = rt;
    zs_state_table_freeze(&ft);
    ZS_EXPECT(!zs_state_table_frozen(&rt) && zs_state_table_frozen(&ft) &&
                  ft.s[ZS_ST_MASTER_REM].life == ZS_LIFE_NONE,
              "frozen remainder table keeps its remainder");
  }
  int modes = 0;
  for (int stage = 0; stage <= 3; stage++)
    for (int f = 0; f < 4; f++)
      for (int S = 1; S <= 4; S++)
        modes += check_modes(stage, offloads[f], S);
  ZS_EXPECT(modes > 0, "no precision mode was checked");
  printf("test_shard_state_table: %d valid configurations, %d precision-mode tables checked\n",
         valid, modes);
  ZS_TEST_END("test_shard_state_table");
}
