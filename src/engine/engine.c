/* Engine lifecycle: create, add units, commit (allocate shards), destroy; accessors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/host_charge.h"
#include "engine/agree.h"
#include "engine/ckpt_save.h"
#include "engine/engine_internal.h"
#include "engine/facts.h"
#include "device/nvml.h"
#include "engine/fail.h"
#include "engine/flight_dump.h"
#include "shard/placement.h"
#include "shard/tp_slice.h"
#include "shard/plan_memory.h"
#include "tier/master_io.h"
#include "tier/nvme_tier.h"
#include "base/error.h"

/* The host arena as the memory owner's host tier (mem/mem.h). */
static zs_status arena_alloc(void *a, size_t bytes, void **p) {
  return zs_host_arena_alloc(a, bytes, p);
}
static void arena_free(void *a, void *p) {
  zs_host_arena_free(a, p); /* p came from this arena: nothing to refuse */
}

/* Creates the host arena of the offload modes (pinned, on the NUMA node nearest the GPU). */
static zs_status open_arena(zs_engine *e) {
  const unsigned flags = e->cfg.offload_allow_unpinned ? ZS_HOST_ARENA_ALLOW_UNPINNED : 0;
  int dev = e->cfg.device == ZS_DEVICE_CUDA ? e->cfg.device_index : -1;
  return zs_host_arena_create(dev, e->cfg.offload_host_bytes, flags, &e->arena);
}

/* The optimizer's scratch: ledger-booked device buffers of the memory owner (ctx). */
static zs_status optim_scratch_alloc(void *ctx, size_t bytes, void **p, void *stream) {
  return zs_mem_alloc(ctx, ZS_MEM_BUFFERS, bytes, p, stream);
}

static void optim_scratch_free(void *ctx, void *p, size_t bytes, void *stream) {
  zs_mem_free(ctx, ZS_MEM_BUFFERS, p, bytes, stream);
}

/* The engine's optimizer; with ZS_OFFLOAD_OPTIMIZER or an offload budget (which may place any
   unit's optimizer state on the host at commit) its workers and the copy pipeline. The
   node's cores are split among the ranks of this host whose arena is on the same node, so that
   ranks do not oversubscribe them (peers.c tells who they are). */
static zs_status open_optimizer(zs_engine *e) {
  zs_optim_cfg oc = {&e->dev,
                     e->cfg.param_dtype,
                     zs_grad_accum_dtype(&e->cfg),
                     e->arena,
                     zs_placement_offload_optimizer(&e->cfg),
                     e->cfg.offload_threads,
                     0,
                     1,
                     e->cfg.offload_chunk,
                     {&e->mem, optim_scratch_alloc, optim_scratch_free},
                     {e->cfg.master, e->cfg.moment_dtype},
                     zs_optimizer_for(&e->cfg)};
  if (oc.offload_optimizer) zs_peers_share(e, ZS_PEER_NODE, &oc.share_idx, &oc.share_cnt);
  const size_t pipe = zs_placement_pipe_bytes(&e->cfg), cap = e->cfg.offload_host_bytes;
  if (cap && cap != ZS_UNSET_SIZE && pipe > cap) /* allocated now, before commit's fit check */
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "offload_host_bytes of %zu is under the copy pipeline's pinned staging alone "
                  "(%zu bytes: 4 chunks of offload_chunk x 4 bytes, whole pages): raise it, or "
                  "lower offload_chunk",
                  cap, pipe);
  ZS_CHECK(zs_optim_create(&oc, &e->optim));
  e->tiers.optim = e->optim;
  /* the copy pipeline's staging (CUDA) is in the arena: booked as the planner counts it */
  zs_ledger_add(&e->mem.ledger, ZS_MEM_HOST_PINNED, zs_placement_pipe_bytes(&e->cfg));
  return ZS_OK;
}

/* The shard layer's failure service (shard/shard.h). */
static zs_status sh_fail_hard(void *o, zs_status s) {
  return zs_engine_fail_hard(o, s);
}

/* What src/shard sees of e: filled once the groups are open; units follow add_unit. */
static void shard_ctx_init(zs_engine *e) {
  zs_shard_ctx *x = &e->sh;
  x->cfg = &e->cfg;
  x->plan = &e->plan;
  x->dev = &e->dev;
  x->world = e->world;
  x->shard = e->shard;
  x->replica = e->replica;
  x->world_rank = e->world_rank;
  x->world_size = e->world_size;
  x->shard_rank = e->shard_rank;
  x->shard_size = e->shard_size;
  x->tp = e->tp;
  x->tp_rank = e->tp_rank;
  x->tp_size = e->tp_size;
  x->mem = &e->mem;
  x->fail_hard = sh_fail_hard;
  x->pre_reduce = e->tp ? zs_engine_tp_partial_sum : NULL;
  x->owner = e;
  x->sig_unit = -1;
  e->tiers.sh = x;
}

