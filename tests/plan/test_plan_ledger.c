/* The planner against the ledger: for a dozen configurations (every stage, odd unit sizes that
 * need padding, hybrid groups, bf16 and fp32, reduction in another dtype, buckets, deterministic
 * mode, offload, the switches), zs_plan_model's figures from bare element counts are compared with
 * what a real engine allocates (zs_engine_memory, the ledger) over two steps of two micro-steps
 * that gather, write the gradient, signal grads_ready and release every unit, one held at a
 * time (held_units = 1). Model states (params, grads, optimizer, host_pinned) must be equal to
 * the byte; the ledger's buffers peak must lie under the plan's bound, and within the norm bins
 * (which live alone, at zs_engine_step) of it: a bound that is exact, not just safe. All units
 * have the same size, so the largest unit's moment is every unit's. Every configuration runs
 * twice: all units trainable, and units 1 and 2 frozen (zs_unit_freeze, zs_plan_model_frozen:
 * params only, no gradient or optimizer byte). The offload-budget cases set a budget part of the
 * way from the least that fits (every unit on the host) to no offload, so that some units are on
 * the host and some on the device (ties: the first units go), and check the same equalities and
 * that the engine placed as many units as zs_plan_placement_frozen says; with units 1 and 2
 * frozen, those move only their param shard (sharded params) or nothing, and the planner still
 * equals the ledger to the byte. And the budget's refusals (over budget at commit, with the least
 * budget; a budget beside offload bits or without sharded optimizer state) and its environment
 * variable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zs_test.h"

enum { NUNITS = 4 };
/* 1001 = 7 * 11 * 13 elements per unit: padded at 2, 3 and 4 ranks. */
static const zs_tensor_desc unit_t[1] = {{"w", 2, {77, 13, 0, 0}, 0}};

typedef struct {
  const char *name;
  int stage, group, prefetch, det, shard_params;
  zs_dtype pd, rd;
  unsigned offload;
  size_t bucket;
  int master;     /* zs_config.master (0: ZS_MASTER_FP32) */
  int m16;        /* zs_config.moment_dtype = ZS_BF16 */
  int budget_pct; /* offload budget: this % of the way from the floor to no offload; 0 = none */
} cfg_case;

