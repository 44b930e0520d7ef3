/* Randomized protocol test (model-based) of the engine's promises in every legal call order.
 *
 * Each sequence, from its seed: a random configuration (stage 0-3 or explicit sharding switches,
 * offload mode, prefetch_units,
 * max_live_bytes, bucket_bytes, hybrid group) and a random legal call sequence: training steps
 * with random micro_steps (forward passes, backward passes that gather or not, release before or
 * after grads_ready, units held from forward into backward), forward-only passes between steps
 * (evaluation; repeated, sampling-like, possibly partial forwards), units held across calls,
 * zs_unit_set_param / zs_unit_get_param between steps, zs_engine_save (units held or not) and
 * zs_engine_load of the last save (refused, changing nothing, while a unit is held; else the
 * saved weights come back and the ops since the save are undone). After every call it checks the
 * memory rule (docs/MEMORY.md §1) against its own model of the call sequence (held units gathered,
 * at most prefetch_units prefetched, max_live_bytes, buffers == gathered + live full gradients
 * exactly, persistent categories unchanged) and that a gathered unit shows the newest values set.
 * At the end rank 0 replays the gradient schedule of the ops still in effect on one rank, without
 * checkpoints with the straightforward path (stage 0, no prefetch, no offload, no buckets;
 * deterministic) and compares every weight: bit for bit when the sequence ran deterministic, within
 * 1e-4 otherwise (a third of the sequences, which also reduce parts of gradients early with
 * zs_unit_grads_flush). A third of the sequences also freeze some units (zs_unit_freeze, drawn
 * from their own stream so the other draws stay those of the seed): zs_unit_grad is refused for
 * them, their grads_ready and flushes are no-ops, they hold no gradient buffer; the reference
 * trains them with a zero gradient and no weight decay, which leaves them unchanged too. Another
 * third put the head and the block's norm in a parameter group on SGD with momentum, so the head
 * keeps one state array where the other units keep AdamW's two and the block packs its second
 * array to its two AdamW tensors (docs/OPTIMIZER.md §8), through every call order, save and load
 * (and the NVMe tier when the head is there); the reference has the same groups.
 *
 * About one sequence in ten with sharded optimizer state puts the head's optimizer state on the
 * NVMe tier (zs_config.nvme_path, a folder of the working directory, with offload of the optimizer
 * and an offload_host_bytes the head, enlarged to 2 M elements for it, does not fit; the host
 * arena needs a few MiB of its own, more than the small model's state): its step, set/get_param
 * and gathers of the master then go through the tier's files, and the weights must still be the
 * reference's, bit for bit (they run deterministic: over 2 M elements another summation order
 * flips Adam's step where a gradient is near zero, far past the tolerance). Their saves and
 * loads stream the tier's state to and from checkpoints like any other sequence's.
 *
 * Every sequence here is legal on every rank, so it also proves that the rank divergence check
 * (comm.h) never flags a legal program; test_engine_diverge.c runs such sequences with one rank
 * deviating.
 *
 * Usage: test_engine_protocol [--seqs N] [--seed S]   (env ZS_PROTOCOL_SEQS=N runs more;
 *        ZS_PROTOCOL_NVME=0 leaves the NVMe tier out)
 * Every sequence prints its seed; --seed S --seqs 1 reproduces one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_model.h"
#include "zs_test.h"

#define MAX_OPS 64

typedef struct {
  int stage, prefetch, group, det;
  int explicit_switches; /* the switches below are set in zs_config, not left to the stage */
  int sp, sg, so;        /* params, gradients, optimizer state sharded (from either) */
  unsigned offload;
  size_t max_live, bucket;
  int frozen[TM_NUNITS]; /* zs_unit_freeze; the reference: no gradient and no weight decay */
  int nvme;              /* the NVMe tier: the (enlarged) head's optimizer state in files */
  int tp;                /* tp_size: 2 in a quarter of the sequences on 2 or 4 ranks (every
                            tensor replicated: each tp pair trains its data-parallel rank's
                            batches, as the reference's data-parallel ranks) */
  /* The head, and the block's norm "ln", in a group on SGD with momentum: one state array,
     AdamW's two (the block then packs its second array: src/shard/opt_pack.h). */
  int sgd_head;
} seq_cfg;

/* The NVMe sequences: the head's size then, the host cap (under the head's state on every rank
   and shard group, over the host arena's own reserve), the chunk, and the tier's root. */