/* Opens the mesh's collectives: every rank, the tp group and the data-parallel world (tp_size >
   1), the shard group and the replica group. */
static zs_status open_groups(zs_engine *e) {
  ZS_CHECK(zs_coll_open(e->comm, e->cfg.device, e->cfg.comm_timeout_s, &e->all));
  zs_coll_set_check(e->all, 1); /* create and commit always check (comm_check applies after) */
  e->world = e->all;
  if (e->all_size > 1) {
    /* The mesh's shape first: a rank that split by another shape would wait for peers that
       never come (the timeout), not meet a clear refusal. */
    const uint64_t mine[2] = {(uint64_t)e->tp_size, (uint64_t)e->cfg.shard_group_size};
    uint64_t *rows = calloc((size_t)e->all_size * 2, sizeof *rows);
    if (!rows) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_create: out of host memory");
    zs_status rc = zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, mine, 2, rows);
    for (int q = 0; q < e->all_size && rc == ZS_OK; q++)
      if (rows[2 * q] != mine[0] || rows[2 * q + 1] != mine[1])
        rc = zs_err(ZS_ERR_INVALID_ARG,
                    "zs_engine_create: the ranks disagree on the mesh (this rank %d: tp_size %d, "
                    "shard_group_size %d; rank %d: %d, %d): every rank must set the same",
                    e->all_rank, e->tp_size, e->cfg.shard_group_size, q, (int)rows[2 * q],
                    (int)rows[2 * q + 1]);
    free(rows);
    ZS_CHECK(rc);
  }
  if (e->tp_size > 1) {
    /* tp groups are blocks of tp_size consecutive ranks (one node's GPUs); the data-parallel
       world holds the ranks at the same place in their blocks. */
    ZS_CHECK(zs_coll_split(e->all, e->all_rank / e->tp_size, e->all_rank, &e->tp));
    zs_coll_set_check(e->tp, 1);
    ZS_CHECK(zs_coll_split(e->all, e->all_rank % e->tp_size, e->all_rank, &e->world));
    zs_coll_set_check(e->world, 1);
  }
  int g = e->shard_size;
  if (g == e->world_size) {
    e->shard = e->world;
    return ZS_OK;
  }
  /* Shard groups are blocks of g consecutive ranks; replicas hold the same shard index. */
  ZS_CHECK(zs_coll_split(e->world, e->world_rank / g, e->world_rank, &e->shard));
  zs_coll_set_check(e->shard, 1);
  ZS_CHECK(zs_coll_split(e->world, e->world_rank % g, e->world_rank, &e->replica));
  zs_coll_set_check(e->replica, 1);
  return ZS_OK;
}

/* create's checks of its arguments, on this rank alone: the resolved configuration, its sources
   and origins, the shard group's size and the plan into the outputs. */
static zs_status create_checks(const zs_config *user_cfg, const zs_comm *comm, zs_config *cfg,
                               char *sources, size_t nsources, unsigned char *origins, int *group,
                               zs_plan *plan) {
  if (!user_cfg)
    return zs_err(ZS_ERR_INVALID_ARG, "config is NULL: fill one with zs_config_default()");
  /* Environment variables for fields left at their default, then validation of the result. */
  ZS_CHECK(zs_config_resolve_origins(user_cfg, cfg, sources, nsources, origins));
  ZS_CHECK(zs_config_validate(cfg));
  if (!comm)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_create: comm is NULL: create one with "
                                      "zs_comm_init_mpi or zs_comm_init_env first");
  const int all = zs_comm_size(comm), tp = cfg->tp_size;
  if (tp > all || all % tp != 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "tp_size %d does not divide the world size %d: use a divisor of it (1: no "
                  "tensor parallelism)",
                  tp, all);
  const int world = all / tp; /* the data-parallel ranks */
  const int g = cfg->shard_group_size ? cfg->shard_group_size : world;
  if (g > world || world % g != 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "shard_group_size %d does not divide the data-parallel size %d (the world size "
                  "%d / tp_size %d): use a divisor of it, or 0 for all of it",
                  cfg->shard_group_size, world, all, tp);
  *group = g;
  return zs_plan_make(cfg, g, plan);
}

/* Every rank's verdict on its own arguments (mine, its message kept; cfg resolved where mine is
   ZS_OK), before any group opens: a rank that refused them would leave its peers waiting in the
   first collective until the timeout. The first refusing rank's, on every rank; the wait bounded
   by cfg's comm_timeout_s where it is below the comm's own. */
