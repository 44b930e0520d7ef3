/* The memory ledger reproduces the ZeRO accounting exactly, category by category (DESIGN.md):
 * with psi parameters, b-byte params and grads, K = 12 (fp32 master + Adam m + v), N ranks:
 *   stage 0: params b*psi,   grads b*psi,   optimizer K*psi
 *   stage 1: params b*psi,   grads b*psi,   optimizer K*psi/N
 *   stage 2: params b*psi,   grads b*psi/N, optimizer K*psi/N
 *   stage 3: params b*psi/N, grads b*psi/N, optimizer K*psi/N
 * Unit sizes divide by 4, so there is no padding at N = 1, 2, 4. Also checks that transient
 * buffers are bounded during a stage-3 step and return to zero after it, and that offload moves
 * exactly the offloaded state to host_pinned (each array in whole pages there). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zs_test.h"

static const zs_tensor_desc unit_a[2] = {{"w", 2, {64, 8, 0, 0}, 0}, {"b", 1, {16, 0, 0, 0}, 1}};
static const zs_tensor_desc unit_b[1] = {{"w", 1, {1024, 0, 0, 0}, 0}};
enum { PSI_A = 64 * 8 + 16, PSI_B = 1024, PSI = PSI_A + PSI_B };

/* The host tier's bytes with N ranks, b-byte params: per unit, the fp32 master, m and v shards
   (optimizer offload, oo) and the param shard (params offload, op), each an array of whole pages
   (the host arena maps one region per array). */
static size_t host_want(size_t N, size_t b, int op, int oo) {
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE), psi[2] = {PSI_A, PSI_B};
  size_t h = 0;
  for (int u = 0; u < 2; u++) {
    const size_t s = psi[u] / N;
    if (oo) h += 3 * ((4 * s + pg - 1) / pg * pg);
    if (op) h += (b * s + pg - 1) / pg * pg;
  }
  return h;
}

static void check_stage(zs_comm *comm, int stage, zs_dtype dt) {
  const size_t N = (size_t)zs_comm_size(comm), b = dt == ZS_BF16 ? 2 : 4, K = 12;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.param_dtype = cfg.reduce_dtype = dt;
  cfg.prefetch_units = 0;
  cfg.deterministic = 1;
  zs_engine *e = NULL;
  zs_unit *ua = NULL, *ub = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "a", 2, unit_a, &ua));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "b", 1, unit_b, &ub));
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.total.cur == 0, "before commit nothing is allocated (%zu)", m.total.cur);
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  size_t want_p = stage <= 2 ? b * PSI : b * PSI / N;
  size_t want_g = stage <= 1 ? b * PSI : b * PSI / N;
  size_t want_o = stage == 0 ? K * PSI : K * PSI / N;
  ZS_EXPECT(m.params.cur == want_p, "stage %d N %zu b %zu: params %zu, want %zu", stage, N, b,
            m.params.cur, want_p);
  ZS_EXPECT(m.grads.cur == want_g, "stage %d N %zu b %zu: grads %zu, want %zu", stage, N, b,
            m.grads.cur, want_g);
  ZS_EXPECT(m.optimizer.cur == want_o, "stage %d N %zu b %zu: optimizer %zu, want %zu", stage, N, b,
            m.optimizer.cur, want_o);
  ZS_EXPECT(m.buffers.cur == 0 && m.host_pinned.cur == 0, "no buffers after commit (%zu, %zu)",
            m.buffers.cur, m.host_pinned.cur);
  ZS_EXPECT(m.total.cur == want_p + want_g + want_o, "total %zu", m.total.cur);
  zs_memory plan;
  ZS_OK_OR_DIE(zs_engine_plan_memory(e, &plan));
  ZS_EXPECT(plan.params.cur == want_p && plan.grads.cur == want_g && plan.optimizer.cur == want_o &&
                plan.host_pinned.cur == 0,
            "stage %d: the plan (%zu %zu %zu) says what commit allocated", stage, plan.params.cur,
            plan.grads.cur, plan.optimizer.cur);

  /* One step: stage 3 holds a gathered unit only between gather and release. */
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_OK_OR_DIE(zs_unit_gather(ub));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.buffers.cur == (stage == 3 ? b * PSI_B : 0), "stage %d: gathered buffer %zu", stage,
            m.buffers.cur);
  void *g = zs_unit_grad(ub, 0);
  ZS_EXPECT(g != NULL, "grad pointer: %s", zs_last_error());
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  /* a sharded gradient's full buffer, or (deterministic, full gradients) the micro-step's staging
   */
  size_t want_buf = (stage == 3 ? b * PSI_B : 0) + b * PSI_B;
  ZS_EXPECT(m.buffers.cur == want_buf, "stage %d: buffers with full grad %zu, want %zu", stage,
            m.buffers.cur, want_buf);
  ZS_OK_OR_DIE(zs_unit_grads_ready(ub));
  ZS_OK_OR_DIE(zs_unit_release(ub));
  ZS_OK_OR_DIE(zs_unit_gather(ua));
  ZS_OK_OR_DIE(zs_unit_grads_ready(ua));
  ZS_OK_OR_DIE(zs_unit_release(ua));
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.buffers.cur == 0, "stage %d: buffers after step %zu", stage, m.buffers.cur);
  /* Bound: gathered params + full grad + reduction scratch of the largest unit, + norm bins. */
  size_t bound = 3 * b * PSI_B + N * b * PSI_B + 4096;
  ZS_EXPECT(m.buffers.peak <= bound, "stage %d: buffers peak %zu above bound %zu", stage,
            m.buffers.peak, bound);
  ZS_EXPECT(m.params.cur == want_p && m.grads.cur == want_g && m.optimizer.cur == want_o,
            "stage %d: model state changed during a step", stage);
  ZS_EXPECT(m.total.peak >= m.total.cur && m.params.peak == want_p, "peaks");
  zs_engine_destroy(e);
}