#define NVME_HEAD 2000003
#define NVME_HEAD_SGD 3000017
#define NVME_CAP ((size_t)5 << 20)
#define NVME_CHUNK 16384
#define HEAD_NUMEL 257
static const char *nvme_root = "protocol_nvme.d";
static int nvme_on = 1; /* ZS_PROTOCOL_NVME=0: no NVMe sequences (their draws stay the same) */

/* What the caller did in one micro-step's backward of unit u. */
typedef struct {
  int gather;        /* gathered in backward (its gradient uses the params) */
  int release_first; /* release before grads_ready */
  int held_from_fwd; /* not released after forward: backward's gather is a no-op */
  int flush;         /* non-deterministic runs: add half, zs_unit_grads_flush, add the rest */
} bwd_choice;

/* Test state on one rank. */
typedef struct {
  int rank, world;       /* in the communicator: rank 0 prints and runs the reference */
  int dp_rank, dp_world; /* the engine's data-parallel place (zs_engine_mesh): the batches */
  seq_cfg c;
  zs_engine *e;
  zs_unit *u[TM_NUNITS];
  int held[TM_NUNITS];
  int grad_live[TM_NUNITS];
  zs_memory base;                   /* persistent categories after commit */
  float *known[TM_NUNITS][TM_MAXT]; /* newest values set, or NULL when unknown (after a step) */
  int step_no;
  uint64_t seed;
  unsigned char used[MAX_OPS][3][TM_NUNITS]; /* the gradient of (step, micro, unit) read params */
  /* Checkpoints: the ops in effect (a load undoes those after its save), for the reference. */
  int eff[MAX_OPS], neff;
  int saved, saved_neff, saved_step_no;
  float *saved_w; /* every weight at the save */
  char ckdir[128];
} st;

static size_t unit_bytes(const st *s, int u) {
  size_t n = 0;
  for (int t = 0; t < tm_units[u].ntensors; t++)
    n += (size_t)tm_numel(u, t);
  size_t S = 1;
  if (s->c.so) S = s->c.group ? (size_t)s->c.group : (size_t)s->dp_world;
  size_t p = (n + S - 1) / S * S;
  return (p < S ? S : p) * 4;
}

/* The memory rule and the ledger, after every call. */
static void check(st *s, const char *where) {
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(s->e, &m));
  size_t gathered = 0, grads = 0;
  int prefetched = 0;
  for (int i = 0; i < TM_NUNITS; i++) {
    const int g = zs_unit_is_gathered(s->u[i]);
    if (s->held[i])
      ZS_EXPECT(g, "seed %llu %s: held unit %d not gathered", (unsigned long long)s->seed, where,
                i);
    if (s->c.sp && g) {
      gathered += unit_bytes(s, i);
      prefetched += !s->held[i];
    }
    /* a sharded gradient's full buffer, or the deterministic staging of a full one */
    if (s->grad_live[i] && (s->c.sg || s->c.det)) grads += unit_bytes(s, i);
    /* zs_unit_param answers exactly for held units. */
    void *p = zs_unit_param(s->u[i], 0);
    ZS_EXPECT((p != NULL) == (s->held[i] != 0), "seed %llu %s: unit %d param %p held %d",
              (unsigned long long)s->seed, where, i, p, s->held[i]);
  }
  ZS_EXPECT(prefetched <= s->c.prefetch, "seed %llu %s: %d prefetched units > prefetch_units %d",
            (unsigned long long)s->seed, where, prefetched, s->c.prefetch);
  if (s->c.max_live)
    ZS_EXPECT(gathered <= s->c.max_live, "seed %llu %s: %zu gathered bytes > max_live_bytes %zu",
              (unsigned long long)s->seed, where, gathered, s->c.max_live);
  ZS_EXPECT(m.buffers.cur == gathered + grads,
            "seed %llu %s: buffers %zu != gathered %zu + live grads %zu",
            (unsigned long long)s->seed, where, m.buffers.cur, gathered, grads);
  ZS_EXPECT(m.params.cur == s->base.params.cur && m.grads.cur == s->base.grads.cur &&
                m.optimizer.cur == s->base.optimizer.cur &&
                m.host_pinned.cur == s->base.host_pinned.cur,
            "seed %llu %s: persistent state changed", (unsigned long long)s->seed, where);
}

/* A gathered unit must show the newest values set (when the test knows them). */
static void check_fresh(st *s, int u) {
  for (int t = 0; t < tm_units[u].ntensors; t++) {
    const float *k = s->known[u][t], *p = zs_unit_param(s->u[u], t);
    if (!k || !p) continue;
    ZS_EXPECT(memcmp(k, p, (size_t)tm_numel(u, t) * 4) == 0,
              "seed %llu: unit %d tensor %d gathered values are stale", (unsigned long long)s->seed,
              u, t);
  }
}