static zs_status create_agree(zs_comm *comm, const zs_config *cfg, zs_status mine) {
  if (!comm || !comm->impl || zs_comm_size(comm) < 2) return mine;
  char why[1024] = "";
  if (mine != ZS_OK) snprintf(why, sizeof why, "%s", zs_last_error());
  const int64_t me = mine != ZS_OK ? zs_comm_rank(comm) : INT64_MAX;
  int64_t first = INT64_MAX;
  const double was = zs_comm_timeout(comm);
  if (mine == ZS_OK && cfg->comm_timeout_s > 0 && cfg->comm_timeout_s < was)
    zs_comm_set_timeout(comm, cfg->comm_timeout_s);
  const zs_status rc = zs_comm_allreduce(comm, &me, &first, 1, ZS_HOST_I64, ZS_RED_MIN);
  zs_comm_set_timeout(comm, was);
  if (rc != ZS_OK)
    return mine != ZS_OK ? zs_err(mine, "%s", why)
                         : zs_err_wrap(rc, "zs_engine_create: agreeing on the ranks' arguments");
  if (mine != ZS_OK) return zs_err(mine, "%s", why);
  if (first != INT64_MAX)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_create: rank %lld refused its configuration (its zs_last_error says "
                  "why); nothing was created",
                  (long long)first);
  return ZS_OK;
}

zs_status zs_engine_create(const zs_config *user_cfg, zs_comm *comm, zs_engine **out) {
  if (out) *out = NULL;
  zs_config resolved;
  char sources[900];
  unsigned char origins[ZS_CONFIG_NORIGINS];
  zs_plan plan;
  int g = 0;
  const zs_status mine =
      !out ? zs_err(ZS_ERR_INVALID_ARG, "zs_engine_create: out is NULL")
           : create_checks(user_cfg, comm, &resolved, sources, sizeof sources, origins, &g, &plan);
  ZS_CHECK(create_agree(comm, &resolved, mine)); /* a refusal here is every rank's */
  const zs_config *cfg = &resolved;
  const int all = zs_comm_size(comm), tp = cfg->tp_size, world = all / tp;
  zs_engine *e = calloc(1, sizeof *e);
  if (!e) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the engine");
  e->plan = plan;
  e->cfg = *cfg;
  e->ngroups = 1; /* group 0: the configuration's */
  e->group_opt[0] = cfg->optimizer;
  memcpy(e->origins, origins, sizeof origins);
  e->comm = comm;
  e->all_rank = zs_comm_rank(comm);
  e->all_size = all;
  e->tp_size = tp;
  e->tp_rank = e->all_rank % tp;
  e->world_rank = e->all_rank / tp;
  e->world_size = world;
  e->shard_size = g;
  e->shard_rank = e->world_rank % g;
  zs_status rc = ZS_OK;
  if (cfg->device == ZS_DEVICE_CUDA && e->cfg.device_index < 0) {
    int n = zs_dev_cuda_count();
    e->cfg.device_index = n > 0 ? comm->local_rank % n : 0;
  }
  zs_mem_init(&e->mem, &e->dev);
  ZS_CHECK_GOTO(zs_dev_open(&e->dev, cfg->device, e->cfg.device_index), rc, fail);
  e->dev.wait_timeout_s = cfg->comm_timeout_s;
  zs_engine_call(e, ZS_CALL_CREATE, NULL);
  ZS_CHECK_GOTO(open_groups(e), rc, fail);
  zs_engine_sig_attach(e);
  ZS_CHECK_GOTO(zs_engine_flight_open(e), rc, fail);
  shard_ctx_init(e);
  /* With a budget the host tier must be there before commit decides the placement (the arena
     holds nothing until a unit is placed on it). */
  if (cfg->offload || cfg->offload_budget_bytes) ZS_CHECK_GOTO(open_arena(e), rc, fail);
  if (e->arena) e->mem.host = (zs_mem_host){arena_alloc, arena_free, e->arena, zs_host_charge};
  ZS_CHECK_GOTO(zs_peers_gather(e, e->arena ? zs_host_arena_node(e->arena) : -1), rc, fail);
  ZS_CHECK_GOTO(open_optimizer(e), rc, fail);
  zs_engine_facts_create(e, sources); /* and zs_engine_info's line, written from them */
  *out = e;
  return ZS_OK;
fail:
  /* Peers may already be in the next collective of create: this rank leaves as failed (its
     goodbye tells them at once); destroy keeps this call's message. */
  if (e->all) zs_engine_abort_comms(e);
  zs_engine_destroy(e);
  return rc;
}

/* Rejects names that are NULL, empty, too long or already used. */
static zs_status check_unit_name(const zs_engine *e, const char *name) {
  if (!name || !*name)
    return zs_err(ZS_ERR_INVALID_ARG, "unit name is NULL or empty: give every unit a unique name");
  if (strlen(name) >= ZS_NAME_MAX)
    return zs_err(ZS_ERR_INVALID_ARG, "unit name '%.20s...' is longer than %d characters", name,
                  ZS_NAME_MAX - 1);
  for (int i = 0; i < e->nunits; i++)
    if (strcmp(e->units[i]->name, name) == 0)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "a unit named '%s' already exists: unit names must be "
                    "unique",
                    name);
  return ZS_OK;
}