/* Offload moves exactly the offloaded state from the device categories to host_pinned:
   optimizer 12*psi/N (stages 1-3) and, at stage 3, params b*psi/N (host_want: in whole pages). */
static void check_offload(zs_comm *comm, int stage, unsigned offload, zs_dtype dt) {
  const size_t N = (size_t)zs_comm_size(comm), b = dt == ZS_BF16 ? 2 : 4;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.offload = offload;
  cfg.param_dtype = cfg.reduce_dtype = dt;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "a", 2, unit_a, NULL));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "b", 1, unit_b, NULL));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  const int op = (offload & ZS_OFFLOAD_PARAMS) != 0;
  size_t want_p = op ? 0 : (stage <= 2 ? b * PSI : b * PSI / N);
  size_t want_g = stage <= 1 ? b * PSI : b * PSI / N;
  size_t want_h = host_want(N, b, op, 1);
  ZS_EXPECT(m.params.cur == want_p, "offload %u stage %d: params %zu, want %zu", offload, stage,
            m.params.cur, want_p);
  ZS_EXPECT(m.grads.cur == want_g, "offload %u stage %d: grads %zu, want %zu", offload, stage,
            m.grads.cur, want_g);
  ZS_EXPECT(m.optimizer.cur == 0, "offload %u stage %d: optimizer on device %zu", offload, stage,
            m.optimizer.cur);
  ZS_EXPECT(m.host_pinned.cur == want_h, "offload %u stage %d: host %zu, want %zu", offload, stage,
            m.host_pinned.cur, want_h);
  zs_engine_destroy(e);
}

/* Stage-3 prefetch follows the traversal: forward gathers prefetch the next unit, backward
   gathers the previous one, in every micro-step (the gathered bytes show it). */
static void check_prefetch(zs_comm *comm) {
  const size_t unit = 4 * PSI_B; /* fp32; PSI_B divides by 1, 2 and 4: no padding */
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.prefetch_units = 1;
  zs_engine *e = NULL;
  zs_unit *u[3];
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int i = 0; i < 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, unit_b, &u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 2));
  zs_memory m;
  for (int micro = 0; micro < 2; micro++) {
    ZS_OK_OR_DIE(zs_unit_gather(u[0]));
    ZS_OK_OR_DIE(zs_engine_memory(e, &m));
    ZS_EXPECT(m.buffers.cur == 2 * unit,
              "micro %d: forward gather of u0 prefetches u1 (%zu, want %zu)", micro, m.buffers.cur,
              2 * unit);
    ZS_OK_OR_DIE(zs_unit_release(u[0]));
    for (int i = 1; i < 3; i++) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
    ZS_OK_OR_DIE(zs_unit_gather(u[2]));
    ZS_OK_OR_DIE(zs_engine_memory(e, &m));
    ZS_EXPECT(m.buffers.cur == 2 * unit, "micro %d: backward gather of u2 prefetches u1 (%zu)",
              micro, m.buffers.cur);
    for (int i = 2; i >= 0; i--) {
      if (i < 2) ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  zs_engine_destroy(e);
}

/* The switches beyond the stages: params sharded with full gradients (stage 1 + shard_params),
   alone and with the optimizer and params offloaded: the ledger and the plan agree with the
   formulas (params b*psi/N, grads b*psi, optimizer K*psi/N). */
static void check_switches(zs_comm *comm, unsigned offload) {
  const size_t N = (size_t)zs_comm_size(comm), b = 4, K = 12;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 1;
  cfg.shard_params = ZS_SHARD_YES;
  cfg.offload = offload;
  cfg.prefetch_units = 0;
  zs_engine *e = NULL;
  zs_unit *ua = NULL, *ub = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "a", 2, unit_a, &ua));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "b", 1, unit_b, &ub));
  zs_memory plan, m;
  ZS_OK_OR_DIE(zs_engine_plan_memory(e, &plan)); /* before commit */
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  const int op = (offload & ZS_OFFLOAD_PARAMS) != 0, oo = (offload & ZS_OFFLOAD_OPTIMIZER) != 0;
  const size_t want_p = op ? 0 : b * PSI / N, want_g = b * PSI, want_o = oo ? 0 : K * PSI / N;
  const size_t want_h = host_want(N, b, op, oo);
  ZS_EXPECT(m.params.cur == want_p && m.grads.cur == want_g && m.optimizer.cur == want_o &&
                m.host_pinned.cur == want_h,
            "offload %u: ledger %zu %zu %zu %zu, want %zu %zu %zu %zu", offload, m.params.cur,
            m.grads.cur, m.optimizer.cur, m.host_pinned.cur, want_p, want_g, want_o, want_h);
  ZS_EXPECT(plan.params.cur == m.params.cur && plan.grads.cur == m.grads.cur &&
                plan.optimizer.cur == m.optimizer.cur && plan.host_pinned.cur == m.host_pinned.cur,
            "offload %u: the plan before commit says what commit allocated", offload);
  /* A step: params are gathered (buffers), gradients stay full (no transient gradient). */
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_OK_OR_DIE(zs_unit_gather(ub));
  ZS_EXPECT(zs_unit_grad(ub, 0) != NULL, "grad");
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.buffers.cur == b * PSI_B, "gathered params only in buffers: %zu", m.buffers.cur);
  ZS_OK_OR_DIE(zs_unit_grads_ready(ub));
  ZS_OK_OR_DIE(zs_unit_release(ub));
  ZS_OK_OR_DIE(zs_unit_grads_ready(ua));
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  ZS_EXPECT(plan.buffers.cur >= m.buffers.peak, "buffers peak %zu within the plan's bound %zu",
            m.buffers.peak, plan.buffers.cur);
  zs_engine_destroy(e);
}