static void release(st *s, int u);

/* Gathers u. When the units held leave no room under max_live_bytes the gather must be refused
   with nothing changed; the caller then releases its other units (legal) and gathers again. */
static void gather(st *s, int u) {
  size_t held = 0;
  for (int i = 0; i < TM_NUNITS; i++)
    if (s->held[i]) held += unit_bytes(s, i);
  if (s->c.sp && s->c.max_live && !zs_unit_is_gathered(s->u[u]) &&
      held + unit_bytes(s, u) > s->c.max_live) {
    ZS_EXPECT_STATUS(zs_unit_gather(s->u[u]), ZS_ERR_OUT_OF_MEMORY);
    check(s, "refused gather");
    for (int i = 0; i < TM_NUNITS; i++)
      if (s->held[i] && i != u) release(s, i);
  }
  ZS_OK_OR_DIE(zs_unit_gather(s->u[u]));
  s->held[u] = 1;
  check(s, "gather");
  check_fresh(s, u);
}

static void release(st *s, int u) {
  ZS_OK_OR_DIE(zs_unit_release(s->u[u]));
  s->held[u] = 0;
  check(s, "release");
}

/* Gradient of batch b for element i (global index gi) at param p: a(p - t), or -a t when the
   backward did not gather the unit (no params). */
static float grad_elem(uint64_t b, int64_t gi, const float *p, int64_t i) {
  const uint64_t h = tm_hash(b * 0x100000001b3ull + (uint64_t)gi);
  const float a = 0.5f + (float)(h >> 40) / (float)(1u << 24);
  const float t = -1.0f + 2.0f * (float)(tm_hash(h) >> 40) / (float)(1u << 24);
  return p ? a * (p[i] - t) : -a * t;
}

static uint64_t batch_id(int step, int micro, int rank) {
  return ((uint64_t)step << 32) ^ ((uint64_t)micro << 16) ^ (uint64_t)rank;
}

/* zs_unit_grad += scale * g in one add per element (deterministic mode's rule). */
static void add_grad_scaled(zs_unit *u, int un, uint64_t b, int use_params, const float *scale0,
                            float scale) {
  for (int t = 0; t < tm_units[un].ntensors; t++) {
    float *g = zs_unit_grad(u, t);
    if (!g) {
      fprintf(stderr, "FATAL: zs_unit_grad: %s\n", zs_last_error());
      exit(1);
    }
    const float *p = use_params ? zs_unit_param(u, t) : NULL;
    const int64_t n = tm_numel(un, t), base = tm_base(un, t);
    for (int64_t i = 0; i < n; i++)
      g[i] = g[i] + scale * (scale0 ? scale0[base + i] : grad_elem(b, base + i, p, i));
  }
}

static void add_grad(zs_unit *u, int un, uint64_t b, int use_params, const float *scale0) {
  add_grad_scaled(u, un, b, use_params, scale0, 1.0f);
}

/* A frozen unit's backward: zs_unit_grad is refused for every tensor, and the flush is a no-op. */
static void frozen_grad(st *s, int u) {
  for (int t = 0; t < tm_units[u].ntensors; t++)
    ZS_EXPECT(zs_unit_grad(s->u[u], t) == NULL, "seed %llu: zs_unit_grad of frozen unit %d",
              (unsigned long long)s->seed, u);
  if (!s->c.det) ZS_OK_OR_DIE(zs_unit_grads_flush(s->u[u]));
}

static void forget_known(st *s) {
  for (int u = 0; u < TM_NUNITS; u++)
    for (int t = 0; t < TM_MAXT; t++) {
      free(s->known[u][t]);
      s->known[u][t] = NULL;
    }
}

/* A forward pass over units [0, upto]; release each after use unless keep says so. */
static void forward(st *s, int upto, rng *r, int keep_some) {
  for (int u = 0; u <= upto; u++) {
    if (!s->held[u]) gather(s, u);
    if (!(keep_some && rnd(r, 4) == 0)) release(s, u);
  }
}