/* Checks one tensor descriptor: a name that is set, not empty, short enough and unique in the
   unit (checkpoints and messages name tensors by it), and a shape. */
zs_status zs_engine_check_desc(const char *unit, int i, const zs_tensor_desc *t) {
  if (!t->name || !*t->name)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "unit '%s' tensor %d: its name is %s: give every tensor a name, unique in its "
                  "unit",
                  unit, i, t->name ? "empty" : "NULL");
  if (strlen(t->name) >= ZS_NAME_MAX)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "unit '%s' tensor %d: name '%.20s...' is longer than %d "
                  "characters",
                  unit, i, t->name, ZS_NAME_MAX - 1);
  if (t->ndim < 1 || t->ndim > 4)
    return zs_err(ZS_ERR_INVALID_ARG, "unit '%s' tensor %d ('%s'): ndim %d must be 1..4", unit, i,
                  t->name ? t->name : "?", t->ndim);
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] < 0)
      return zs_err(
          ZS_ERR_INVALID_ARG,
          "unit '%s' tensor %d ('%s'): dimension %d is %lld; every dimension must be >= 0", unit, i,
          t->name ? t->name : "?", d, (long long)t->shape[d]);
  return ZS_OK;
}

static void unit_free(zs_unit *u) {
  if (!u) return;
  if (u->tnames)
    for (int i = 0; i < u->ntensors; i++)
      free(u->tnames[i]);
  free(u->tnames);
  free(u->t);
  free(u->set_hash);
  free(u->group);
  free(u->keeps);
  free(u->part);
  free(u->part_most);
  free(u->pack_at);
  free(u->tp);
  free(u->whole_owner);
  free(u->whole_tp);
  zs_layout_free(&u->lay);
  free(u);
}

zs_status zs_engine_add_unit(zs_engine *e, const char *name, int ntensors, const zs_tensor_desc *t,
                             zs_unit **out) {
  if (out) *out = NULL;
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_add_unit: engine is NULL");
  if (e->state != ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE,
                  "zs_engine_add_unit('%s') after zs_engine_commit: add every unit "
                  "before commit",
                  name ? name : "?");
  ZS_CHECK(check_unit_name(e, name));
  if (ntensors <= 0 || !t)
    return zs_err(ZS_ERR_INVALID_ARG, "unit '%s': needs at least one tensor (ntensors %d, t %s)",
                  name, ntensors, t ? "set" : "NULL");
  for (int i = 0; i < ntensors; i++) {
    ZS_CHECK(zs_engine_check_desc(name, i, &t[i]));
    for (int j = 0; j < i; j++)
      if (strcmp(t[j].name, t[i].name) == 0)
        return zs_err(ZS_ERR_INVALID_ARG,
                      "unit '%s': tensors %d and %d are both named '%s': tensor names must be "
                      "unique in their unit",
                      name, j, i, t[i].name);
  }
  zs_unit *u = calloc(1, sizeof *u);
  if (!u) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for unit '%s'", name);
  u->e = e;
  u->index = e->nunits;
  snprintf(u->name, sizeof u->name, "%s", name);
  u->ntensors = ntensors;
  u->t = calloc((size_t)ntensors, sizeof *u->t);
  u->tnames = calloc((size_t)ntensors, sizeof *u->tnames);
  u->set_hash = calloc((size_t)ntensors * ZS_SET_SLOTS, sizeof *u->set_hash);
  u->group = calloc((size_t)ntensors, sizeof *u->group);
  u->tp = calloc((size_t)ntensors, sizeof *u->tp);
  u->whole_owner = calloc((size_t)ntensors, sizeof *u->whole_owner);
  u->whole_tp = calloc((size_t)ntensors, sizeof *u->whole_tp);
  u->keeps = calloc((size_t)ntensors, sizeof *u->keeps);
  u->part = calloc((size_t)ntensors, sizeof *u->part);
  u->part_most = calloc((size_t)ntensors, sizeof *u->part_most);
  u->pack_at = calloc((size_t)ntensors * ZS_OPT_MAX_STATE + 1, sizeof *u->pack_at);
  zs_status rc = ZS_OK;
  if (!u->t || !u->tnames || !u->set_hash || !u->group || !u->tp || !u->whole_owner ||
      !u->whole_tp || !u->keeps || !u->part || !u->part_most || !u->pack_at) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for unit '%s'", name);
    goto fail;
  }
  for (int i = 0; i < ntensors; i++) {
    u->t[i] = t[i];
    u->tnames[i] = strdup(t[i].name);
    if (!u->tnames[i]) {
      rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for unit '%s'", name);
      goto fail;
    }
    u->t[i].name = u->tnames[i];
  }
  ZS_CHECK_GOTO(zs_layout_build(&u->lay, ntensors, u->t), rc, fail);
  zs_engine_unit_state(u); /* after the build checked the element counts */
  if (e->nunits == e->cap_units) {
    int cap = e->cap_units ? 2 * e->cap_units : 16;
    zs_unit **nu = realloc(e->units, (size_t)cap * sizeof *nu);
    if (!nu) {
      rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for unit '%s'", name);
      goto fail;
    }
    e->units = nu;
    e->cap_units = cap;
  }
  e->units[e->nunits++] = u;
  u->ctx = &e->sh;
  e->sh.units = e->units;
  e->sh.nunits = e->nunits;
  if (out) *out = u;
  return ZS_OK;