static const cfg_case cases[] = {
    {"stage 0 fp32", 0, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 0 deterministic (ordered all-reduce)", 0, 0, 1, 1, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 1 bf16", 1, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, 0, 0, 0},
    {"stage 1 optimizer offload", 1, 0, 1, 0, 0, ZS_F32, ZS_F32, ZS_OFFLOAD_OPTIMIZER, 0, 0, 0, 0},
    {"stage 2 fp32", 2, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 2 bf16 reduced in fp32", 2, 0, 1, 0, 0, ZS_BF16, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 2 deterministic", 2, 0, 1, 1, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 3 prefetch 1", 3, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 3 bf16 prefetch 2", 3, 0, 2, 0, 0, ZS_BF16, ZS_BF16, 0, 0, 0, 0, 0},
    {"stage 3 bucket 256 bytes", 3, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 256, 0, 0, 0},
    {"stage 3 hybrid groups of 2", 3, 2, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 3 hybrid deterministic", 3, 2, 0, 1, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 3 optimizer + params offload bf16", 3, 0, 1, 0, 0, ZS_BF16, ZS_BF16,
     ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS, 0, 0, 0, 0},
    {"stage 1 + shard_params (switch)", 1, 0, 1, 0, 1, ZS_F32, ZS_F32, 0, 0, 0, 0, 0},
    {"stage 0 params are the master", 0, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, ZS_MASTER_PARAMS, 0, 0},
    {"stage 1 params are the master", 1, 0, 1, 1, 0, ZS_F32, ZS_F32, 0, 0, ZS_MASTER_PARAMS, 0, 0},
    {"stage 3 params are the master", 3, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, ZS_MASTER_PARAMS, 0, 0},
    {"stage 0 bf16 moments", 0, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, 0, 1, 0},
    {"stage 2 bf16 moments, params the master", 2, 0, 1, 1, 0, ZS_F32, ZS_F32, 0, 0,
     ZS_MASTER_PARAMS, 1, 0},
    {"stage 3 bf16 moments", 3, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0, 1, 0},
    {"stage 0 lean", 0, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, ZS_MASTER_LEAN, 0, 0},
    {"stage 1 lean deterministic", 1, 0, 1, 1, 0, ZS_BF16, ZS_F32, 0, 0, ZS_MASTER_LEAN, 0, 0},
    {"stage 2 lean, bf16 moments", 2, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, ZS_MASTER_LEAN, 1, 0},
    {"stage 3 lean, bf16 moments", 3, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, ZS_MASTER_LEAN, 1, 0},
    {"stage 3 lean hybrid groups of 2", 3, 2, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, ZS_MASTER_LEAN, 0,
     0},
    {"stage 0 remainder master", 0, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, ZS_MASTER_REMAINDER, 0, 0},
    {"stage 1 remainder master, bf16 moments", 1, 0, 1, 1, 0, ZS_BF16, ZS_BF16, 0, 0,
     ZS_MASTER_REMAINDER, 1, 0},
    {"stage 2 remainder master", 2, 0, 1, 0, 0, ZS_BF16, ZS_F32, 0, 0, ZS_MASTER_REMAINDER, 0, 0},
    {"stage 3 remainder master, bf16 moments", 3, 0, 2, 0, 0, ZS_BF16, ZS_BF16, 0, 0,
     ZS_MASTER_REMAINDER, 1, 0},
    {"stage 3 hybrid groups of 2 remainder master", 3, 2, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0,
     ZS_MASTER_REMAINDER, 0, 0},
    {"stage 1 budget 50%", 1, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 50},
    {"stage 2 deterministic budget 80%", 2, 0, 1, 1, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 80},
    {"stage 3 bf16 budget 30% (param shards move)", 3, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, 0, 0,
     30},
    {"stage 3 hybrid groups of 2 budget 50%", 3, 2, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0, 0, 50},
    {"stage 1 + shard_params budget 60%", 1, 0, 1, 0, 1, ZS_F32, ZS_F32, 0, 0, 0, 0, 60},
    /* The precision modes on the host tier: a host master where the params stay on the device,
       the arena's params as the master where they move there too, bf16 moments in the arena. */
    {"stage 1 optimizer offload, params the master", 1, 0, 1, 0, 0, ZS_F32, ZS_F32,
     ZS_OFFLOAD_OPTIMIZER, 0, ZS_MASTER_PARAMS, 0, 0},
    {"stage 2 optimizer offload, bf16 moments", 2, 0, 1, 1, 0, ZS_BF16, ZS_BF16,
     ZS_OFFLOAD_OPTIMIZER, 0, 0, 1, 0},
    {"stage 3 optimizer + params offload, params the master", 3, 0, 1, 0, 0, ZS_F32, ZS_F32,
     ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS, 0, ZS_MASTER_PARAMS, 0, 0},
    {"stage 3 optimizer + params offload, params the master, bf16 moments", 3, 0, 1, 0, 0, ZS_F32,
     ZS_F32, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS, 0, ZS_MASTER_PARAMS, 1, 0},
    {"stage 3 params offload alone, params the master", 3, 0, 1, 0, 0, ZS_F32, ZS_F32,
     ZS_OFFLOAD_PARAMS, 0, ZS_MASTER_PARAMS, 0, 0},
    {"stage 1 budget 50%, params the master", 1, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, ZS_MASTER_PARAMS,
     0, 50},
    {"stage 2 deterministic budget 80%, bf16 moments", 2, 0, 1, 1, 0, ZS_BF16, ZS_BF16, 0, 0, 0, 1,
     80},
    {"stage 3 budget 30%, params the master, bf16 moments", 3, 0, 1, 0, 0, ZS_F32, ZS_F32, 0, 0,
     ZS_MASTER_PARAMS, 1, 30},
    {"stage 3 hybrid groups of 2 budget 50%, bf16 moments", 3, 2, 1, 0, 0, ZS_F32, ZS_F32, 0, 0, 0,
     1, 50},
    /* The remainder and lean modes on the host tier: the remainder with m and v, lean's m and v
       alone (no fp32 master on any tier), the bf16 params where the plan puts them. */
    {"stage 1 optimizer offload, remainder master", 1, 0, 1, 0, 0, ZS_BF16, ZS_BF16,
     ZS_OFFLOAD_OPTIMIZER, 0, ZS_MASTER_REMAINDER, 0, 0},
    {"stage 3 optimizer + params offload, remainder master, bf16 moments", 3, 0, 1, 0, 0, ZS_BF16,
     ZS_BF16, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS, 0, ZS_MASTER_REMAINDER, 1, 0},
    {"stage 3 params offload alone, remainder master", 3, 0, 1, 0, 0, ZS_BF16, ZS_BF16,
     ZS_OFFLOAD_PARAMS, 0, ZS_MASTER_REMAINDER, 0, 0},
    {"stage 2 budget 50%, remainder master", 2, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0,
     ZS_MASTER_REMAINDER, 0, 50},
    {"stage 3 budget 30%, remainder master, bf16 moments", 3, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0,
     ZS_MASTER_REMAINDER, 1, 30},
    {"stage 2 optimizer offload, lean", 2, 0, 1, 1, 0, ZS_BF16, ZS_BF16, ZS_OFFLOAD_OPTIMIZER, 0,
     ZS_MASTER_LEAN, 0, 0},
    {"stage 3 optimizer + params offload, lean, bf16 moments", 3, 0, 1, 0, 0, ZS_BF16, ZS_BF16,
     ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS, 0, ZS_MASTER_LEAN, 1, 0},
    {"stage 3 params offload alone, lean", 3, 0, 1, 0, 0, ZS_BF16, ZS_BF16, ZS_OFFLOAD_PARAMS, 0,
     ZS_MASTER_LEAN, 0, 0},
    {"stage 1 budget 60%, lean", 1, 0, 1, 0, 0, ZS_BF16, ZS_BF16, 0, 0, ZS_MASTER_LEAN, 0, 60},
    {"stage 3 hybrid groups of 2 budget 30%, lean, bf16 moments", 3, 2, 1, 0, 0, ZS_BF16, ZS_BF16,
     0, 0, ZS_MASTER_LEAN, 1, 30},
};