/* Muon on a 64 x 64 matrix (stage 3): its step's whole-tensor buffers (the padded unit and, on
   the rank that orthogonalises it, the Newton-Schulz scratch: tier/whole.h) are the largest
   transient, and the plan's bound holds them. */
static void check_muon(zs_comm *comm) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.prefetch_units = 0;
  zs_engine *e = NULL;
  zs_unit *u = NULL;
  const zs_tensor_desc w = {"w", 2, {64, 64, 0, 0}, 0};
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "m", 1, &w, &u));
  zs_param_group g;
  int id = -1;
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  g.optimizer = "muon";
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
  ZS_OK_OR_DIE(zs_unit_set_group(u, 0, id));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  zs_memory plan, m;
  ZS_OK_OR_DIE(zs_engine_plan_memory(e, &plan));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_OK_OR_DIE(zs_unit_gather(u));
  ZS_EXPECT(zs_unit_grad(u, 0) != NULL, "grad");
  ZS_OK_OR_DIE(zs_unit_grads_ready(u));
  ZS_OK_OR_DIE(zs_unit_release(u));
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  /* Rank 0 orthogonalises the one matrix: the padded unit and the scratch; the others hold the
     padded unit only. */
  const size_t whole = (4096 + (zs_comm_rank(comm) == 0 ? 4 * 64 * 64 : 0)) * sizeof(float);
  ZS_EXPECT(m.buffers.peak >= whole && plan.buffers.cur >= m.buffers.peak,
            "Muon: buffers peak %zu (whole step %zu) within the plan's bound %zu", m.buffers.peak,
            whole, plan.buffers.cur);
  zs_engine_destroy(e);
}

/* zs_plan_model (no engine, no shapes) with a whole-tensor optimizer as the configuration's:
   its buffers bound the engine's plan for one rows x cols matrix, and equal it (exact) for the
   shape whose scratch is largest (Muon: a square; Adafactor: a vector); its optimizer bytes
   equal the engine's, or bound them where the engine keeps `kept` elements of the state array on
   each rank (an Adafactor matrix's factors: its fp32 master's shard plus those). */