fail:
  unit_free(u);
  return rc;
}

static void unit_release_buffers(zs_engine *e, zs_unit *u);

/* Allocates one state of u on its tier as its table entry says (tier/tier.h), zeroed. */
static zs_status state_alloc(zs_engine *e, zs_unit *u, zs_state k) {
  return zs_tier_ops_at(u->st.s[k].tier)->alloc(&e->tiers, u, k);
}

/* Frees one state of u, if it has one of its own (not an alias or NULL), where its table entry
   says. */
static void state_free(zs_engine *e, zs_unit *u, zs_state k) {
  void **p = zs_unit_slot(u, k);
  if (zs_state_is(&u->st, k, ZS_LIFE_NONE) || !*p) {
    *p = NULL;
    return;
  }
  zs_tier_ops_at(u->st.s[k].tier)->free(&e->tiers, u, k);
}

/* Gives unit i of us its copy of the plan's table (on the host tier when the budget places it
   there, its optimizer state on the NVMe tier when that placement says so, frozen when the unit
   is: zs_placement_unit_of, as the planner counts it), lays it out on the shard group and
   allocates its persistent states in memory (those on the NVMe tier: zs_nvme_tier_open). */
/* Commit's outcome agreed by every rank (one all-gather; a rank whose own part failed joins it
   too): with comm_check 0 the header exchange ends at commit, and nccl groups send no goodbye,
   so a rank failing commit alone would keep it (its destroy's goodbye) while its peers go on
   without. rc is this rank's. */
static zs_status agree_outcome(zs_engine *e, zs_status rc) {
  if (e->all_size == 1) return rc;
  const zs_agree_text say = {.what = "zs_engine_commit",
                             .phrase = " failed its part of commit (its own error says why); "
                                       "every rank's commit is undone",
                             .theirs = ZS_ERR_STATE};
  return zs_engine_agree(e, rc, NULL, &say); /* a failed rank keeps its own message */
}

static zs_status unit_alloc(zs_engine *e, const zs_plan_units *us, int i,
                            const zs_placement *place) {
  const zs_plan *pl = &e->plan;
  zs_unit *u = e->units[i];
  zs_placement_unit_of(place, pl, us, i, &u->st); /* frozen: params only */
  zs_layout_shard(&u->lay, pl->nshards, pl->nshards > 1 ? e->shard_rank : 0);
  zs_state_range(&u->st, ZS_ST_MASTER, &u->lay, &u->opt_off, &u->opt_n);
  zs_unit_pack_index(u);
  for (int k = 0; k < ZS_ST_N; k++)
    if (zs_state_is(&u->st, (zs_state)k, ZS_LIFE_PERSISTENT))
      ZS_CHECK(state_alloc(e, u, (zs_state)k));
  zs_unit_alias_master(u);
  /* A gathered copy is waited for through this event. */
  if (zs_state_is(&u->st, ZS_ST_PARAM_FULL, ZS_LIFE_TRANSIENT))
    ZS_CHECK(zs_dev_event_create(&e->dev, &u->ev_gathered));
  return ZS_OK;
}

/* Opens the NVMe tier (zs_nvme_tier_open) when the placement puts units there and this rank's
   buffers were allocated (prior: their status, with its message), after the disk step
   (zs_engine_nvme_disk: dead runs' tiers reclaimed, room checked per disk); then, since a rank's
   disk or memory may refuse what another's takes, every rank all-gathers its outcome and all fail
   when one did (the others naming it), each closing its own tier. Collective over the world when
   place->nnvme > 0 (the same on every rank), whatever prior is; else it returns prior. */