/* Bytes of a host-arena array of b bytes: whole pages (one region per array). */
static size_t pages(size_t b) {
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return b ? (b + pg - 1) / pg * pg : pg;
}

/* A trainable unit's optimizer arrays in the host arena: a master of mb bytes per element (none
   when 0), m and v (2 or 4 bytes), range elements each. */
static size_t host_arrays(size_t mb, int m16, size_t range) {
  return (mb ? pages(mb * range) : 0) + 2 * pages((m16 ? 2 : 4) * range);
}

/* One step of `micro` micro-steps: forward gathers and releases in order, backward in reverse
   writes every gradient element, grads_ready, release. */
static void step(zs_engine *e, zs_unit **u, int micro, const int *frozen) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, micro));
  for (int k = 0; k < micro; k++) {
    for (int i = 0; i < NUNITS; i++) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
    for (int i = NUNITS - 1; i >= 0; i--) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_EXPECT((zs_unit_grad(u[i], 0) != NULL) == !frozen[i], "grad of unit %d: %s", i,
                zs_last_error());
      ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
}

static void check(zs_comm *comm, const cfg_case *k, const int *frozen) {
  const int W = zs_comm_size(comm);
  if (k->group && W % k->group) return; /* hybrid cases need a multiple of the group */
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = k->stage;
  cfg.shard_group_size = k->group;
  cfg.prefetch_units = k->prefetch;
  cfg.deterministic = k->det;
  cfg.param_dtype = k->pd;
  cfg.reduce_dtype = k->rd;
  cfg.offload = k->offload;
  cfg.bucket_bytes = k->bucket;
  cfg.held_units = 1;
  if (k->shard_params) cfg.shard_params = ZS_SHARD_YES;
  cfg.master = k->master;
  cfg.moment_dtype = k->m16 ? ZS_BF16 : ZS_F32;
  int64_t numel[NUNITS];
  zs_engine *e = NULL;
  zs_unit *u[NUNITS];
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int i = 0; i < NUNITS; i++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, unit_t, &u[i]));
    numel[i] = zs_unit_numel(u[i], 0);
    ZS_OK_OR_DIE(zs_unit_freeze(u[i], frozen[i]));
  }
  zs_plan_report r;
  unsigned char host[NUNITS] = {0};
  if (k->budget_pct) { /* the floor (a 1-byte budget is refused with it) and no offload */
    zs_plan_report none, floor;
    ZS_OK_OR_DIE(
        zs_plan_model_frozen(&cfg, W, numel, frozen, NUNITS, 0, SIZE_MAX, SIZE_MAX, &none));
    cfg.offload_budget_bytes = 1;
    ZS_OK_OR_DIE(
        zs_plan_model_frozen(&cfg, W, numel, frozen, NUNITS, 0, SIZE_MAX, SIZE_MAX, &floor));
    ZS_EXPECT(!floor.fits && floor.budget_floor < none.device_total, "%s: floor %zu of %zu",
              k->name, floor.budget_floor, none.device_total);
    cfg.offload_budget_bytes =
        floor.budget_floor + (none.device_total - floor.budget_floor) * (size_t)k->budget_pct / 100;
    ZS_OK_OR_DIE(zs_plan_placement_frozen(&cfg, W, numel, frozen, NUNITS, host));
    zs_engine_destroy(e); /* again, with the budget */
    ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
    for (int i = 0; i < NUNITS; i++) {
      char name[8];
      snprintf(name, sizeof name, "u%d", i);
      ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, unit_t, &u[i]));
      ZS_OK_OR_DIE(zs_unit_freeze(u[i], frozen[i]));
    }
  }
  ZS_OK_OR_DIE(zs_plan_model_frozen(&cfg, W, numel, frozen, NUNITS, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  if (k->budget_pct) {
    int nh = 0, trainable_on_device = 0; /* optimizer bytes stay on the device for it */
    for (int i = 0; i < NUNITS; i++) {
      nh += host[i];
      trainable_on_device |= !frozen[i] && !host[i];
    }
    /* A frozen unit moves less than a trainable one of its size (no optimizer state), and all
       units here have one size: it goes only after every trainable unit has. */
    for (int i = 0; i < NUNITS; i++)
      for (int j = 0; j < NUNITS; j++)
        ZS_EXPECT(!(frozen[i] && host[i] && !frozen[j] && !host[j]),
                  "%s: frozen unit %d on the host before trainable unit %d", k->name, i, j);
    const zs_engine_facts f = zs_test_facts(e);
    ZS_EXPECT(nh > 0 && nh < NUNITS && (size_t)nh == r.host_units && f.units_on_host == nh &&
                  f.units == NUNITS && (r.optimizer > 0) == trainable_on_device &&
                  r.host_pinned > 0,
              "%s, %d ranks: %d units on the host (plan %zu, engine %d of %d), not mixed: %s",
              k->name, W, nh, r.host_units, f.units_on_host, f.units, zs_engine_info(e));
    for (int i = 0; i < NUNITS; i++) { /* the engine placed the units zs_plan_placement says */
      int h = -1;
      ZS_OK_OR_DIE(zs_unit_placed(u[i], &h, NULL));
      ZS_EXPECT(h == host[i], "%s: unit %d: on the host %d, zs_plan_placement says %d", k->name, i,
                h, host[i]);
    }
  }
  for (int s = 0; s < 2; s++)
    step(e, u, 2, frozen);
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.params.peak == r.params && m.grads.peak == r.grads &&
                m.optimizer.peak == r.optimizer && m.host_pinned.peak == r.host_pinned,
            "%s, %d ranks, units 1-2 frozen %d: ledger params %zu grads %zu optimizer %zu host "
            "%zu, plan %zu %zu %zu "
            "%zu",
            k->name, W, frozen[1], m.params.peak, m.grads.peak, m.optimizer.peak,
            m.host_pinned.peak, r.params, r.grads, r.optimizer, r.host_pinned);
  const size_t bins = 321 * 8; /* the gradient-norm bins, alone at zs_engine_step */
  ZS_EXPECT(m.buffers.peak <= r.buffers && r.buffers - m.buffers.peak <= bins,
            "%s, %d ranks, frozen %d: buffers peak %zu, plan bound %zu (want bound - %zu <= peak "
            "<= bound)",
            k->name, W, frozen[1], m.buffers.peak, r.buffers, bins);
  /* Independently of both: the optimizer holds master, m and v (4 bytes each) per element of
     this rank's optimizer range (m and v 2 bytes each in bf16), or m and v alone when the
     params are the master (fp32 params, or lean mode's bf16 ones), or a 2-byte remainder beside
     them (remainder master); a frozen unit holds none of them, whatever the precision (on the
     device: not checked with offload, where it is host_pinned, or a budget, which moves some
     units there; the budget's own checks are above). */
  const size_t S = k->stage >= 1 ? (size_t)W : 1, range = (1001 + S - 1) / S;
  const size_t master_bytes = k->master == ZS_MASTER_FP32        ? 4
                              : k->master == ZS_MASTER_REMAINDER ? 2
                                                                 : 0;
  const size_t per = (master_bytes + (k->m16 ? 4 : 8)) * range;
  size_t trainable = 0;
  for (int i = 0; i < NUNITS; i++)
    trainable += !frozen[i];
  ZS_EXPECT(k->offload || k->group || k->budget_pct || r.optimizer == trainable * per,
            "%s, %d ranks, frozen %d: plan optimizer %zu, want %zu", k->name, W, frozen[1],
            r.optimizer, trainable * per);
  /* Offloaded, from zshard.h's words: the arena holds each trainable unit's m and v and its
     master (fp32; the 2-byte remainder of ZS_MASTER_REMAINDER; none in lean mode, whose bf16
     params are the master wherever they are), except where ZS_MASTER_PARAMS's params live there
     too (they are the master), and with ZS_OFFLOAD_PARAMS every unit's param shard; the rest of
     the optimizer state is on the device (ZS_OFFLOAD_PARAMS alone: all of it, with a master of
     its own there). In the arena each array holds whole pages. */
  if (k->offload && !k->group) {
    const int op = (k->offload & ZS_OFFLOAD_PARAMS) != 0,
              oo = (k->offload & ZS_OFFLOAD_OPTIMIZER) != 0;
    const size_t mb = k->master != ZS_MASTER_PARAMS ? master_bytes : op != oo ? 4 : 0;
    const size_t opt = (mb + (k->m16 ? 4 : 8)) * range * trainable;
    const size_t host = (oo ? host_arrays(mb, k->m16, range) * trainable : 0) +
                        (op ? NUNITS * pages(range * (k->pd == ZS_BF16 ? 2 : 4)) : 0);
    ZS_EXPECT(r.host_pinned == host && r.optimizer == (oo ? 0 : opt),
              "%s, %d ranks, frozen %d: plan host %zu optimizer %zu, want %zu %zu", k->name, W,
              frozen[1], r.host_pinned, r.optimizer, host, oo ? (size_t)0 : opt);
  }
  /* With a budget, the same words per unit: a trainable unit on the host brings its m, v and
     master there (ZS_MASTER_PARAMS: none where its param shard moves with them, sharded params),
     and with sharded params every host unit its param shard. */
  if (k->budget_pct && !k->group) {
    const int sp = k->stage == 3 || k->shard_params;
    size_t want = 0;
    for (int i = 0; i < NUNITS; i++) {
      if (!host[i]) continue;
      const size_t mb = k->master != ZS_MASTER_PARAMS ? master_bytes : sp ? 0 : 4;
      if (!frozen[i]) want += host_arrays(mb, k->m16, range);
      if (sp) want += pages(range * (k->pd == ZS_BF16 ? 2 : 4));
    }
    ZS_EXPECT(r.host_pinned == want, "%s, %d ranks, frozen %d: plan host %zu, want %zu", k->name, W,
              frozen[1], r.host_pinned, want);
  }
  ZS_EXPECT(r.device_total == r.params + r.grads + r.optimizer + r.buffers && r.fits &&
                r.host_total == r.host_pinned,
            "%s: totals", k->name);
  zs_engine_destroy(e);
}

