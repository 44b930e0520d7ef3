/* The NVMe tier's step against host offload: the same model, data and configuration trained twice
 * in one process, first with every unit's optimizer state in the host arena (offload optimizer, no
 * nvme_path), then with nvme_path set and offload_host_bytes small enough that the placement puts
 * the largest units on the tier (--mode some: the largest one; --mode all: every unit whose state
 * is over the arena's headroom). The final weights must be bit-identical (deterministic mode) or
 * within --tol (otherwise: the reductions may regroup between the two runs); the tier must hold
 * the units zs_plan_model_units says, the ledger's host bytes equal the planner's, the step's I/O
 * show in zs_engine_facts_get, and the tier's directory be gone after destroy. --write F /
 * --compare F with
 * --tol write and compare the weights across runs (tests/engine/engine_equiv.sh: world sizes and
 * splits of the global batch); rank r's micro-step m of step s trains on batch
 * s * world * micro + m * world + r, so every split sees the same batches.
 * With --device cuda both runs train on the CUDA device (the tier's chunks then reach the device
 * through the copy pipeline's pinned staging) and the "backward" copies params down and gradients
 * up; without a GPU it prints one SKIP line and passes.
 * The tier's files go under DIR, or where DIR cannot hold them under $TMPDIR, /tmp or /var/tmp
 * (nvt_find_root; none: "SKIP: no O_DIRECT filesystem" and exit 77).
 * Usage: test_engine_nvme_train --dir DIR [--stage S] [--micro M] [--steps K] [--det 0|1]
 *        [--big N (elements of unit big's first tensor)] [--mode some|all] [--offload BITS (1 or 3;
 * 0: the host tier by the least offload budget, as stage 0 needs)] [--write F] [--compare F] [--tol
 * X] [--device cpu|cuda] [--bf16 0|1 (bf16 params and gradients)] [--master
 * fp32|params|remainder|lean] [--moments-bf16 0|1] [--sgd M (SGD, momentum M, dampening 0.1)]
 * [--lion 1] [--groups 1 (two parameter groups: unit big's first tensor, the last unit)]
 * [--whole muon|adafactor (unit big's first tensor a matrix, rows its smallest divisor from 2, in
 * a group on that optimizer: its whole step's gather and store through the tier's passes; with
 * adafactor its bias too: a unit that keeps one state array on the tier)]
 * [--accum-fp32 1 (zs_config.grad_accum_fp32: fp32 gradients with --bf16 1)] The
 * precision modes put their own arrays on the tier (the remainders 2 bytes, bf16
 * moments, no master file in lean mode or where ZS_MASTER_PARAMS's params live on the host): the
 * same bits as host offload in that mode, and as the mode's 1-rank in-memory run (engine_equiv.sh).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef ZS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "base/bf16.h"
#include "engine/engine_internal.h"
#include "tier/nvme_tier.h"         /* check_staging: the tier's staging as the engine opened it */
#include "offload/nvme_test_util.h" /* nvt_find_root */
#include "zs_test.h"

#define NU 5
typedef struct {
  const char *name;
  int nt;
  int64_t n[2];
  int nowd[2];
} unit_def;
/* Three units large enough for the tier at any world size up to 4 (big and mid), one only at
   world 1 and 2 (small), one that stays in memory (smaller, tiny); odd sizes, decay-free
   tensors inside chunks. */
static unit_def U[NU] = {{"big", 2, {4000001, 77}, {0, 1}},
                         {"mid", 2, {3000007, 5}, {0, 1}},
                         {"small", 1, {500003, 0}, {0, 0}},
                         {"smaller", 2, {300007, 3}, {1, 0}},
                         {"tiny", 1, {33, 0}, {0, 0}}};
/* A margin the cap leaves above what stays in memory (the arena reserves exactly the planned
   bytes, test_engine_host_cap): it keeps these caps clear of the boundary, which engine_host_cap
   tests to the byte. */
static size_t headroom(size_t in_memory) {
  return ((size_t)1 << 20) + in_memory / 8;
}