static zs_status open_tier(zs_engine *e, const zs_placement *place, zs_status prior) {
  if (!place->nnvme) return prior;
  prior = zs_engine_nvme_disk(e, prior); /* the same verdict on every rank */
  if (prior != ZS_OK) return prior;
  zs_status rc = zs_nvme_tier_open(&e->tiers, place);
  if (rc != ZS_OK) zs_err_wrap(rc, "zs_engine_commit"); /* the tier's own */
  char phrase[512];
  snprintf(phrase, sizeof phrase,
           " could not allocate its buffers or open its NVMe tier under nvme_path '%s' (its "
           "error says why); nothing was committed",
           e->cfg.nvme_path);
  const zs_agree_text say = {.what = "zs_engine_commit", .phrase = phrase};
  rc = zs_engine_agree(e, rc, NULL, &say);
  if (rc != ZS_OK) zs_engine_nvme_close(e);
  return rc;
}

/* The whole-tensor optimizers' step on the CUDA device (tier/whole.h) runs on tensors whose
   optimizer state is on the device and that are not split over tp: a unit with such tensors that
   the placement gives another tier, or that splits one, is refused (the same on every rank: the
   placement and the layouts are). */
static zs_status cuda_whole_check(const zs_engine *e, const zs_plan_units *us,
                                  const zs_placement *place) {
  if (e->dev.kind != ZS_DEVICE_CUDA) return ZS_OK;
  for (int i = 0; i < e->nunits; i++) {
    const zs_unit *u = e->units[i];
    int whole = -1, split = 0;
    for (int k = 0; k < u->ntensors; k++)
      if (u->whole_owner[k] >= 0) {
        int64_t rows, cols;
        zs_tp_whole_dims(&u->t[k], u->tp[k], e->tp_size, &rows, &cols);
        if (rows > INT32_MAX || cols > INT32_MAX) /* cuBLAS's and the kernels' grids */
          return zs_err(ZS_ERR_UNSUPPORTED,
                        "zs_engine_commit: tensor '%s.%s' is a %lld x %lld matrix: the CUDA "
                        "device's whole-tensor step takes dimensions up to 2^31 - 1",
                        u->name, u->t[k].name, (long long)rows, (long long)cols);
        whole = k;
        split = split || zs_tp_is_split(u->tp[k], e->tp_size);
      }
    if (whole < 0) continue;
    zs_state_table t;
    zs_placement_unit_of(place, &e->plan, us, i, &t);
    zs_tier tier = t.s[ZS_ST_MASTER].tier;
    for (int j = 0; j < ZS_OPT_MAX_STATE; j++)
      if (t.s[ZS_ST_OPT(j)].tier > tier) tier = t.s[ZS_ST_OPT(j)].tier;
    if (tier == ZS_TIER_DEVICE && !split) continue;
    zs_config c;
    zs_engine_group_config(e, u->group[whole], &c);
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_engine_commit: unit '%s' has tensors on %s, whose whole-tensor step on the "
                  "CUDA device needs their optimizer state on the device and the tensors unsplit, "
                  "but %s: keep the unit's optimizer state on the GPU (no ZS_OFFLOAD_OPTIMIZER, "
                  "a larger offload budget, no NVMe tier)%s, or put those tensors in a group on an "
                  "elementwise optimizer",
                  u->name, zs_opt_name_of(&c),
                  split                  ? "a tensor is split over tp"
                  : tier == ZS_TIER_NVME ? "the placement puts it on the NVMe tier"
                                         : "the placement puts it on the host",
                  split ? ", keep the tensor replicated over tp" : "");
  }
  return ZS_OK;
}

/* A collective's end of the step's GPU timing pair (zs_coll_set_timer). */
static void time_coll(void *dev, void *stream, int end) {
  zs_dev_timer_coll(dev, stream, end);
}

static zs_status commit_steps(zs_engine *e);

zs_status zs_engine_commit(zs_engine *e) {
  const zs_status rc = commit_steps(e);
  /* commit's agreements fail without failing the engine (nothing is allocated yet): a peer lost
     there still leaves a flight record. */
  if (e && (rc == ZS_ERR_COMM || rc == ZS_ERR_TIMEOUT || rc == ZS_ERR_DEVICE))
    zs_engine_flight_dump(e);
  return rc;
}