/* One training step of the sequence on this rank. choice[k][u] is drawn by the caller. */
static void train_step(st *s, int m, bwd_choice ch[][TM_NUNITS], rng *r) {
  ZS_OK_OR_DIE(zs_engine_begin_step(s->e, m));
  check(s, "begin_step");
  for (int k = 0; k < m; k++) {
    for (int u = 0; u < TM_NUNITS; u++) {
      if (!s->held[u]) gather(s, u);
      if (!ch[k][u].held_from_fwd) release(s, u);
    }
    for (int u = TM_NUNITS - 1; u >= 0; u--) {
      const bwd_choice *c = &ch[k][u];
      if (c->gather && !s->held[u]) gather(s, u);
      if (s->c.frozen[u]) {
        frozen_grad(s, u);
        check(s, "frozen grad");
        if (s->held[u] && c->release_first) release(s, u);
        ZS_OK_OR_DIE(zs_unit_grads_ready(s->u[u]));
        check(s, "grads_ready");
        if (s->held[u] && rnd(r, 8) != 0) release(s, u);
        continue;
      }
      s->grad_live[u] = 1;
      s->used[s->step_no][k][u] = (unsigned char)s->held[u];
      const uint64_t b = batch_id(s->step_no, k, s->dp_rank);
      if (!s->c.det && c->flush) {
        /* Half now, reduced early (a sharded gradient's full buffer is freed), half after. */
        add_grad_scaled(s->u[u], u, b, s->held[u], NULL, 0.5f);
        check(s, "grad");
        ZS_OK_OR_DIE(zs_unit_grads_flush(s->u[u]));
        if (s->c.sg) s->grad_live[u] = 0;
        check(s, "grads_flush");
        s->grad_live[u] = 1;
        add_grad_scaled(s->u[u], u, b, s->held[u], NULL, 0.5f);
      } else {
        add_grad(s->u[u], u, b, s->held[u], NULL);
      }
      check(s, "grad");
      if (s->held[u] && c->release_first) release(s, u);
      ZS_OK_OR_DIE(zs_unit_grads_ready(s->u[u]));
      s->grad_live[u] = 0;
      check(s, "grads_ready");
      if (s->held[u] && rnd(r, 8) != 0) release(s, u);
    }
  }
  ZS_OK_OR_DIE(zs_engine_step(s->e, NULL));
  for (int u = 0; u < TM_NUNITS; u++)
    s->held[u] = 0; /* the step frees every gathered copy */
  forget_known(s);
  check(s, "step");
  s->step_no++;
}

/* The values a set_param op writes (identical on every rank and in the reference). */
static float *values(int u, int t, uint64_t vseed) {
  const int64_t n = tm_numel(u, t);
  float *v = malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++)
    v[i] = -1.0f + 2.0f * (float)(tm_hash(vseed + (uint64_t)i) >> 40) / (float)(1u << 24);
  return v;
}

static void set_param(st *s, int u, int t, uint64_t vseed) {
  const int64_t n = tm_numel(u, t);
  float *v = values(u, t, vseed);
  ZS_OK_OR_DIE(zs_unit_set_param_n(s->u[u], t, v, n));
  free(s->known[u][t]);
  s->known[u][t] = v;
  check(s, "set_param");
  if (s->held[u]) check_fresh(s, u);
}