typedef struct {
  int stage, micro, steps, det, offload, cuda;
  int bf16, master, moments_bf16; /* params' dtype, zs_config.master, moment_dtype */
  float sgd;                      /* --sgd M: zs_config.optimizer = ZS_OPT_SGD, momentum M (>= 0);
                                     < 0: AdamW */
  int lion;                       /* --lion 1: zs_config.optimizer = ZS_OPT_LION */
  int groups;        /* --groups 1: two parameter groups (train's), the same in both runs */
  const char *whole; /* --whole NAME: unit big's first tensor a matrix on that optimizer */
  int accum;         /* --accum-fp32 1: zs_config.grad_accum_fp32 (with --bf16 1) */
  size_t budget; /* --offload 0: the host tier by an offload budget (stage 0 has no ZS_OFFLOAD_*) */
  int all;
  double tol;
  const char *dir, *write, *compare;
} opts;

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static float unit01(uint64_t h) {
  return (float)(h >> 40) * (1.0f / 16777216.0f);
}
static int64_t base_of(int u, int k) {
  int64_t b = 0;
  for (int i = 0; i < u; i++)
    for (int j = 0; j < U[i].nt; j++)
      b += U[i].n[j];
  for (int j = 0; j < k; j++)
    b += U[u].n[j];
  return b;
}
static int64_t total(void) {
  return base_of(NU - 1, 0) + U[NU - 1].n[0];
}

/* Unit i's tensors: vectors, but with --whole unit big's first tensor is a matrix of rows x cols,
   rows the smallest divisor of its size from 2 (a prime: 1 row). */
static void unit_descs(const opts *o, int i, zs_tensor_desc t[2]) {
  static const char *const tn[2] = {"w", "b"};
  for (int k = 0; k < U[i].nt; k++)
    t[k] = (zs_tensor_desc){tn[k], 1, {U[i].n[k], 0, 0, 0}, U[i].nowd[k]};
  if (i == 0 && o->whole) {
    int64_t r = 2;
    while (r * r <= U[0].n[0] && U[0].n[0] % r)
      r++;
    if (U[0].n[0] % r) r = 1;
    t[0].ndim = 2;
    t[0].shape[0] = r;
    t[0].shape[1] = U[0].n[0] / r;
  }
}

/* Whether --whole puts tensor k of unit big in its group: the matrix; with Adafactor, which takes
   vectors too, the bias as well, so the unit keeps one state array (AdamW's units two). */
static int whole_takes(const opts *o, int k) {
  return o->whole && (k == 0 || !strcmp(o->whole, "adafactor"));
}

/* The planner's report of the units of `which` (NULL: all) under c, each tensor on its group's
   optimizer (zs_plan_model_units: a unit all on Adafactor keeps one array). */
static void plan_units(const zs_config *c, const opts *o, int world, const int *which,
                       zs_plan_report *r) {
  zs_tensor_desc t[NU][2];
  int opt[NU][2], whole = -1;
  if (o->whole) ZS_OK_OR_DIE(zs_optimizer_id(o->whole, &whole));
  zs_plan_unit pu[NU];
  int k = 0;
  for (int i = 0; i < NU; i++) {
    if (which && !which[i]) continue;
    unit_descs(o, i, t[i]);
    for (int j = 0; j < U[i].nt; j++)
      opt[i][j] = i == 0 && whole_takes(o, j) ? whole : -1;
    pu[k++] = (zs_plan_unit){U[i].nt, t[i], opt[i], 0, NULL};
  }
  ZS_OK_OR_DIE(zs_plan_model_units(c, world, pu, k, 0, SIZE_MAX, SIZE_MAX, r));
}

/* Collects every tensor's place in one flat array (zs_engine_get_params' callback). */
static int locate(void *user, const zs_unit *u, int ui, int t, const char *name, int64_t n,
                  float **host) {
  (void)u, (void)name, (void)n;
  *host = (float *)user + base_of(ui, t);
  return 0;
}

/* The configuration of every run (the tier's adds nvme_path and the cap); stage 0 has no host
   tier: a plain run (the reference of the cross-stage comparisons). */