static zs_status commit_steps(zs_engine *e) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_commit: engine is NULL");
  if (e->state != ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "zs_engine_commit called twice: the layout is already fixed");
  if (e->nunits == 0)
    return zs_err(ZS_ERR_STATE, "zs_engine_commit with no units: add units with "
                                "zs_engine_add_unit first");
  if (zs_state_is(&e->plan.table, ZS_ST_PARAM_FULL, ZS_LIFE_TRANSIENT) && e->cfg.max_live_bytes)
    for (int i = 0; i < e->nunits; i++) {
      const zs_unit *u = e->units[i];
      size_t S = (size_t)e->shard_size, n = u->lay.numel_total;
      size_t bytes = ((n + S - 1) / S * S) * zs_dtype_size(e->cfg.param_dtype);
      if (bytes > e->cfg.max_live_bytes)
        return zs_err(ZS_ERR_INVALID_ARG,
                      "zs_engine_commit: unit '%s' needs %zu bytes gathered, more than "
                      "max_live_bytes (%zu): raise max_live_bytes to at least %zu, or split the "
                      "unit",
                      u->name, bytes, e->cfg.max_live_bytes, bytes);
    }
  zs_engine_call(e, ZS_CALL_COMMIT, NULL);
  ZS_CHECK(zs_engine_agree_config(e));
  ZS_CHECK(zs_engine_budget_free(e)); /* ZS_BUDGET_FREE: the least free memory is the budget */
  ZS_CHECK(zs_engine_whole_plan(e));  /* before the fit check, which counts its buffers */
  ZS_CHECK(zs_engine_check_fit(e));
  /* The budget's placement: a function of the configuration and the unit sizes only, so every
     rank places the same units (the fit check above refused a model over its budget). */
  const zs_plan_units us = {e->units, NULL, e->nunits, NULL, NULL, NULL, NULL, NULL};
  zs_placement place;
  zs_placement_make(&e->plan, &e->cfg, e->world_size, &us, &place);
  ZS_CHECK(cuda_whole_check(e, &us, &place));
  zs_status rc = ZS_OK;
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++) {
    rc = unit_alloc(e, &us, i, &place);
    if (rc != ZS_OK)
      zs_err_wrap(rc, "zs_engine_commit: unit '%s' (%zu elements)", e->units[i]->name,
                  e->units[i]->lay.numel_total);
  }
  if (rc != ZS_OK)
    zs_dev_sync(&e->dev, e->dev.compute_stream); /* its message stays rc's */
  else
    rc = zs_dev_sync(&e->dev, e->dev.compute_stream);
  /* The NVMe tier after the units' buffers: the initial params exist (all zero at commit). The
     same on every rank (place is a function of the configuration and the sizes), so every rank
     joins the tier's agreement, a rank whose allocation failed too: none waits for it. */
  rc = open_tier(e, &place, rc);
  if (!e->cfg.comm_check || !strcmp(zs_coll_backend(e->world), "nccl")) rc = agree_outcome(e, rc);
  if (rc != ZS_OK) { /* all or nothing: the engine is back to its state before commit */
    for (int k = 0; k < e->nunits; k++)
      unit_release_buffers(e, e->units[k]);
    return rc;
  }
  zs_engine_facts_commit(e, &us, &place); /* and zs_engine_info's placement, written from them */
  /* The divergence check as configured, from here on (commit's agreement made every rank's
     comm_check the same; create and commit ran with it on). */
  zs_coll *groups[5] = {e->all, e->tp, e->world, e->shard, e->replica};
  for (int i = 0; i < 5; i++) {
    zs_coll_set_check(groups[i], e->cfg.comm_check);
    zs_coll_set_timer(groups[i], time_coll, &e->dev); /* the steps' GPU timing (CUDA) */
  }
  e->state = ZS_ENGINE_READY;
  return ZS_OK;
}

/* Frees every state a unit holds, persistent or transient. */
static void unit_release_buffers(zs_engine *e, zs_unit *u) {
  for (int k = 0; k < ZS_ST_N; k++)
    state_free(e, u, (zs_state)k);
  zs_dev_event_destroy(&e->dev, u->ev_gathered);
  u->ev_gathered = NULL;
  u->gathered = u->held = 0;
}