/* Units of unit_t into e; their sizes into numel. */
static void add_units(zs_engine *e, int64_t *numel) {
  for (int i = 0; i < NUNITS; i++) {
    char name[8];
    zs_unit *u = NULL;
    snprintf(name, sizeof name, "u%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, unit_t, &u));
    numel[i] = zs_unit_numel(u, 0);
  }
}

/* The offload budget's refusals: a model over its budget with every unit on the host is refused
   at commit with the sentence naming the least budget (zs_plan_model's floor), nothing
   allocated; a budget beside offload bits or with unsharded optimizer state is no plan; the
   budget comes from ZS_OFFLOAD_BUDGET_BYTES when the field is unset. */
static void budget_refusals(zs_comm *comm) {
  const int W = zs_comm_size(comm);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.held_units = 1;
  cfg.offload_budget_bytes = 1;
  int64_t numel[NUNITS];
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  add_units(e, numel);
  zs_plan_report r;
  ZS_OK_OR_DIE(zs_plan_model(&cfg, W, numel, NUNITS, 0, SIZE_MAX, SIZE_MAX, &r));
  char want[160];
  snprintf(want, sizeof want, "over the offload budget of 1 bytes; fits with an offload budget of");
  char bytes[48];
  snprintf(bytes, sizeof bytes, "(%zu bytes) or more", r.budget_floor);
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_OUT_OF_MEMORY);
  ZS_EXPECT(strstr(zs_last_error(), want) && strstr(zs_last_error(), bytes) &&
                strstr(zs_last_error(), "nothing was allocated") && !r.fits &&
                r.host_units == NUNITS && strstr(r.verdict, bytes),
            "%d ranks: commit over budget said: %s (plan: %s)", W, zs_last_error(), r.verdict);
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.total.peak == 0, "refused commit allocated %zu bytes", m.total.peak);
  zs_engine_destroy(e);
  e = NULL;
  cfg.offload = ZS_OFFLOAD_OPTIMIZER;
  ZS_EXPECT_STATUS(zs_engine_create(&cfg, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "offload_budget_bytes with offload bits"), "said: %s",
            zs_last_error());
  cfg.offload = 0;
  cfg.stage = 0;
  ZS_EXPECT_STATUS(zs_engine_create(&cfg, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "offload_budget_bytes needs sharded optimizer state"),
            "said: %s", zs_last_error());
  /* The environment: the floor exactly fits, every unit on the host. */
  cfg.stage = 3;
  cfg.offload_budget_bytes = ZS_UNSET_SIZE;
  char env[32];
  snprintf(env, sizeof env, "%zu", r.budget_floor);
  setenv("ZS_OFFLOAD_BUDGET_BYTES", env, 1);
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  unsetenv("ZS_OFFLOAD_BUDGET_BYTES");
  add_units(e, numel);
  ZS_OK_OR_DIE(zs_engine_commit(e));
  const zs_engine_facts f = zs_test_facts(e);
  ZS_EXPECT(zs_engine_config(e)->offload_budget_bytes == r.budget_floor &&
                f.units_on_host == NUNITS && f.units == NUNITS &&
                zs_test_origin(e, "offload_budget_bytes") == ZS_ORIGIN_ENV,
            "ZS_OFFLOAD_BUDGET_BYTES=%s: %s", env, zs_engine_info(e));
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  budget_refusals(comm);
  static const int none[NUNITS] = {0, 0, 0, 0}, middle[NUNITS] = {0, 1, 1, 0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check(comm, &cases[i], none);
    check(comm, &cases[i], middle);
  }
  zs_comm_destroy(comm);
  ZS_TEST_END("test_plan_ledger");
}