static void base_config(const opts *o, zs_config *c) {
  zs_config_default(c);
  c->stage = o->stage;
  c->deterministic = o->det;
  c->offload = o->stage ? (unsigned)o->offload : 0;
  c->offload_budget_bytes = o->budget;
  c->offload_allow_unpinned = 1;
  c->offload_chunk = 32768; /* chunks that cut tensors: segments begin and end inside them */
  c->adamw.lr = 0.01f;
  c->adamw.weight_decay = 0.1f;
  c->adamw.max_grad_norm = 50.0f;
  c->comm_timeout_s = 120;
  c->device = o->cuda ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  c->param_dtype = c->reduce_dtype = o->bf16 ? ZS_BF16 : ZS_F32;
  c->grad_accum_fp32 = o->accum;
  c->master = o->master;
  c->moment_dtype = o->moments_bf16 ? ZS_BF16 : ZS_F32;
  if (o->lion) {
    c->optimizer = ZS_OPT_LION;
    c->optim.beta2 = 0.99f;
  }
  if (o->sgd >= 0) {
    c->optimizer = ZS_OPT_SGD;
    c->sgd.momentum = o->sgd;
    c->sgd.dampening = 0.1f;
  }
}

/* Element i of a host copy of params or gradients (bf16 widened exactly). */
static float load(const void *p, int bf16, int64_t i) {
  return bf16 ? zs_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
/* Adds x to element i (bf16: rounded to nearest even, as a bf16 backward writes). */
static void add(void *p, int bf16, int64_t i, float x) {
  if (bf16)
    ((uint16_t *)p)[i] = zs_f32_to_bf16(zs_bf16_to_f32(((uint16_t *)p)[i]) + x);
  else
    ((float *)p)[i] += x;
}

/* The tier's staging as the engine opened it: booked in host_pinned as the planner counts it
   (zs_placement_nvme_staging), pinned on CUDA (registered host memory for the CUDA runtime) and
   not on the CPU device; the step then runs through these very slots. */
static void check_staging(zs_engine *e, const zs_config *c) {
  const zs_nvme_tier *t = e->tiers.nvme;
  ZS_EXPECT(t && t->staging, "the tier has no staging after commit");
  if (!t || !t->staging) return;
  ZS_EXPECT(t->booked == zs_placement_nvme_staging(c), "staging booked %zu, planner %zu", t->booked,
            zs_placement_nvme_staging(c));
  const size_t bytes = zs_nvme_staging_slots(t->staging) * zs_nvme_staging_slot_bytes(t->staging);
  ZS_EXPECT(t->booked <= bytes, "staging booked %zu over its %zu bytes", t->booked, bytes);
  zs_memory mem;
  ZS_OK_OR_DIE(zs_engine_memory(e, &mem));
  ZS_EXPECT(mem.host_pinned.cur >= t->booked, "host_pinned %zu lacks the staging's %zu",
            (size_t)mem.host_pinned.cur, t->booked);
  const int cuda = c->device == ZS_DEVICE_CUDA;
  ZS_EXPECT(zs_nvme_staging_pinned(t->staging) == cuda, "staging pinned %d on the %s device",
            zs_nvme_staging_pinned(t->staging), cuda ? "CUDA" : "CPU");
#ifdef ZS_HAVE_CUDA
  if (cuda) {
    struct cudaPointerAttributes at;
    const cudaError_t ce = cudaPointerGetAttributes(&at, zs_nvme_staging_slot(t->staging, 2));
    ZS_EXPECT(ce == cudaSuccess && at.type == cudaMemoryTypeHost,
              "staging slot 2 is not registered host memory: %s, type %d", cudaGetErrorString(ce),
              (int)at.type);
  }
#endif
}

/* One training run; the final weights into w (total() floats). nvme: the tier's run under cap. */
static void train(zs_comm *comm, const opts *o, int nvme, size_t cap, float *w, int *on_tier) {
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  zs_config c;
  base_config(o, &c);
  if (nvme) {
    c.nvme_path = o->dir;
    c.offload_host_bytes = cap;
  }
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  zs_unit *units[NU];
  for (int i = 0; i < NU; i++) {
    zs_tensor_desc t[2];
    unit_descs(o, i, t);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, U[i].name, U[i].nt, t, &units[i]));
  }
  if (o->groups == 1) { /* the tier's update takes each segment's group, as the arena's does */
    static const zs_param_group gs[2] = {
        {sizeof(zs_param_group), 0.5f, 0.0f, 0.8f, 0.99f, 1e-6f, 0.5f, 0},
        {sizeof(zs_param_group), 2.0f, 0.3f, 0.95f, 0.98f, 1e-7f, 0.8f, 0}};
    int id[2];
    for (int i = 0; i < 2; i++) {
      zs_param_group g = gs[i];
      if (o->sgd == 0) g.momentum = 0; /* plain SGD keeps no buffer in any group */
      ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id[i]));
    }
    ZS_OK_OR_DIE(zs_unit_set_group(units[0], 0, id[0]));
    ZS_OK_OR_DIE(zs_unit_set_group(units[NU - 1], -1, id[1]));
  }
  if (o->whole) { /* a whole-tensor optimizer's matrix (a unit the tier holds) */
    zs_param_group g;
    int id = -1;
    ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
    g.optimizer = o->whole;
    ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
    for (int k = 0; k < U[0].nt; k++)
      if (whole_takes(o, k)) ZS_OK_OR_DIE(zs_unit_set_group(units[0], k, id));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  if (nvme) check_staging(e, &c);
  const int64_t N = total();
  float *h = malloc((size_t)N * 4);
  for (int64_t i = 0; i < N; i++)
    h[i] = 2.0f * unit01(mix((uint64_t)i)) - 1.0f;
  /* Host copies of one tensor's params and gradient (the device's, on CUDA). */
  float *hp = malloc((size_t)U[0].n[0] * 4 + 4), *hg = malloc((size_t)U[0].n[0] * 4 + 4);
  for (int u = 0; u < NU; u++)
    for (int k = 0; k < U[u].nt; k++)
      ZS_OK_OR_DIE(zs_unit_set_param(units[u], k, h + base_of(u, k)));
  double io_total = 0; /* the steps' io_seconds */
  for (int s = 0; s < o->steps; s++) {
    ZS_OK_OR_DIE(zs_engine_begin_step(e, o->micro));
    for (int m = 0; m < o->micro; m++) {
      const uint64_t batch = (uint64_t)s * (uint64_t)(world * o->micro) +
                             (uint64_t)m * (uint64_t)world + (uint64_t)rank;
      for (int u = NU - 1; u >= 0; u--) {
        ZS_OK_OR_DIE(zs_unit_gather(units[u]));
        for (int k = 0; k < U[u].nt; k++) {
          const float *dp = zs_unit_param(units[u], k);
          float *dg = zs_unit_grad(units[u], k);
          ZS_EXPECT(dp && dg, "NULL param/grad: %s", zs_last_error());
          const int64_t b = base_of(u, k);
          const size_t bytes = (size_t)U[u].n[k] * (o->bf16 ? 2 : 4);
#ifdef ZS_HAVE_CUDA
          if (o->cuda) cudaStreamSynchronize((cudaStream_t)zs_engine_stream(e));
#endif
          zs_test_copy(hp, dp, bytes, o->cuda);
          zs_test_copy(hg, dg, bytes, o->cuda);
          for (int64_t i = 0; i < U[u].n[k]; i++) {
            const uint64_t key = mix(batch * 0x100000001b3ull + (uint64_t)(b + i));
            const float a = 0.5f + unit01(key), tgt = 2.0f * unit01(mix(key)) - 1.0f;
            add(hg, o->bf16, i, a * (load(hp, o->bf16, i) - tgt));
          }
          zs_test_copy(dg, hg, bytes, o->cuda);
        }
        ZS_OK_OR_DIE(zs_unit_grads_ready(units[u]));
        ZS_OK_OR_DIE(zs_unit_release(units[u]));
      }
    }
    zs_step_stats st;
    ZS_OK_OR_DIE(zs_engine_step(e, &st));
    /* The disk's waits are a disjoint part of the step (zs_step_stats 4). */
    ZS_EXPECT(st.struct_version == 5 && st.io_seconds >= 0 &&
                  st.check_seconds + st.comm_seconds + st.update_seconds + st.io_seconds <=
                      st.step_seconds,
              "check %g + comm %g + update %g + io %g s of a %g s step", st.check_seconds,
              st.comm_seconds, st.update_seconds, st.io_seconds, st.step_seconds);
    io_total += st.io_seconds;
  }
  ZS_OK_OR_DIE(zs_engine_get_params(e, locate, w));
  /* zs_unit_get_param agrees with the bulk read (the tier's two read paths). */
  for (int u = 0; u < NU; u++)
    for (int k = 0; k < U[u].nt; k++) {
      ZS_OK_OR_DIE(zs_unit_get_param(units[u], k, h));
      ZS_EXPECT(memcmp(h, w + base_of(u, k), (size_t)U[u].n[k] * 4) == 0,
                "unit %s tensor %d: zs_unit_get_param differs from zs_engine_get_params", U[u].name,
                k);
    }
  free(h);
  free(hp);
  free(hg);
  *on_tier = 0;
  const char *info = zs_engine_info(e);
  const zs_engine_facts f = zs_test_facts(e);
  if (nvme) {
    ZS_EXPECT(f.nvme && f.committed, "no tier placement in the facts: %s", info);
    *on_tier = f.nvme_units;
    ZS_EXPECT(f.nvme_units == 0 || (io_total > 0 && io_total <= f.nvme_io_seconds),
              "the steps' io_seconds %g with %d units on the tier (their passes: %g s)", io_total,
              f.nvme_units, f.nvme_io_seconds);
    zs_memory mem, plan;
    ZS_OK_OR_DIE(zs_engine_memory(e, &mem));
    ZS_OK_OR_DIE(zs_engine_plan_memory(e, &plan));
    ZS_EXPECT(mem.host_pinned.cur == plan.host_pinned.cur, "host_pinned: ledger %zu, planner %zu",
              (size_t)mem.host_pinned.cur, (size_t)plan.host_pinned.cur);
    ZS_EXPECT(
        f.nvme_read_bytes > 0 && f.nvme_written_bytes == f.nvme_read_bytes && f.nvme_io_seconds > 0,
        "step I/O %llu bytes read, %llu written in %g s: %s", (unsigned long long)f.nvme_read_bytes,
        (unsigned long long)f.nvme_written_bytes, f.nvme_io_seconds, info);
    char dir[4096] = "";
    if (f.nvme_dir) snprintf(dir, sizeof dir, "%s", f.nvme_dir);
    if (rank == 0) printf("nvme run: %s\n", info);
    zs_engine_destroy(e); /* info is the engine's: not read after this */
    struct stat sb;
    ZS_EXPECT(*dir && stat(dir, &sb) != 0, "the tier directory '%s' is still there", dir);
    return;
  }
  zs_engine_destroy(e);
}