void zs_engine_destroy(zs_engine *e) {
  if (!e) return;
  /* Destroy reports nothing: whatever its goodbye or teardown says, the thread's last error is
     the caller's again when it returns (create's failure path relies on it too). */
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", zs_last_error());
  /* Collectives first: destroying them completes (bounded) or aborts any op that still writes
     into engine buffers or holds a stream; only then are the streams drained (never after a
     failure: a stream may wait on an aborted collective) and the memory returned. */
  if (e->save_job) zs_engine_call(e, ZS_CALL_DESTROY, NULL);
  zs_ckpt_save_settle(e); /* a staged save commits (healthy, between steps) or is dropped */
  zs_engine_goodbye(e);   /* a healthy engine: a peer still in a collective call learns we left */
  if (e->state == ZS_ENGINE_FAILED) zs_engine_abort_comms(e); /* all groups before any teardown */
  if (e->replica) zs_coll_destroy(e->replica);
  if (e->shard && e->shard != e->world) zs_coll_destroy(e->shard);
  if (e->world && e->world != e->all) zs_coll_destroy(e->world);
  if (e->tp) zs_coll_destroy(e->tp);
  if (e->all) zs_coll_destroy(e->all);
  e->replica = e->shard = e->world = e->tp = e->all = NULL;
  zs_engine_flight_close(e);
  zs_mem_drain(&e->mem); /* nothing writes into the engine's buffers any more */
  if (e->state != ZS_ENGINE_FAILED) {
    if (e->dev.compute_stream) zs_dev_sync(&e->dev, e->dev.compute_stream);
    if (e->dev.comm_stream) zs_dev_sync(&e->dev, e->dev.comm_stream);
  }
  zs_engine_nvme_close(e); /* its files and directory are removed, whatever the state */
  zs_nvml_close(e->nvml);
  for (int i = 0; i < e->nunits; i++) {
    unit_release_buffers(e, e->units[i]);
    unit_free(e->units[i]);
  }
  free(e->units);
  free(e->peers);
  free(e->user_meta);
  zs_ckpt_staging_free(e);
  if (e->optim) zs_ledger_sub(&e->mem.ledger, ZS_MEM_HOST_PINNED, zs_placement_pipe_bytes(&e->cfg));
  zs_optim_destroy(e->optim); /* its staging is in the arena */
  zs_host_arena_destroy(e->arena);
  free(e->agree_rows);
  free(e->xchg);                                                      /* its groups are gone */
  if (e->xchg_dev) zs_dev_free(&e->dev, e->xchg_dev, NULL);           /* so are the exchange's */
  if (e->sh.status_dev) zs_dev_free(&e->dev, e->sh.status_dev, NULL); /* and the gathers' */
  zs_dev_close(&e->dev); /* last: every device buffer is freed through it */
  free(e);
  zs_err(ZS_OK, "%s", saved);
}

void *zs_engine_stream(zs_engine *e) {
  return e ? e->dev.compute_stream : NULL;
}

zs_status zs_engine_memory(const zs_engine *e, zs_memory *out) {
  if (!e || !out) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_memory: engine or out is NULL");
  zs_ledger_report(&e->mem.ledger, out);
  return ZS_OK;
}

zs_status zs_engine_plan_memory(const zs_engine *e, zs_memory *out) {
  if (!e || !out) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_plan_memory: engine or out is NULL");
  size_t b[ZS_MEM_NCAT];
  const zs_plan_units us = {e->units, NULL, e->nunits, NULL, NULL, NULL, NULL, NULL};
  zs_plan_memory(&e->plan, &e->cfg, e->world_size, &us, b);
  zs_bytes *cat[ZS_MEM_NCAT] = {&out->params, &out->grads, &out->optimizer, &out->buffers,
                                &out->host_pinned};
  size_t total = 0;
  for (int c = 0; c < ZS_MEM_NCAT; c++) {
    cat[c]->cur = cat[c]->peak = b[c];
    total = total > SIZE_MAX - b[c] ? SIZE_MAX : total + b[c];
  }
  out->total.cur = out->total.peak = total;
  out->struct_version = 1;
  out->reserved_u = 0;
  for (int i = 0; i < 6; i++)
    out->reserved[i] = (zs_bytes){0, 0};
  return ZS_OK;
}

int zs_engine_num_units(const zs_engine *e) {
  return e ? e->nunits : 0;
}
zs_unit *zs_engine_unit(zs_engine *e, int i) {
  return (e && i >= 0 && i < e->nunits) ? e->units[i] : NULL;
}
const char *zs_unit_name(const zs_unit *u) {
  return u ? u->name : NULL;
}
int64_t zs_unit_numel(const zs_unit *u, int t) {
  return (u && t >= 0 && t < u->ntensors) ? (int64_t)u->lay.numel[t] : -1;
}
zs_status zs_unit_tensor(const zs_unit *u, int t, zs_tensor_desc *out) {
  if (!u || !out || t < 0 || t >= u->ntensors)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_unit_tensor: NULL unit or out, or no tensor %d (0..%d)",
                  t, u ? u->ntensors - 1 : -1);
  *out = u->t[t];
  return ZS_OK;
}
const zs_config *zs_engine_config(const zs_engine *e) {
  return e ? &e->cfg : NULL;
}
const char *zs_engine_info(const zs_engine *e) {
  return e ? e->info : "";
}
int64_t zs_engine_step_count(const zs_engine *e) {
  return e ? e->opt_steps : -1;
}
int64_t zs_engine_steps_done(const zs_engine *e) {
  return e ? e->steps_done : -1;
}

zs_status zs_engine_set_lr(zs_engine *e, float lr) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_set_lr: engine is NULL");
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "zs_engine_set_lr: the engine failed earlier; destroy it");
  if (!(lr >= 0) || lr > 1e30f)
    return zs_err(ZS_ERR_INVALID_ARG, "learning rate %g must be finite and >= 0", (double)lr);
  e->cfg.optim.lr = lr;
  return ZS_OK;
}