static void check_planner_whole(zs_comm *comm, const char *opt, int64_t rows, int64_t cols,
                                int exact, int64_t kept) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.prefetch_units = 0;
  cfg.stage = 3;
  ZS_OK_OR_DIE(zs_optimizer_id(opt, &cfg.optimizer));
  zs_engine *e = NULL;
  zs_unit *u = NULL;
  const zs_tensor_desc w = {"w", 2, {rows, cols, 0, 0}, 0};
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "m", 1, &w, &u));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  zs_memory engine;
  ZS_OK_OR_DIE(zs_engine_plan_memory(e, &engine));
  zs_engine_destroy(e);
  const int64_t numel = rows * cols;
  zs_plan_report r;
  ZS_OK_OR_DIE(zs_plan_model(&cfg, zs_comm_size(comm), &numel, 1, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_EXPECT(exact ? r.buffers == engine.buffers.cur : r.buffers >= engine.buffers.cur,
            "%s %lld x %lld: zs_plan_model's buffers %zu %s the engine's plan %zu", opt,
            (long long)rows, (long long)cols, r.buffers, exact ? "equal" : "bound",
            engine.buffers.cur);
  const size_t want = (size_t)(numel / zs_comm_size(comm) + kept) * 4;
  ZS_EXPECT(kept < 0 ? r.optimizer == engine.optimizer.cur
                     : r.optimizer >= engine.optimizer.cur && engine.optimizer.cur == want,
            "%s: optimizer %zu vs the engine's %zu (want %zu)", opt, r.optimizer,
            engine.optimizer.cur, kept < 0 ? r.optimizer : want);
}

/* zs_plan_model_units (tensors and each one's group's optimizer, no engine) against the engine's
   own plan for the same units and groups: every category equal, the buffers including the
   whole-tensor steps of a Muon group and an Adafactor group under an AdamW configuration (which
   zs_plan_model, knowing no groups, leaves out), a frozen unit, with and without offload; the
   ledger's peak over a step within it; and the refusals of a vector on Muon and of an optimizer
   with more state than the configuration's. */
static void check_planner_units(zs_comm *comm, int stage, unsigned offload) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.prefetch_units = 0;
  cfg.stage = stage;
  cfg.offload = offload;
  cfg.offload_allow_unpinned = 1;
  int muon = -1, ada = -1;
  ZS_OK_OR_DIE(zs_optimizer_id("muon", &muon));
  ZS_OK_OR_DIE(zs_optimizer_id("adafactor", &ada));
  const zs_tensor_desc emb[1] = {{"wte", 2, {300, 40, 0, 0}, 0}};
  const zs_tensor_desc blk[4] = {{"qkv", 2, {120, 40, 0, 0}, 0},
                                 {"bias", 1, {120, 0, 0, 0}, 1},
                                 {"fc", 2, {160, 40, 0, 0}, 0},
                                 {"proj", 3, {40, 8, 20, 0}, 0}};
  const zs_tensor_desc frz[1] = {{"w", 2, {64, 64, 0, 0}, 0}};
  const zs_tensor_desc vec[1] = {{"v", 1, {777, 0, 0, 0}, 0}};
  const int blk_opt[4] = {muon, -1, muon, ada}, frz_opt[1] = {muon}, vec_opt[1] = {ada};
  const zs_plan_unit pu[4] = {{1, emb, NULL, 0, NULL},
                              {4, blk, blk_opt, 0, NULL},
                              {1, frz, frz_opt, 1, NULL},
                              {1, vec, vec_opt, 0, NULL}};
  zs_engine *e = NULL;
  zs_unit *u[4];
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  zs_param_group g;
  int gid[2];
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  g.optimizer = "muon";
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &gid[0]));
  g.optimizer = "adafactor";
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &gid[1]));
  static const char *const names[4] = {"emb", "blk", "frz", "vec"};
  for (int i = 0; i < 4; i++) {
    ZS_OK_OR_DIE(zs_engine_add_unit(e, names[i], pu[i].ntensors, pu[i].tensors, &u[i]));
    for (int k = 0; pu[i].optimizer && k < pu[i].ntensors; k++)
      if (pu[i].optimizer[k] >= 0)
        ZS_OK_OR_DIE(zs_unit_set_group(u[i], k, gid[pu[i].optimizer[k] == muon ? 0 : 1]));
  }
  ZS_OK_OR_DIE(zs_unit_freeze(u[2], 1));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  zs_memory plan, m;
  ZS_OK_OR_DIE(zs_engine_plan_memory(e, &plan));
  const int world = zs_comm_size(comm);
  zs_plan_report r, bare;
  ZS_OK_OR_DIE(zs_plan_model_units(&cfg, world, pu, 4, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_EXPECT(r.params == plan.params.cur && r.grads == plan.grads.cur &&
                r.optimizer == plan.optimizer.cur && r.buffers == plan.buffers.cur &&
                r.host_pinned == plan.host_pinned.cur,
            "stage %d offload %u: zs_plan_model_units params %zu grads %zu optimizer %zu buffers "
            "%zu host %zu; the engine's plan %zu %zu %zu %zu %zu",
            stage, offload, r.params, r.grads, r.optimizer, r.buffers, r.host_pinned,
            (size_t)plan.params.cur, (size_t)plan.grads.cur, (size_t)plan.optimizer.cur,
            (size_t)plan.buffers.cur, (size_t)plan.host_pinned.cur);
  const int64_t numel[4] = {300 * 40, 120 * 40 + 120 + 160 * 40 + 40 * 8 * 20, 64 * 64, 777};
  const int frozen[4] = {0, 0, 1, 0};
  ZS_OK_OR_DIE(zs_plan_model_frozen(&cfg, world, numel, frozen, 4, 0, SIZE_MAX, SIZE_MAX, &bare));
  ZS_EXPECT(
      bare.buffers < r.buffers && bare.optimizer + bare.host_pinned > r.optimizer + r.host_pinned,
      "zs_plan_model (no groups) buffers %zu below the groups' %zu, optimizer and host %zu "
      "above theirs %zu (unit vec, all on Adafactor, keeps one array of AdamW's two)",
      bare.buffers, r.buffers, bare.optimizer + bare.host_pinned, r.optimizer + r.host_pinned);
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = 3; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    if (i != 2) ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.buffers.peak <= plan.buffers.cur, "a step's buffers peak %zu over the plan %zu",
            (size_t)m.buffers.peak, (size_t)plan.buffers.cur);
  zs_engine_destroy(e);
  /* zs_plan_placement_units under a budget that cannot hold every unit: the bare planner's
     placement where no tensor needs a whole step (the same sizes), and a placement, with
     the groups, that the report's host_units counts. */
  zs_config bud = cfg;
  bud.offload = 0;
  bud.offload_budget_bytes = bare.params + bare.grads + bare.optimizer / 2;
  if (stage > 0) {
    const zs_plan_unit adamw[4] = {{1, emb, NULL, 0, NULL},
                                   {4, blk, NULL, 0, NULL},
                                   {1, frz, NULL, 1, NULL},
                                   {1, vec, NULL, 0, NULL}};
    unsigned char h1[4], h2[4];
    ZS_OK_OR_DIE(zs_plan_placement_units(&bud, world, adamw, 4, h1));
    ZS_OK_OR_DIE(zs_plan_placement_frozen(&bud, world, numel, frozen, 4, h2));
    ZS_EXPECT(memcmp(h1, h2, 4) == 0, "stage %d: placement of the same sizes differs", stage);
    ZS_OK_OR_DIE(zs_plan_placement_units(&bud, world, pu, 4, h1));
    ZS_OK_OR_DIE(zs_plan_model_units(&bud, world, pu, 4, 0, SIZE_MAX, SIZE_MAX, &r));
    size_t on_host = 0;
    for (int i = 0; i < 4; i++)
      on_host += h1[i];
    ZS_EXPECT(on_host == r.host_units && on_host > 0, "stage %d: %zu units on the host, report %zu",
              stage, on_host, (size_t)r.host_units);
  }
  /* The engine's refusals, by index. */
  const int vec_muon[1] = {muon};
  const zs_plan_unit bad_vec = {1, vec, vec_muon, 0, NULL};
  ZS_EXPECT_STATUS(zs_plan_model_units(&cfg, world, &bad_vec, 1, 0, SIZE_MAX, SIZE_MAX, &r),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "updates matrices"), "says why: %s", zs_last_error());
  zs_config sgd = cfg;
  sgd.optimizer = ZS_OPT_SGD;
  sgd.sgd.momentum = 0;
  const zs_plan_unit bad_state = {1, emb, vec_opt, 0, NULL}; /* Adafactor's 1 array under SGD's 0 */
  ZS_EXPECT_STATUS(zs_plan_model_units(&sgd, world, &bad_state, 1, 0, SIZE_MAX, SIZE_MAX, &r),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "unit 0 tensor 0") && strstr(zs_last_error(), "state"),
            "says which and why: %s", zs_last_error());
}