/* Draws the configuration for world w. */
static void draw_cfg(rng *r, int w, seq_cfg *c) {
  memset(c, 0, sizeof *c);
  /* The NVMe tier from a stream of its own (the other draws stay those of the seed). */
  const uint64_t nv = tm_hash(r->s ^ 0x4e564d45ull);
  c->stage = (int)rnd(r, 4);
  c->so = c->stage >= 1;
  c->sg = c->stage >= 2;
  c->sp = c->stage >= 3;
  if (rnd(r, 4) == 0) { /* the switches beyond the stages (the optimizer is then sharded) */
    c->explicit_switches = 1;
    c->so = 1;
    c->sg = (int)rnd(r, 2);
    c->sp = (int)rnd(r, 2);
  }
  c->prefetch = (int)rnd(r, 4);
  static const size_t buckets[] = {0, 0, 40, 64, 200};
  c->bucket = buckets[rnd(r, 5)];
  if (w == 4 && c->so && rnd(r, 3) == 0) c->group = 2;
  /* Tensor parallelism from a stream of its own (the other draws stay those of the seed); a
     hybrid group of 2 is then the whole data-parallel size 2. */
  c->tp = w % 2 == 0 && tm_hash(r->s ^ 0x74705f73ull) % 4 == 0 ? 2 : 1;
  if (c->tp == 2 && w == 2) c->group = 0;
  const uint32_t o = rnd(r, 4);
  if (c->so && o == 1) c->offload = ZS_OFFLOAD_OPTIMIZER;
  if (c->sp && o == 2) c->offload = ZS_OFFLOAD_PARAMS;
  if (c->sp && o == 3) c->offload = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
  c->nvme = c->so && nv % 10 == 0 && nvme_on;
  /* The tier takes host-tier units' state; params stay off the host (the enlarged head's would
     not fit the cap: test_engine_nvme_train covers host-resident params with the tier). */
  if (c->nvme) c->offload = ZS_OFFLOAD_OPTIMIZER;
  /* The head on SGD from a stream of its own: a third of the sequences. With one state array its
     state is 2/3 of AdamW's: on the tier, 3/2 as many elements keep it over the cap. */
  c->sgd_head = tm_hash(r->s ^ 0x5d6eadull) % 3 == 0;
  tm_units[3].t[0].shape[0] = c->nvme ? (c->sgd_head ? NVME_HEAD_SGD : NVME_HEAD) : HEAD_NUMEL;
  /* max_live_bytes: none, or room for 1..3 of the largest unit (the head). */
  const size_t largest = 4 * ((size_t)tm_numel(3, 0) + (size_t)w);
  const uint32_t l = rnd(r, 4);
  c->max_live = l == 0 ? 0 : largest * l;
  c->det = rnd(r, 3) != 0; /* a third run non-deterministic (flushes; compared with a tolerance) */
  /* NVMe sequences reduce in one piece per unit: the small buckets above would cut the enlarged
     head into tens of thousands of collectives. */
  if (c->nvme) c->bucket = 0;
  /* NVMe sequences run deterministic: over the enlarged head's 2 M elements some gradient is
     near zero, where another summation order flips Adam's step (lr per step, not rounding). */
  if (c->nvme) c->det = 1;
  /* Frozen units from a stream of their own: a third of the sequences freeze a random subset. */
  const uint64_t f = tm_hash(r->s ^ 0xf402e2ull);
  for (int u = 0; u < TM_NUNITS && f % 3 == 0; u++)
    c->frozen[u] = (int)((f >> (8 + u)) & 1);
}