/* The host-offload run and the tier's run of o (the cap chosen here), compared; the tier's
   weights into tier. */
static void tier_vs_host(zs_comm *comm, opts *o, float *tier) {
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  /* The cap: the units moved to the tier are the j largest (state bytes on this world, sorted);
     the cap leaves the arena's headroom above what stays in memory, which must be under the
     smallest moved unit's state (else the placement would keep that unit). --mode some: the
     least such j, all: the largest. */
  zs_config c;
  base_config(o, &c);
  zs_plan_report r;
  if (!o->offload) { /* the least budget: every unit's optimizer state on the host */
    c.offload_budget_bytes = 1;
    plan_units(&c, o, world, NULL, &r);
    o->budget = c.offload_budget_bytes = r.budget_floor;
  }
  /* Each unit's optimizer-state bytes in host memory on this world in this mode: what moving it
     alone to the tier under the least cap frees (its host bytes without the tier, less those with
     it, the tier's staging aside: whole pages, and fewer than its disk bytes where the host packs
     its arrays, opt_pack.h), and the tier's staging (every unit on it). */
  size_t b[NU], order[NU];
  zs_config hc = c, sc;
  if (!o->offload) hc.offload_budget_bytes = 1; /* the unit alone: on the host too */
  sc = hc;
  sc.nvme_path = o->dir;
  sc.offload_host_bytes = 1;
  for (int i = 0; i < NU; i++) {
    int one[NU] = {0};
    one[i] = 1;
    plan_units(&hc, o, world, one, &r);
    const size_t in_memory = r.host_pinned;
    plan_units(&sc, o, world, one, &r);
    b[i] = in_memory - (r.host_pinned - r.nvme_staging);
    ZS_EXPECT(r.nvme_units == 1, "unit %d alone: %zu units on the tier", i, (size_t)r.nvme_units);
    order[i] = (size_t)i;
  }
  plan_units(&sc, o, world, NULL, &r);
  const size_t staging = r.nvme_staging;
  for (int i = 0; i < NU; i++)
    for (int j = i + 1; j < NU; j++)
      if (b[order[j]] > b[order[i]]) {
        const size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  plan_units(&c, o, world, NULL, &r);
  const size_t host_all = r.host_pinned;
  int moved = 0;
  size_t cap = 0, top = 0;
  for (int j = 1; j <= NU; j++) {
    top += b[order[j - 1]];
    const size_t stays = host_all - top, room = headroom(stays);
    if (b[order[j - 1]] <= room + staging || (moved && !o->all)) continue;
    moved = j;
    cap = stays + staging + room;
  }
  ZS_EXPECT(moved > 0, "no placement leaves the arena its headroom");
  int big_moved = 0; /* --whole: unit big's whole-tensor step is what the run is for */
  for (int j = 0; j < moved; j++)
    big_moved |= order[j] == 0;
  ZS_EXPECT(!o->whole || big_moved, "--whole %s: unit big is not among the %d units on the tier",
            o->whole, moved);
  /* The planner agrees: exactly `moved` units on the tier. */
  zs_config nc = c;
  nc.nvme_path = o->dir;
  nc.offload_host_bytes = cap;
  plan_units(&nc, o, world, NULL, &r);
  ZS_EXPECT((int)r.nvme_units == moved && r.fits,
            "cap %zu: the planner puts %zu units on the tier, want %d (fits %d)", cap,
            (size_t)r.nvme_units, moved, r.fits);

  const int64_t N = total();
  float *host = malloc((size_t)N * 4);
  int k0 = 0, k1 = 0;
  train(comm, o, 0, 0, host, &k0);
  train(comm, o, 1, cap, tier, &k1);
  ZS_EXPECT(k1 == moved, "%d units on the tier, want %d", k1, moved);
  int64_t ndiff = 0;
  double worst = 0;
  for (int64_t i = 0; i < N; i++) {
    if (o->det) {
      if (memcmp(&host[i], &tier[i], 4) != 0 && ndiff++ < 5)
        fprintf(stderr, "rank %d: element %lld: tier %.9g != host offload %.9g\n", rank,
                (long long)i, (double)tier[i], (double)host[i]);
    } else {
      const double d = fabs((double)tier[i] - host[i]) / fmax(fabs((double)host[i]), 1.0);
      if (d > worst) worst = d;
      if (d > 1e-6) ndiff++;
    }
  }
  ZS_EXPECT(ndiff == 0, "rank %d: %lld of %lld weights differ from host offload (worst %.3g)", rank,
            (long long)ndiff, (long long)N, worst);
  if (rank == 0)
    printf("stage %d world %d micro %d det %d offload %d: %d units on the tier, cap %zu: %s\n",
           o->stage, world, o->micro, o->det, o->offload, k1, cap,
           ndiff ? "DIFFERENT" : "same weights as host offload");
  free(host);
}

int main(int argc, char **argv) {
  opts o = {3, 1, 3,    1, 1, 0, 0,   ZS_MASTER_FP32, 0,    -1.0f,
            0, 0, NULL, 0, 0, 0, 0.0, NULL,           NULL, NULL};
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--stage"))
      o.stage = atoi(v);
    else if (!strcmp(k, "--micro"))
      o.micro = atoi(v);
    else if (!strcmp(k, "--steps"))
      o.steps = atoi(v);
    else if (!strcmp(k, "--det"))
      o.det = atoi(v);
    else if (!strcmp(k, "--offload"))
      o.offload = atoi(v);
    else if (!strcmp(k, "--mode"))
      o.all = !strcmp(v, "all");
    else if (!strcmp(k, "--dir"))
      o.dir = v;
    else if (!strcmp(k, "--write"))
      o.write = v;
    else if (!strcmp(k, "--compare"))
      o.compare = v;
    else if (!strcmp(k, "--tol"))
      o.tol = atof(v);
    else if (!strcmp(k, "--big")) /* unit big's first tensor (room for host-resident params) */
      U[0].n[0] = atoll(v);
    else if (!strcmp(k, "--device"))
      o.cuda = !strcmp(v, "cuda");
    else if (!strcmp(k, "--bf16"))
      o.bf16 = atoi(v);
    else if (!strcmp(k, "--moments-bf16"))
      o.moments_bf16 = atoi(v);
    else if (!strcmp(k, "--sgd"))
      o.sgd = (float)atof(v);
    else if (!strcmp(k, "--lion"))
      o.lion = atoi(v);
    else if (!strcmp(k, "--groups"))
      o.groups = atoi(v);
    else if (!strcmp(k, "--whole"))
      o.whole = v;
    else if (!strcmp(k, "--accum-fp32"))
      o.accum = atoi(v);
    else if (!strcmp(k, "--master"))
      o.master = !strcmp(v, "params")      ? ZS_MASTER_PARAMS
                 : !strcmp(v, "remainder") ? ZS_MASTER_REMAINDER
                 : !strcmp(v, "lean")      ? ZS_MASTER_LEAN
                                           : ZS_MASTER_FP32;
    else {
      fprintf(stderr, "unknown option %s\n", k);
      return 2;
    }
  }
  ZS_EXPECT(o.dir != NULL, "--dir DIR is required");
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  if (o.cuda) {
    if (zs_test_cuda_skip(zs_comm_rank(comm))) {
      zs_comm_destroy(comm);
      return 0;
    }
  }
  char root[4096]; /* --dir, or the first other folder O_DIRECT works in (every rank finds it) */
  if (!nvt_find_root(o.dir, root, sizeof root)) {
    zs_comm_destroy(comm);
    return 77;
  }
  o.dir = root;
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  const int64_t N = total();
  float *tier = malloc((size_t)N * 4);
  int moved = 0;
  if (o.stage == 0) /* no host tier at stage 0: one plain run (a cross-stage reference) */
    train(comm, &o, 0, 0, tier, &moved);
  else
    tier_vs_host(comm, &o, tier);
  if (rank == 0 && o.write) {
    FILE *f = fopen(o.write, "wb");
    ZS_EXPECT(f && fwrite(tier, 4, (size_t)N, f) == (size_t)N, "cannot write %s", o.write);
    if (f) fclose(f);
  }
  if (o.compare) {
    float *want = malloc((size_t)N * 4);
    FILE *f = fopen(o.compare, "rb");
    ZS_EXPECT(f && fread(want, 4, (size_t)N, f) == (size_t)N, "cannot read %s", o.compare);
    if (f) fclose(f);
    int64_t nd = 0;
    for (int64_t i = 0; i < N; i++) {
      const double d = fabs((double)tier[i] - want[i]) / fmax(fabs((double)want[i]), 1.0);
      if (o.tol == 0.0 ? memcmp(&tier[i], &want[i], 4) != 0 : d > o.tol) nd++;
    }
    ZS_EXPECT(nd == 0, "rank %d: %lld of %lld weights differ from %s (tol %g)", rank, (long long)nd,
              (long long)N, o.compare, o.tol);
    free(want);
  }
  if (rank == 0 && o.stage == 0)
    printf("stage 0 world %d micro %d det %d: a plain run (no host tier at stage 0)\n", world,
           o.micro, o.det);
  free(tier);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_nvme_train");
}