/* Per-unit state layout: a unit keeps the most state arrays its tensors' groups' optimizers
   keep, under an AdamW configuration (2 arrays): all AdamW 2, all Muon 1, Muon matrices around
   an AdamW bias 2, all SGD without momentum 0, all SGD with momentum 1. The ledger (device, or
   host pages with optimizer offload), the engine's plan and zs_plan_model_units (each tensor's
   group's optimizer and momentum) give, per unit of psi elements on N ranks, the fp32 master plus
   that many arrays of the moments' bytes (sizes divide by 4: no padding), except the mixed unit's
   second array: packed, it holds its two biases alone (elements [32, 72) and [144, 152) of 152),
   48 elements; with 2 shards of 76 the most one holds is 40 ([32, 72)), with 4 shards of 38 it
   is 34 ([38, 72)); a Muon matrix's unit whose AdamW bias has no elements keeps no bytes of
   the second array (no page on the host either); and a unit of an Adafactor vector (28), matrix
   (12 x 10, whose factors are its first 22 elements) and AdamW bias (12) packs its first array to
   [0, 50) and [148, 160), 62 elements (2 shards of 80: 50; 4 shards of 40: 40, [0, 40)), and its
   second to the bias's 12. Then a step runs: the SGD units' params and buffer against float64 SGD
   (OPTIMIZER.md §3), the mixed unit's biases and their moments against float64 AdamW's first
   step, its Muon tensors' second array reads as zeros, the biases' written state reads back, the
   Adafactor factors and vector against float64 (the first step's row and column means of g^2,
   and g^2), the rest of the matrix's array reads zeros and a write there is dropped, and writing
   an array a tensor's optimizer does not keep is refused. */