/* ref_frozen: the reference's view of c's frozen units (trainable, no weight decay) */
static zs_engine *make_engine(zs_comm *comm, const seq_cfg *c, zs_unit **u, const int *ref_frozen) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = c->stage;
  if (c->explicit_switches) {
    cfg.shard_params = c->sp ? ZS_SHARD_YES : ZS_SHARD_NO;
    cfg.shard_grads = c->sg ? ZS_SHARD_YES : ZS_SHARD_NO;
    cfg.shard_optimizer = c->so ? ZS_SHARD_YES : ZS_SHARD_NO;
  }
  cfg.prefetch_units = c->prefetch;
  cfg.bucket_bytes = c->bucket;
  cfg.max_live_bytes = c->max_live;
  cfg.shard_group_size = c->group;
  cfg.tp_size = c->tp > 1 ? c->tp : 1;
  cfg.offload = c->offload;
  cfg.deterministic = c->det;
  cfg.adamw.lr = 0.05f;
  cfg.comm_timeout_s = 60;
  if (c->nvme) {
    cfg.nvme_path = nvme_root;
    cfg.offload_host_bytes = NVME_CAP;
    cfg.offload_chunk = NVME_CHUNK;
    cfg.offload_allow_unpinned = 1;
  }
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int i = 0; i < TM_NUNITS; i++) {
    zs_tensor_desc t[TM_MAXT];
    memcpy(t, tm_units[i].t, sizeof t);
    for (int k = 0; k < tm_units[i].ntensors && ref_frozen && ref_frozen[i]; k++)
      t[k].no_weight_decay = 1;
    ZS_OK_OR_DIE(zs_engine_add_unit(e, tm_units[i].name, tm_units[i].ntensors, t, &u[i]));
    ZS_OK_OR_DIE(zs_unit_freeze(u[i], c->frozen[i]));
  }
  if (c->sgd_head) {
    zs_param_group g;
    int id = -1;
    ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
    g.optimizer = "sgd";
    g.momentum = 0.9f;
    ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
    ZS_OK_OR_DIE(zs_unit_set_group(u[3], -1, id));
    ZS_OK_OR_DIE(zs_unit_set_group(u[2], 1, id));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

/* The ops of one sequence, drawn up front so the reference can replay the training part. */
typedef struct {
  int kind; /* 0 step, 1 eval, 2 set_param, 3 get_param, 4 hold, 5 unhold, 6 save, 7 load */
  int m;
  bwd_choice ch[3][TM_NUNITS];
  int a, b;
  uint64_t v;
} op;

static int draw_ops(rng *r, op *ops) {
  const int n = 4 + (int)rnd(r, 8);
  for (int i = 0; i < n; i++) {
    op *o = &ops[i];
    memset(o, 0, sizeof *o);
    const uint32_t k = rnd(r, 12);
    o->kind = k < 4 ? 0 : k < 6 ? 1 : (int)k - 4;
    o->m = 1 + (int)rnd(r, 3);
    for (int mm = 0; mm < 3; mm++)
      for (int u = 0; u < TM_NUNITS; u++) {
        o->ch[mm][u].gather = (int)rnd(r, 3) != 0;
        o->ch[mm][u].release_first = (int)rnd(r, 2);
        o->ch[mm][u].held_from_fwd = rnd(r, 5) == 0;
        o->ch[mm][u].flush = (int)rnd(r, 2);
      }
    o->a = (int)rnd(r, TM_NUNITS);
    o->b = (int)rnd(r, (uint32_t)tm_units[o->a].ntensors);
    o->v = r->s;
  }
  return n;
}

static float *all_weights(zs_unit **u);

static int n_saves, n_loads, n_refused; /* how often the sequences exercised them */
static int n_nvme, n_nvme_units;        /* NVMe sequences, and those with the head on the tier */

/* zs_engine_save (units may be held): remembers the weights and which ops are in effect. */
static void save(st *s) {
  ZS_OK_OR_DIE(zs_engine_save(s->e, s->ckdir));
  n_saves++;
  check(s, "save");
  free(s->saved_w);
  s->saved_w = all_weights(s->u);
  s->saved = 1;
  s->saved_neff = s->neff + 1; /* the save itself stays in effect */
  s->saved_step_no = s->step_no;
}

/* zs_engine_load of the last save: refused (nothing changed) while a unit is held, else the
   weights are the saved ones and the ops since the save are undone. */
static void load(st *s) {
  if (!s->saved) return;
  int held = 0;
  for (int u = 0; u < TM_NUNITS; u++)
    held |= s->held[u];
  float *before = all_weights(s->u);
  const zs_status rc = zs_engine_load(s->e, s->ckdir);
  float *after = all_weights(s->u);
  n_loads += !held;
  n_refused += held;
  if (held) {
    ZS_EXPECT(rc == ZS_ERR_STATE, "seed %llu: load with a unit held returned %s",
              (unsigned long long)s->seed, zs_status_str(rc));
    ZS_EXPECT(memcmp(before, after, (size_t)tm_total() * 4) == 0,
              "seed %llu: a refused load changed the weights", (unsigned long long)s->seed);
    check(s, "refused load");
  } else {
    ZS_EXPECT(rc == ZS_OK, "seed %llu: load: %s", (unsigned long long)s->seed, zs_last_error());
    ZS_EXPECT(memcmp(s->saved_w, after, (size_t)tm_total() * 4) == 0,
              "seed %llu: the loaded weights are not the saved ones", (unsigned long long)s->seed);
    forget_known(s); /* values set after the save are gone */
    check(s, "load");
    s->neff = s->saved_neff;
    s->step_no = s->saved_step_no;
  }
  free(before);
  free(after);
}

/* Runs the ops on the N-rank engine, checking after every call. */
static void run_ops(st *s, const op *ops, int n, rng *r) {
  for (int i = 0; i < n; i++) {
    const op *o = &ops[i];
    switch (o->kind) {
    case 0: {
      bwd_choice ch[3][TM_NUNITS];
      memcpy(ch, o->ch, sizeof ch);
      train_step(s, o->m, ch, r);
      break;
    }
    case 1: /* evaluation / sampling: repeated, possibly partial, forward passes */
      for (int p = 0, np = 1 + (int)rnd(r, 3); p < np; p++) {
        forward(s, rnd(r, 3) == 0 ? o->a : TM_NUNITS - 1, r, 0);
        int pre = 0;
        for (int u = 0; u < TM_NUNITS; u++)
          pre += zs_unit_is_gathered(s->u[u]) && !s->held[u];
        if (s->c.sp)
          ZS_EXPECT(pre <= s->c.prefetch, "seed %llu: %d units left gathered after a pass",
                    (unsigned long long)s->seed, pre);
      }
      break;
    case 2:
      set_param(s, o->a, o->b, o->v);
      break;
    case 3: {
      float *v = malloc((size_t)tm_numel(o->a, o->b) * 4);
      ZS_OK_OR_DIE(zs_unit_get_param(s->u[o->a], o->b, v));
      check(s, "get_param");
      if (s->known[o->a][o->b]) {
        ZS_EXPECT(memcmp(v, s->known[o->a][o->b], (size_t)tm_numel(o->a, o->b) * 4) == 0,
                  "seed %llu: get_param differs from the values set", (unsigned long long)s->seed);
        free(v);
      } else {
        s->known[o->a][o->b] = v; /* gathered copies must show these master values from now on */
        if (s->held[o->a]) check_fresh(s, o->a);
      }
      break;
    }
    case 4:
      if (!s->held[o->a]) gather(s, o->a);
      break;
    case 5:
      if (s->held[o->a]) release(s, o->a);
      break;
    case 6:
      save(s);
      break;
    case 7:
      load(s);
      continue; /* not an op in effect itself */
    }
    s->eff[s->neff++] = i;
  }
}

/* Every weight of the model, gathered (collective). */
static float *all_weights(zs_unit **u) {
  float *w = malloc((size_t)tm_total() * 4);
  for (int i = 0; i < TM_NUNITS; i++)
    for (int t = 0; t < tm_units[i].ntensors; t++)
      ZS_OK_OR_DIE(zs_unit_get_param(u[i], t, w + tm_base(i, t)));
  return w;
}

/* Rank 0: the same training on one rank, stage 0, fed the micro-batches in the global order the
   engine promises (micro-step-major: micro-step k of rank r is micro-batch k * W + r), one
   micro-step each. */
static float *reference(const st *s, const op *ops, int n, const float *init) {
  zs_comm *self = NULL;
  setenv("WORLD_SIZE", "1", 1);
  setenv("RANK", "0", 1);
  ZS_OK_OR_DIE(zs_comm_init_env(&self));
  seq_cfg rc = {0};
  rc.det = 1;
  rc.sgd_head = s->c.sgd_head;
  zs_unit *u[TM_NUNITS];
  zs_engine *e = make_engine(self, &rc, u, s->c.frozen);
  for (int i = 0; i < TM_NUNITS; i++)
    for (int t = 0; t < tm_units[i].ntensors; t++)
      ZS_OK_OR_DIE(zs_unit_set_param(u[i], t, init + tm_base(i, t)));
  const int W = s->dp_world;
  int step = 0;
  (void)n;
  for (int q = 0; q < s->neff; q++) { /* the ops in effect: a load undid those after its save */
    const op *o = &ops[s->eff[q]];
    if (o->kind == 2) {
      float *v = values(o->a, o->b, o->v);
      ZS_OK_OR_DIE(zs_unit_set_param(u[o->a], o->b, v));
      free(v);
    }
    if (o->kind != 0) continue;
    ZS_OK_OR_DIE(zs_engine_begin_step(e, W * o->m));
    for (int j = 0; j < TM_NUNITS; j++)
      ZS_OK_OR_DIE(zs_unit_gather(u[j]));
    for (int k = 0; k < o->m; k++)
      for (int r = 0; r < W; r++)
        for (int j = 0; j < TM_NUNITS; j++) {
          if (!s->c.frozen[j]) add_grad(u[j], j, batch_id(step, k, r), s->used[step][k][j], NULL);
          ZS_OK_OR_DIE(zs_unit_grads_ready(u[j]));
        }
    ZS_OK_OR_DIE(zs_engine_step(e, NULL));
    step++;
  }
  float *w = all_weights(u);
  zs_engine_destroy(e);
  zs_comm_destroy(self);
  return w;
}

static void one_sequence(zs_comm *comm, uint64_t seed) {
  st s;
  memset(&s, 0, sizeof s);
  s.rank = zs_comm_rank(comm);
  s.world = zs_comm_size(comm);
  s.seed = seed;
  rng r = {seed};
  draw_cfg(&r, s.world, &s.c);
  if (s.rank == 0)
    printf("seed %llu: world %d stage %d sharded p%d g%d o%d%s offload %u prefetch %d max_live %zu "
           "bucket %zu group %d det %d frozen %d%d%d%d%s tp %d%s\n",
           (unsigned long long)seed, s.world, s.c.stage, s.c.sp, s.c.sg, s.c.so,
           s.c.explicit_switches ? " (switches)" : "", s.c.offload, s.c.prefetch, s.c.max_live,
           s.c.bucket, s.c.group, s.c.det, s.c.frozen[0], s.c.frozen[1], s.c.frozen[2],
           s.c.frozen[3], s.c.nvme ? " nvme" : "", s.c.tp, s.c.sgd_head ? " sgd head" : "");
  fflush(stdout);
  s.e = make_engine(comm, &s.c, s.u, NULL);
  ZS_OK_OR_DIE(zs_engine_mesh(s.e, ZS_MESH_DP, &s.dp_rank, &s.dp_world));
  ZS_EXPECT(s.dp_world * s.c.tp == s.world, "seed %llu: dp size %d at tp %d on %d ranks",
            (unsigned long long)seed, s.dp_world, s.c.tp, s.world);
  ZS_OK_OR_DIE(zs_engine_memory(s.e, &s.base));
  if (s.c.nvme) { /* the head on the tier unless frozen (no optimizer state) */
    const zs_engine_facts f = zs_test_facts(s.e);
    ZS_EXPECT(f.nvme && f.nvme_units == !s.c.frozen[3] && f.units == TM_NUNITS,
              "seed %llu: not %d of %d units on the tier: %s", (unsigned long long)seed,
              !s.c.frozen[3], TM_NUNITS, zs_engine_info(s.e));
    n_nvme++;
    n_nvme_units += !s.c.frozen[3];
  }
  /* Initial weights: every tensor set (known values). */
  float *init = malloc((size_t)tm_total() * 4);
  for (int i = 0; i < TM_NUNITS; i++)
    for (int t = 0; t < tm_units[i].ntensors; t++) {
      set_param(&s, i, t, seed * 31 + (uint64_t)(i * 8 + t));
      memcpy(init + tm_base(i, t), s.known[i][t], (size_t)tm_numel(i, t) * 4);
    }
  op ops[MAX_OPS];
  const int n = draw_ops(&r, ops);
  /* One directory per sequence, the same on every rank (they share mpirun as parent). */
  snprintf(s.ckdir, sizeof s.ckdir, "/tmp/zs_protocol_%d_%llu", (int)getppid(),
           (unsigned long long)seed);
  rng run_r = {seed ^ 0x5bd1e995u};
  run_ops(&s, ops, n, &run_r);
  for (int u = 0; u < TM_NUNITS; u++)
    if (s.held[u]) release(&s, u);
  float *w = all_weights(s.u);
  if (s.rank == 0) {
    float *ref = reference(&s, ops, n, init);
    /* Deterministic: the same bits. Otherwise sums run in another order (and flushed halves
       are reduced apart): within rounding, amplified a little by Adam. */
    int bad = -1;
    for (int64_t i = 0; i < tm_total() && bad < 0; i++) {
      const double d = (double)w[i] - (double)ref[i];
      if (s.c.det ? memcmp(&w[i], &ref[i], 4) != 0 : !(fabs(d) <= 1e-4 + 1e-4 * fabs(ref[i])))
        bad = (int)i;
    }
    ZS_EXPECT(bad < 0, "seed %llu: weight %d is %.9g on %d ranks, %.9g on the 1-rank reference%s",
              (unsigned long long)seed, bad, bad >= 0 ? (double)w[bad] : 0.0, s.world,
              bad >= 0 ? (double)ref[bad] : 0.0, s.c.det ? "" : " (non-deterministic)");
    free(ref);
  }
  free(w);
  free(init);
  free(s.saved_w);
  forget_known(&s);
  zs_engine_destroy(s.e);
  tm_units[3].t[0].shape[0] = HEAD_NUMEL; /* the next sequence draws its own */
  if (s.saved && s.rank == 0) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s.ckdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", s.ckdir);
  }
}

int main(int argc, char **argv) {
  int seqs = 150;
  uint64_t seed0 = 1000;
  const char *env = getenv("ZS_PROTOCOL_SEQS");
  if (env && *env) seqs = atoi(env);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seqs")) seqs = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--seed")) seed0 = strtoull(argv[i + 1], NULL, 10);
  }
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const char *nv_env = getenv("ZS_PROTOCOL_NVME");
  if (nv_env && !strcmp(nv_env, "0")) nvme_on = 0;
  mkdir(nvme_root, 0755); /* the NVMe sequences' tier root, in the working directory (a disk) */
  const uint64_t base = seed0 + 100000u * (uint64_t)zs_comm_size(comm);
  for (int q = 0; q < seqs; q++)
    one_sequence(comm, base + (uint64_t)q);
  if (zs_comm_rank(comm) == 0)
    printf("test_engine_protocol: world %d, %d sequences (%d saves, %d loads, %d refused "
           "loads; %d on the NVMe tier, %d with a unit there), %d failure(s)\n",
           zs_comm_size(comm), seqs, n_saves, n_loads, n_refused, n_nvme, n_nvme_units,
           zs_test_failures);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_protocol");
}