enum { SL_NU = 7 };
static void check_state_layout(zs_comm *comm, int stage, unsigned offload, int moments_bf16) {
  const size_t N = (size_t)zs_comm_size(comm), mb = moments_bf16 ? 2 : 4;
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.offload = offload;
  cfg.offload_allow_unpinned = 1;
  cfg.prefetch_units = 0;
  if (moments_bf16) cfg.moment_dtype = ZS_BF16;
  int muon = -1, sgd = -1, ada = -1;
  ZS_OK_OR_DIE(zs_optimizer_id("muon", &muon));
  ZS_OK_OR_DIE(zs_optimizer_id("sgd", &sgd));
  ZS_OK_OR_DIE(zs_optimizer_id("adafactor", &ada));
  static const zs_tensor_desc t_adamw[2] = {{"w", 2, {32, 8, 0, 0}, 0}, {"b", 1, {16, 0, 0, 0}, 1}};
  static const zs_tensor_desc t_muon[2] = {{"a", 2, {64, 8, 0, 0}, 0}, {"c", 2, {16, 16, 0, 0}, 0}};
  static const zs_tensor_desc t_mixed[4] = {{"a", 2, {8, 4, 0, 0}, 0},
                                            {"b", 1, {40, 0, 0, 0}, 1},
                                            {"w", 2, {8, 9, 0, 0}, 0},
                                            {"c", 1, {8, 0, 0, 0}, 1}};
  static const zs_tensor_desc t_sgd[1] = {{"v", 1, {64, 0, 0, 0}, 0}};
  static const zs_tensor_desc t_sgdm[1] = {{"v", 1, {96, 0, 0, 0}, 0}};
  static const zs_tensor_desc t_empty[2] = {{"m", 2, {16, 8, 0, 0}, 0}, {"z", 1, {0, 0, 0, 0}, 1}};
  static const zs_tensor_desc t_ada[3] = {
      {"v", 1, {28, 0, 0, 0}, 0}, {"f", 2, {12, 10, 0, 0}, 0}, {"h", 1, {12, 0, 0, 0}, 1}};
  const int o_muon[2] = {muon, muon}, o_mixed[4] = {muon, -1, muon, -1}, o_sgd[1] = {sgd},
            o_empty[2] = {muon, -1}, o_ada[3] = {ada, ada, -1};
  const float mom0[1] = {0.0f}, mom9[1] = {0.9f};
  const zs_plan_unit pu[SL_NU] = {{2, t_adamw, NULL, 0, NULL},    {2, t_muon, o_muon, 0, NULL},
                                  {4, t_mixed, o_mixed, 0, NULL}, {1, t_sgd, o_sgd, 0, mom0},
                                  {1, t_sgdm, o_sgd, 0, mom9},    {2, t_empty, o_empty, 0, NULL},
                                  {3, t_ada, o_ada, 0, NULL}};
  const size_t psi[SL_NU] = {272, 768, 152, 64, 96, 128, 160},
               arrays[SL_NU] = {2, 1, 2, 0, 1, 2, 2};
  const int whole = !stage || N == 1;
  size_t want_o = 0, want_h = 0;
  for (int i = 0; i < SL_NU; i++) {
    const size_t s = stage ? psi[i] / N : psi[i];
    for (size_t a = 0; a <= arrays[i]; a++) { /* the master, then each array */
      const size_t n = i == 2 && a == 2   ? (whole    ? 48
                                             : N == 2 ? 40
                                                      : 34)
                       : i == 5 && a == 2 ? 0 /* packed to its empty AdamW tensor: nothing */
                       : i == 6 && a == 1 ? (whole    ? 62
                                             : N == 2 ? 50
                                                      : 40)
                       : i == 6 && a == 2 ? 12
                                          : s;
      const size_t b = a ? mb : 4;
      want_o += b * n;
      want_h += (b * n + pg - 1) / pg * pg;
    }
  }
  if (offload)
    want_o = 0;
  else
    want_h = 0;
  zs_engine *e = NULL;
  zs_unit *u[SL_NU];
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  zs_param_group g;
  int gid[SL_NU] = {0, -1, -1, -1, -1, -1, -1};
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  g.optimizer = "muon";
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &gid[1]));
  gid[2] = gid[5] = gid[1]; /* their matrices; their biases stay in group 0 */
  g.optimizer = "sgd";
  g.momentum = 0;
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &gid[3]));
  g.momentum = 0.9f;
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &gid[4]));
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  g.optimizer = "adafactor";
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &gid[6]));
  static const char *const names[SL_NU] = {"adamw", "muon", "mixed", "sgd", "sgdm", "empty", "ada"};
  for (int i = 0; i < SL_NU; i++) {
    ZS_OK_OR_DIE(zs_engine_add_unit(e, names[i], pu[i].ntensors, pu[i].tensors, &u[i]));
    for (int k = 0; pu[i].optimizer && k < pu[i].ntensors; k++)
      if (pu[i].optimizer[k] >= 0) ZS_OK_OR_DIE(zs_unit_set_group(u[i], k, gid[i]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  zs_memory m, plan;
  zs_plan_report r;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_OK_OR_DIE(zs_engine_plan_memory(e, &plan));
  ZS_OK_OR_DIE(zs_plan_model_units(&cfg, (int)N, pu, SL_NU, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_EXPECT(strstr(zs_engine_info(e),
                   "; 1 unit keeps 0 state arrays; 2 units keep 1 state array; "
                   "3 units pack state arrays that only some of their tensors or elements keep"),
            "the info says which units keep fewer arrays and which pack them: %s",
            zs_engine_info(e));
  ZS_EXPECT(m.optimizer.cur == want_o && plan.optimizer.cur == want_o && r.optimizer == want_o,
            "stage %d offload %u m16 %d: optimizer bytes %zu, plan %zu, zs_plan_model_units %zu; "
            "want %zu",
            stage, offload, moments_bf16, (size_t)m.optimizer.cur, (size_t)plan.optimizer.cur,
            r.optimizer, want_o);
  ZS_EXPECT(m.host_pinned.cur == want_h && plan.host_pinned.cur == want_h &&
                r.host_pinned == want_h,
            "stage %d offload %u m16 %d: host bytes %zu, plan %zu, zs_plan_model_units %zu; want "
            "%zu",
            stage, offload, moments_bf16, (size_t)m.host_pinned.cur, (size_t)plan.host_pinned.cur,
            r.host_pinned, want_h);
  /* The SGD units' params before the step, and a gradient that is the same on every rank (so
     their mean, g, is it), one micro-step. */
  float p0[2][96], gv[96];
  for (int j = 0; j < 96; j++)
    gv[j] = (float)((j * 7) % 13) - 6.0f;
  float bp0[2][40], bm[40], bv[40];
  for (int i = 3; i <= 4; i++)
    ZS_OK_OR_DIE(zs_unit_get_param(u[i], 0, p0[i - 3]));
  ZS_OK_OR_DIE(zs_unit_get_param(u[2], 1, bp0[0]));
  ZS_OK_OR_DIE(zs_unit_get_param(u[2], 3, bp0[1]));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = SL_NU - 1; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    for (int k = 0; k < pu[i].ntensors; k++) {
      float *gr = zs_unit_grad(u[i], k);
      const int64_t n =
          pu[i].tensors[k].shape[0] * (pu[i].tensors[k].ndim > 1 ? pu[i].tensors[k].shape[1] : 1);
      ZS_EXPECT(gr != NULL || n == 0, "unit %s tensor %d has a gradient", names[i], k);
      for (int64_t j = 0; gr && j < n; j++)
        gr[j] = (float)((j * 7 + k + i) % 13) - 6.0f;
      if ((i == 3 || i == 4) && gr) memcpy(gr, gv, (size_t)n * sizeof *gr);
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  /* SGD's first step, momentum or not: d = wd p + g (the buffer with momentum), p -= lr d. */
  float v[512], w[512];
  const double lr = cfg.optim.lr, wd = cfg.optim.weight_decay;
  for (int i = 3; i <= 4; i++) {
    const int n = (int)psi[i];
    ZS_OK_OR_DIE(zs_unit_get_param(u[i], 0, v));
    if (i == 4) ZS_OK_OR_DIE(zs_unit_get_state(u[i], 0, "exp_avg", w));
    for (int j = 0; j < n; j++) {
      const double d = wd * p0[i - 3][j] + gv[j], p = p0[i - 3][j] - lr * d;
      ZS_EXPECT(fabs(v[j] - p) <= 1e-6 * (fabs(p) + lr), "unit %s param %d: %.9g, float64 %.9g",
                names[i], j, (double)v[j], p);
      ZS_EXPECT(i == 3 || fabs(w[j] - d) <= (moments_bf16 ? 4e-3 : 1e-6) * (fabs(d) + 1e-3),
                "unit %s buffer %d: %.9g, float64 %.9g", names[i], j, (double)w[j], d);
    }
  }
  /* The mixed unit's biases: AdamW's first step (m = (1 - b1) g, v = (1 - b2) g^2,
     bias-corrected m / (sqrt(v) + eps) = g / (|g| + eps), no decay) read through the packed
     array; then their written state reads back, and the Muon tensors' second array reads zeros. */
  const double b1 = cfg.optim.beta1, b2 = cfg.optim.beta2, eps = cfg.optim.eps;
  const double tol = moments_bf16 ? 8e-3 : 1e-6;
  for (int k = 1; k < 4; k += 2) {
    const int n = k == 1 ? 40 : 8;
    ZS_OK_OR_DIE(zs_unit_get_state(u[2], k, "exp_avg", bm));
    ZS_OK_OR_DIE(zs_unit_get_state(u[2], k, "exp_avg_sq", bv));
    ZS_OK_OR_DIE(zs_unit_get_param(u[2], k, v));
    for (int j = 0; j < n; j++) {
      const double g = (double)((j * 7 + k + 2) % 13) - 6.0, wm = (1 - b1) * g,
                   wv = (1 - b2) * g * g, p = bp0[k / 2][j] - lr * g / (fabs(g) + eps);
      ZS_EXPECT(fabs(bm[j] - wm) <= tol * (fabs(wm) + 1e-3) &&
                    fabs(bv[j] - wv) <= tol * (wv + 1e-3),
                "mixed unit tensor %d element %d: m %.9g v %.9g, float64 %.9g %.9g", k, j,
                (double)bm[j], (double)bv[j], wm, wv);
      ZS_EXPECT(fabs(v[j] - p) <= 1e-6 * (fabs(p) + lr),
                "mixed unit tensor %d element %d: %.9g, float64 %.9g", k, j, (double)v[j], p);
    }
    for (int j = 0; j < n; j++)
      bv[j] = 0.25f * (float)(j + k);
    ZS_OK_OR_DIE(zs_unit_set_state(u[2], k, "exp_avg_sq", bv));
  }
  for (int k = 1; k < 4; k += 2) {
    ZS_OK_OR_DIE(zs_unit_get_state(u[2], k, "exp_avg_sq", bm));
    for (int j = 0; j < (k == 1 ? 40 : 8); j++)
      ZS_EXPECT(bm[j] == 0.25f * (float)(j + k), "mixed unit tensor %d exp_avg_sq %d reads %g", k,
                j, (double)bm[j]);
  }
  for (int k = 0; k < 3; k += 2) {
    ZS_OK_OR_DIE(zs_unit_get_state(u[2], k, "exp_avg_sq", w));
    for (int j = 0; j < (k ? 72 : 32); j++)
      ZS_EXPECT(w[j] == 0, "mixed unit tensor %d's unkept exp_avg_sq reads %g at %d", k,
                (double)w[j], j);
  }
  /* Adafactor's first step (w = 1): a vector's V = G^2, a matrix's R_i = mean_j G_ij^2 and
     C_j = mean_i G_ij^2 in its first 12 + 10 elements, zeros after them (a write there is
     dropped); G = g (every rank's g is the same). */
  const double vtol = moments_bf16 ? 8e-3 : 1e-6;
  ZS_OK_OR_DIE(zs_unit_get_state(u[6], 0, "exp_avg", v));
  for (int j = 0; j < 28; j++) {
    const double g = (double)((j * 7 + 0 + 6) % 13) - 6.0;
    ZS_EXPECT(fabs(v[j] - g * g) <= vtol * (g * g + 1e-3), "Adafactor vector V %d: %.9g, want %g",
              j, (double)v[j], g * g);
  }
  ZS_OK_OR_DIE(zs_unit_get_state(u[6], 1, "exp_avg", v));
  double rc[22] = {0};
  for (int r = 0; r < 12; r++)
    for (int c = 0; c < 10; c++) {
      const double g = (double)(((r * 10 + c) * 7 + 1 + 6) % 13) - 6.0;
      rc[r] += g * g / 10;
      rc[12 + c] += g * g / 12;
    }
  for (int j = 0; j < 120; j++) {
    const double want = j < 22 ? rc[j] : 0;
    ZS_EXPECT(fabs(v[j] - want) <= vtol * want, "Adafactor matrix's state %d: %.9g, want %.9g", j,
              (double)v[j], want);
    w[j] = 1.0f + (float)j;
  }
  ZS_OK_OR_DIE(zs_unit_set_state(u[6], 1, "exp_avg", w));
  ZS_OK_OR_DIE(zs_unit_get_state(u[6], 1, "exp_avg", v));
  for (int j = 0; j < 120; j++)
    ZS_EXPECT(v[j] == (j < 22 ? w[j] : 0.0f), "Adafactor matrix's written state %d reads %g", j,
              (double)v[j]);
  ZS_OK_OR_DIE(zs_unit_get_state(u[1], 0, "exp_avg", v));
  int moved = 0;
  for (int j = 0; j < 512; j++)
    moved |= v[j] != 0;
  ZS_EXPECT(moved, "the Muon unit's momentum moved");
  ZS_OK_OR_DIE(zs_unit_get_state(u[1], 0, "exp_avg_sq", v));
  for (int j = 0; j < 512; j++)
    ZS_EXPECT(v[j] == 0, "the Muon unit's unkept exp_avg_sq reads %g at %d", (double)v[j], j);
  for (int j = 0; j < 512; j++)
    w[j] = 1.0f;
  ZS_EXPECT_STATUS(zs_unit_set_state(u[1], 0, "exp_avg_sq", w), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'a' is in group 1 on 'muon'"), "names why: %s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_unit_set_state(u[3], 0, "exp_avg", w), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "keeps 0 of"), "names why: %s", zs_last_error());
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  for (int stage = 0; stage <= 3; stage++) {
    check_stage(comm, stage, ZS_F32);
    check_stage(comm, stage, ZS_BF16);
  }
  for (int stage = 1; stage <= 3; stage++)
    check_offload(comm, stage, ZS_OFFLOAD_OPTIMIZER, ZS_BF16);
  check_offload(comm, 3, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS, ZS_BF16);
  check_offload(comm, 3, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS, ZS_F32);
  check_prefetch(comm);
  check_switches(comm, 0);
  check_switches(comm, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS);
  check_muon(comm);
  check_planner_whole(comm, "muon", 64, 64, 1, -1);
  check_planner_whole(comm, "muon", 24, 160, 0, -1);
  check_planner_whole(comm, "adafactor", 48, 48, 0, 96);
  check_planner_whole(comm, "adafactor", 1, 2000, 1, -1);
  check_planner_units(comm, 3, 0);
  check_planner_units(comm, 2, ZS_OFFLOAD_OPTIMIZER);
  check_planner_units(comm, 0, 0);
  check_state_layout(comm, 0, 0, 0);
  check_state_layout(comm, 1, 0, 1);
  check_state_layout(comm, 2, ZS_OFFLOAD_OPTIMIZER, 0);
  check_state_layout(comm, 3, 0, 0);
  check_state_layout(comm, 3, ZS_OFFLOAD_OPTIMIZER, 1);
  if (zs_comm_rank(comm) == 0)
    printf("test_engine_memory: world %d, ledger matches the ZeRO formulas for stages 0-3\n",
           zs_comm_size(comm));
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_memory");
}
