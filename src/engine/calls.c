/* Rank divergence: the public call each rank is in, as the context of every collective's header
 * (comm.h: the ranks of a group compare headers before data moves), the agreement on the step's
 * shape before the update, and destroy's last agreement.
 *
 * The context is (call, unit, the unit an all-gather of params moves and whether it is a
 * prefetch, step number, inside a step, micro_steps, the unit's micro-step): two ranks gathering
 * different units of the same size, or one prefetching what the other gathers, differ.
 * Every rank of a legal program has the same context at every collective: the calls that
 * communicate are collective, and the step counters move only in them. A call that is local at
 * this configuration (a gather with full params, a grads_ready before the last micro-step at
 * stages 0-1) never exchanges a header, so it is never compared and legal programs that make it
 * on one rank only (rank 0 sampling at stage 0-2) are not flagged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "base/mix64.h"
#include "engine/engine_internal.h"
#include "engine/fail.h"
#include "tier/master_io.h"
#include "base/error.h"

static const char *call_name(uint64_t c) {
  static const char *names[ZS_CALL_N] = {"no engine call",
                                         "zs_engine_create",
                                         "zs_engine_commit",
                                         "zs_unit_gather",
                                         "zs_unit_grads_ready",
                                         "zs_unit_grads_flush",
                                         "zs_engine_step",
                                         "zs_unit_get_param",
                                         "zs_engine_save",
                                         "zs_engine_load",
                                         "zs_engine_export_safetensors",
                                         "zs_engine_destroy",
                                         "zs_engine_broadcast_params",
                                         "zs_unit_get_state",
                                         "zs_unit_get_grad",
                                         "zs_engine_begin_step",
                                         "zs_engine_save_wait",
                                         "zs_engine_all_reduce",
                                         "zs_engine_all_gather",
                                         "zs_engine_reduce_scatter"};
  return c < ZS_CALL_N ? names[c] : "an unknown call";
}

void zs_engine_call(zs_engine *e, zs_call call, const zs_unit *u) {
  e->call = call;
  e->call_unit = u ? u->index : -1;
  e->call_arr = 0;
}

/* w0: call | (unit + 1) << 8 | (gathered unit + 1, 27 bits) << 32 | (the state array + 1) << 59
   | prefetch << 63; w1: completed steps; w2: in a step | micro_steps << 1 | the unit's
   micro-step (grads_ready calls so far) << 32. */
static void context(const void *owner, uint64_t w[ZS_SIG_CTX]) {
  const zs_engine *e = owner;
  const int in_step = e->state == ZS_ENGINE_IN_STEP;
  w[0] = (uint64_t)e->call | (uint64_t)(uint32_t)(e->call_unit + 1) << 8 |
         (uint64_t)((uint32_t)(e->sh.sig_unit + 1) & 0x7ffffffu) << 32 |
         (uint64_t)(e->call_arr & 0xf) << 59 | (uint64_t)(e->sh.sig_prefetch != 0) << 63;
  w[1] = (uint64_t)e->steps_done;
  w[2] = 0;
  if (in_step) {
    w[2] = 1u | (uint64_t)(uint32_t)e->micro_steps << 1;
    if (e->call_unit >= 0)
      w[2] |= (uint64_t)(uint32_t)e->units[e->call_unit]->grads_ready_count << 32;
  }
}

/* "zs_unit_gather('h1') in step 5 (micro-step 2 of 3)", then ", moving unit 'h2' (prefetch)"
   when the collective is an all-gather of params. */
static void describe(const void *owner, const uint64_t w[ZS_SIG_CTX], char *buf, size_t len) {
  const zs_engine *e = owner;
  const int unit = (int)((w[0] >> 8) & 0xffffff) - 1;
  const int moved = (int)((w[0] >> 32) & 0x7ffffff) - 1, arr = (int)((w[0] >> 59) & 0xf) - 1;
  char uname[ZS_NAME_MAX + 40] = ""; /* "('name')", or nothing for a call without a unit */
  if (unit >= 0 && unit < e->nunits)
    snprintf(uname, sizeof uname, arr >= 0 ? "('%s', '%s')" : "('%s')", e->units[unit]->name,
             arr >= 0 && arr < zs_state_narrays(&e->cfg) ? zs_arr_ckpt_name(&e->cfg, (zs_arr)arr)
                                                         : "?");
  const long long step = (long long)w[1];
  int n = 0;
  if (w[2] & 1) {
    const unsigned micro_steps = (unsigned)((w[2] >> 1) & 0x7fffffffu);
    const unsigned micro = (unsigned)(w[2] >> 32);
    if (unit >= 0)
      n = snprintf(buf, len, "%s%s in step %lld (micro-step %u of %u)", call_name(w[0] & 0xff),
                   uname, step + 1, micro + 1 > micro_steps ? micro_steps : micro + 1, micro_steps);
    else
      n = snprintf(buf, len, "%s in step %lld (%u micro-steps)", call_name(w[0] & 0xff), step + 1,
                   micro_steps);
  } else {
    n = snprintf(buf, len, "%s%s outside a step (after %lld steps)", call_name(w[0] & 0xff), uname,
                 step);
  }
  if (n < 0 || (size_t)n >= len || moved < 0 || moved >= e->nunits) return;
  snprintf(buf + n, len - (size_t)n, ", moving unit '%s'%s", e->units[moved]->name,
           (w[0] >> 63) ? " (a prefetch)" : "");
}

void zs_engine_sig_attach(zs_engine *e) {
  e->sig.context = context;
  e->sig.describe = describe;
  e->sig.owner = e;
  e->call_unit = -1;
  zs_coll_set_sig_src(e->all, &e->sig);
  zs_coll_set_sig_src(e->tp, &e->sig);
  zs_coll_set_sig_src(e->world, &e->sig);
  zs_coll_set_sig_src(e->shard, &e->sig);
  zs_coll_set_sig_src(e->replica, &e->sig);
}

/* Words of the step's shape: micro_steps, grads_ready calls of all units, completed steps, and
   the running hash of every collective header built on the engine's groups since create
   (src/comm/sig.c): the same on every rank of a legal program, so a divergence that neither hung
   nor was caught by a header exchange (comm_check 0) is caught here, before the update.
   SHAPE_SET combines the records of zs_engine_set_record (0: none since the last agreement),
   compared among the data-parallel ranks (tp ranks hold other slices); SHAPE_SET_WHOLE those of
   the tensors every tp rank holds whole (not split), compared over every rank; SHAPE_NO_GRAD the
   units that said zs_unit_no_grad (a hash of their indexes; 0: none); SHAPE_TP_ROLE the tp group's
   running hash of the calls only some tp groups make (zs_coll_hash_pause: the whole step's joins,
   the export's), compared within the tp group. */
enum {
  SHAPE_MICRO,
  SHAPE_READY,
  SHAPE_STEP,
  SHAPE_HASH,
  SHAPE_SET,
  SHAPE_NO_GRAD,
  SHAPE_SET_WHOLE,
  SHAPE_TP_ROLE,
  SHAPE_N
};

void zs_engine_set_record(zs_unit *u, int t, int slot, const float *host, size_t n) {
  const uint64_t h = XXH3_64bits(host, n * sizeof(float));
  u->set_hash[(size_t)t * ZS_SET_SLOTS + (size_t)slot] = h ? h : 1; /* 0 means "not set" */
  u->e->set_pending = 1;
}

/* Forgets the records of the slots in mask (bit s: slot s). */
static void clear_slots(zs_engine *e, unsigned mask) {
  e->set_pending = 0;
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    for (size_t r = 0; r < (size_t)u->ntensors * ZS_SET_SLOTS; r++) {
      if (mask >> (r % ZS_SET_SLOTS) & 1u) u->set_hash[r] = 0;
      if (u->set_hash[r]) e->set_pending = 1;
    }
  }
}

void zs_engine_set_clear(zs_engine *e, int params_only) {
  clear_slots(e, params_only ? 1u : ~0u);
}

void zs_engine_set_clear_grads(zs_engine *e) {
  clear_slots(e, 1u << ZS_SET_GRAD_SLOT);
}

/* One word of every record (which tensors were set, and the hash of their values), 0 when none:
   equal on ranks that set the same tensors to the same values since the last agreement. */
static uint64_t set_word(const zs_engine *e, int whole_only) {
  if (!e->set_pending) return 0;
  uint64_t h = 0x6a09e667f3bcc909ull;
  for (int i = 0; i < e->nunits; i++)
    for (size_t r = 0; r < (size_t)e->units[i]->ntensors * ZS_SET_SLOTS; r++)
      if (e->units[i]->set_hash[r] &&
          (!whole_only || !zs_engine_tp_split(e->units[i], (int)(r / ZS_SET_SLOTS))))
        h = zs_mix64(zs_mix64(h ^ ((uint64_t)(uint32_t)i << 32 | (uint32_t)r)) ^
                     e->units[i]->set_hash[r]);
  return h ? h : 1;
}

/* The records differ across ranks (every rank saw the same SHAPE_SET words): all-gathers every
   tensor's record and returns ZS_ERR_INVALID_ARG naming the first tensor (in unit, then tensor
   order) whose record differs and two ranks that differ on it, the same message on every rank;
   other (a sentence after "zs_engine_step: "; NULL: none) when no record differs in this
   data-parallel group. Collective over the world (the data-parallel ranks). */
static zs_status set_mismatch(zs_engine *e, const char *other) {
  size_t n = 0;
  for (int i = 0; i < e->nunits; i++)
    n += (size_t)e->units[i]->ntensors * ZS_SET_SLOTS;
  const size_t W = (size_t)e->world_size;
  uint64_t *mine = malloc(n * sizeof *mine), *all = malloc(W * n * sizeof *all);
  if (!mine || !all) {
    free(mine);
    free(all);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_step: out of host memory");
  }
  size_t k = 0;
  for (int i = 0; i < e->nunits; i++)
    for (size_t r = 0; r < (size_t)e->units[i]->ntensors * ZS_SET_SLOTS; r++)
      mine[k++] = e->units[i]->set_hash[r];
  zs_status rc = zs_engine_allgather_u64(e, mine, n, all);
  free(mine);
  if (rc != ZS_OK) {
    free(all);
    return zs_err_wrap(rc, "zs_engine_step: comparing the values set on each rank");
  }
  /* With sharded params no rank keeps the whole values it set: nothing to broadcast from. */
  const char *fix =
      e->plan.shard_params
          ? "set the same values on every rank (a per-rank seed?) and run the step again (with "
            "sharded params no rank keeps the others' values, so zs_engine_broadcast_params "
            "cannot repair it); the step was abandoned (nothing updated, its gradients dropped): "
            "the engine stays usable"
          : "set the same values on every rank (a per-rank seed?), or set them on one rank and "
            "call zs_engine_broadcast_params; the step was abandoned (nothing updated, its "
            "gradients dropped): the engine stays usable";
  /* A state's values live only where they were written: no broadcast repairs them. */
  const char *state_fix = "write the same values on every rank and run the step again; the step "
                          "was abandoned (nothing updated, its gradients dropped): the engine "
                          "stays usable";
  k = 0;
  for (int i = 0; i < e->nunits; i++)
    for (size_t r = 0; r < (size_t)e->units[i]->ntensors * ZS_SET_SLOTS; r++, k++)
      for (size_t q = 1; q < W; q++) {
        const uint64_t a = all[k], b = all[q * n + k];
        if (a == b) continue;
        const zs_unit *u = e->units[i];
        const int t = (int)(r / ZS_SET_SLOTS), slot = (int)(r % ZS_SET_SLOTS);
        char what[160];
        if (slot == ZS_SET_GRAD_SLOT)
          snprintf(what, sizeof what, "the gradient (zs_unit_set_grad) of ");
        else if (slot)
          snprintf(what, sizeof what, "optimizer state '%s' of ",
                   zs_opt_shape_of(&e->cfg)->state_name[slot - 1]);
        else
          what[0] = 0;
        zs_status s;
        if (a && b)
          s = zs_err(ZS_ERR_INVALID_ARG,
                     "zs_engine_step: values set differ across ranks: %sunit '%s' tensor '%s' "
                     "set by rank %d differs from rank %zu's: %s",
                     what, u->name, u->tnames[t], e->tp_rank,
                     q * (size_t)e->tp_size + (size_t)e->tp_rank, slot ? state_fix : fix);
        else
          s = zs_err(ZS_ERR_INVALID_ARG,
                     "zs_engine_step: values set differ across ranks: %sunit '%s' tensor '%s' "
                     "was set by rank %zu but not by rank %zu since the last step: %s",
                     what, u->name, u->tnames[t],
                     (a ? (size_t)0 : q) * (size_t)e->tp_size + (size_t)e->tp_rank,
                     (a ? q : (size_t)0) * (size_t)e->tp_size + (size_t)e->tp_rank,
                     slot ? state_fix : fix);
        free(all);
        return s;
      }
  free(all);
  if (other) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_step: %s", other);
  /* The combined words differed but no record does: cannot happen short of a hash collision. */
  return zs_err(ZS_ERR_INVALID_ARG,
                "zs_engine_step: values set differ across ranks (the combined records differ, "
                "no single tensor's does): %s",
                fix);
}

zs_status zs_engine_agree_step(zs_engine *e) {
  if (e->all_size == 1) {
    if (e->set_pending) zs_engine_set_clear(e, 0);
    return ZS_OK;
  }
  uint64_t mine[SHAPE_N] = {(uint64_t)e->micro_steps, 0, (uint64_t)e->steps_done, 0,
                            set_word(e, 0),           0, set_word(e, 1)};
  for (int i = 0; i < e->nunits; i++) {
    mine[SHAPE_READY] += (uint64_t)e->units[i]->grads_ready_count;
    if (e->units[i]->no_grad) mine[SHAPE_NO_GRAD] += XXH3_64bits(&i, sizeof i) | 1;
  }
  mine[SHAPE_HASH] = zs_coll_sig_hash(e->world) ^ zs_coll_sig_hash(e->shard) * 3 ^
                     zs_coll_sig_hash(e->replica) * 5 ^ zs_coll_sig_hash(e->tp) * 7;
  mine[SHAPE_TP_ROLE] = zs_coll_sig_role_hash(e->tp);
  /* Over every rank: a tp peer that diverged fails this rank's next tp collective otherwise. */
  if (!e->agree_rows) {
    e->agree_rows = calloc((size_t)e->all_size * SHAPE_N, sizeof *e->agree_rows);
    if (!e->agree_rows) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_step: out of host memory");
  }
  const uint64_t *rows = e->agree_rows;
  zs_status rc =
      zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, mine, SHAPE_N, e->agree_rows);
  if (rc != ZS_OK) return zs_err_wrap(rc, "zs_engine_step: agreeing on the step's shape");
  for (int q = 0; q < e->all_size; q++) {
    const uint64_t *o = rows + (size_t)q * SHAPE_N;
    if (o[SHAPE_NO_GRAD] != mine[SHAPE_NO_GRAD])
      return zs_err(ZS_ERR_COMM,
                    "zs_engine_step: rank %d (this one) and rank %d declared zs_unit_no_grad on "
                    "different units in this step; every rank must declare the same ones. Nothing "
                    "was updated, but the engine is failed: destroy it and fix the program",
                    e->all_rank, q);
    if (o[SHAPE_MICRO] != mine[SHAPE_MICRO] || o[SHAPE_READY] != mine[SHAPE_READY] ||
        o[SHAPE_STEP] != mine[SHAPE_STEP])
      return zs_err(ZS_ERR_COMM,
                    "zs_engine_step: the ranks disagree on the step's shape: this rank (%d) ends "
                    "step %llu with %llu micro-steps and %llu zs_unit_grads_ready calls, rank %d "
                    "ends step %llu with %llu micro-steps and %llu calls. Every rank must pass "
                    "the same micro_steps to zs_engine_begin_step and make the same calls; "
                    "nothing was updated, but the engine is failed: destroy it and fix the program",
                    e->all_rank, (unsigned long long)mine[SHAPE_STEP] + 1,
                    (unsigned long long)mine[SHAPE_MICRO], (unsigned long long)mine[SHAPE_READY], q,
                    (unsigned long long)o[SHAPE_STEP] + 1, (unsigned long long)o[SHAPE_MICRO],
                    (unsigned long long)o[SHAPE_READY]);
    /* Rank q's tp group leader (tp groups are consecutive ranks): every rank compares every row
       with its leader's, so all take the same branch. */
    const int lead = q - q % e->tp_size;
    if (o[SHAPE_TP_ROLE] != rows[(size_t)lead * SHAPE_N + SHAPE_TP_ROLE])
      return zs_err(ZS_ERR_COMM,
                    "zs_engine_step: the ranks disagree on the step's shape: ranks %d and %d, of "
                    "one tp group, made different calls of those only some tp groups make (the "
                    "whole-tensor step's, the export's) since zs_engine_create (their running "
                    "hashes of those calls differ). Every rank must make the same calls in the "
                    "same order; nothing was updated, but the engine is failed: destroy it and "
                    "fix the program",
                    lead, q);
    if (o[SHAPE_HASH] != mine[SHAPE_HASH])
      return zs_err(ZS_ERR_COMM,
                    "zs_engine_step: the ranks disagree on the step's shape: rank %d (this one) "
                    "and rank %d made different collective calls since zs_engine_create (their "
                    "running hashes of the calls differ; with comm_check 0 the calls are not "
                    "compared one by one, so data exchanged since may be wrong). "
                    "Every rank must make the same collective calls in the same order; nothing "
                    "was updated, but the engine is failed: destroy it and fix the program",
                    e->all_rank, q);
  }
  /* Every rank saw every row: all take the same branch. The ranks of a data-parallel group whose
     records differ name the tensor (set_mismatch's exchange, over that group); the others say
     where it differs. Rank q's group: the ranks r with r % tp_size == q % tp_size. */
  const int T = e->tp_size;
  int bad_dp = -1, mine_bad = 0, bad_whole = 0;
  for (int q = 0; q < e->all_size; q++) {
    if (rows[(size_t)q * SHAPE_N + SHAPE_SET] != rows[(size_t)(q % T) * SHAPE_N + SHAPE_SET]) {
      if (bad_dp < 0) bad_dp = q;
      if (q % T == e->tp_rank) mine_bad = 1;
    }
    if (rows[(size_t)q * SHAPE_N + SHAPE_SET_WHOLE] != rows[SHAPE_SET_WHOLE]) bad_whole = 1;
  }
  /* Every data-parallel group makes set_mismatch's exchange, so that their groups' calls stay
     the same (the next step compares them). */
  char other[512];
  if (bad_dp >= 0 && !mine_bad)
    snprintf(other, sizeof other,
             "values set differ across ranks %d and %d (their own zs_last_error names the "
             "tensor): set the same values on every rank of a data-parallel group; the step was "
             "abandoned (nothing updated, its gradients dropped): the engine stays usable",
             bad_dp % T, bad_dp);
  else
    snprintf(other, sizeof other,
             "values set differ across the tp group on a tensor every tp rank holds whole "
             "(ZS_TP_REPLICATED or ZS_TP_PARTIAL_GRAD): set the same values on every rank; the "
             "step was abandoned (nothing updated, its gradients dropped): the engine stays "
             "usable");
  if (bad_dp >= 0 || bad_whole) return set_mismatch(e, mine_bad ? NULL : other);
  if (e->set_pending) zs_engine_set_clear(e, 0);
  return ZS_OK;
}

/* The fields of the resolved configuration whose values every rank must share: what is sharded
   and how, the dtypes, the precision modes and the optimizer's hyperparameters (floats by their
   bits). A rank whose environment or program sets one differently would hold state of another
   shape or update it with other numbers (lean mode's rounding_seed: other bits), silently. */
typedef struct {
  const char *name;
  uint64_t v;
} cfg_word;
enum { CFG_MAX = 48 };

static uint64_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static int cfg_words(const zs_config *c, cfg_word *w) {
  int n = 0;
/* at most CFG_MAX words (cfg_agree's arrays): one past it is dropped, and the count then says so */
#define ZS_W(nm, val) (n < CFG_MAX ? (w[n].name = (nm), w[n].v = (uint64_t)(val)) : 0, n++)
  ZS_W("stage", (int64_t)c->stage);
  ZS_W("shard_params", (int64_t)c->shard_params);
  ZS_W("shard_grads", (int64_t)c->shard_grads);
  ZS_W("shard_optimizer", (int64_t)c->shard_optimizer);
  ZS_W("param_dtype", (int64_t)c->param_dtype);
  ZS_W("reduce_dtype", (int64_t)c->reduce_dtype);
  ZS_W("offload", c->offload);
  ZS_W("deterministic", (int64_t)c->deterministic);
  ZS_W("bucket_bytes", c->bucket_bytes);
  ZS_W("shard_group_size", (int64_t)c->shard_group_size);
  ZS_W("tp_size", (int64_t)c->tp_size);
  ZS_W("offload_budget_bytes", c->offload_budget_bytes);
  ZS_W("master", (int64_t)c->master);
  ZS_W("moment_dtype", (int64_t)c->moment_dtype);
  ZS_W("rounding_seed", c->rounding_seed);
  ZS_W("comm_check (0 or on)", (int64_t)(c->comm_check != 0));
  ZS_W("ckpt_async", (int64_t)c->ckpt_async); /* whether a save's commit waits for a later call */
  /* With the NVMe tier the host cap decides the placement, which must be the same everywhere. */
  ZS_W("nvme_path (set or NULL)", c->nvme_path != NULL);
  ZS_W("offload_host_bytes (with nvme_path)", c->nvme_path ? c->offload_host_bytes : 0);
  ZS_W("optimizer", (int64_t)c->optimizer);
  ZS_W("optim.lr", fbits(c->optim.lr));
  ZS_W("optim.beta1", fbits(c->optim.beta1));
  ZS_W("optim.beta2", fbits(c->optim.beta2));
  ZS_W("optim.eps", fbits(c->optim.eps));
  ZS_W("optim.weight_decay", fbits(c->optim.weight_decay));
  ZS_W("optim.max_grad_norm", fbits(c->optim.max_grad_norm));
  ZS_W("sgd.momentum", fbits(c->sgd.momentum));
  ZS_W("sgd.dampening", fbits(c->sgd.dampening));
  ZS_W("sgd.nesterov", (int64_t)(c->sgd.nesterov != 0));
  ZS_W("grad_accum_fp32", (int64_t)c->grad_accum_fp32);
  ZS_W("muon.momentum", fbits(c->muon.momentum));
  ZS_W("muon.nesterov", (int64_t)(c->muon.nesterov != 0));
  ZS_W("muon.ns_steps", (int64_t)c->muon.ns_steps);
  ZS_W("muon.adjust_lr", (int64_t)c->muon.adjust_lr);
  ZS_W("adafactor.beta2_decay", fbits(c->adafactor.beta2_decay));
  ZS_W("adafactor.eps1", fbits(c->adafactor.eps1));
  ZS_W("adafactor.eps2", fbits(c->adafactor.eps2));
  ZS_W("adafactor.d", fbits(c->adafactor.d));
#undef ZS_W
  return n;
}

double zs_engine_comm_seconds(const zs_engine *e) {
  double s = zs_coll_op_seconds(e->world);
  if (e->shard != e->world) s += zs_coll_op_seconds(e->shard);
  if (e->all != e->world) s += zs_coll_op_seconds(e->all) + zs_coll_op_seconds(e->tp);
  return s + zs_coll_op_seconds(e->replica);
}

double zs_engine_check_seconds(const zs_engine *e) {
  double s = zs_coll_check_seconds(e->world);
  if (e->shard != e->world) s += zs_coll_check_seconds(e->shard);
  if (e->all != e->world) s += zs_coll_check_seconds(e->all) + zs_coll_check_seconds(e->tp);
  return s + zs_coll_check_seconds(e->replica);
}

zs_status zs_engine_agree_config(zs_engine *e) {
  if (e->all_size == 1) return ZS_OK;
  cfg_word w[CFG_MAX];
  int n = cfg_words(&e->cfg, w);
  if (n < CFG_MAX) { /* the units: checkpoints name them, the updates read no_weight_decay */
    uint64_t h = XXH64(&e->nunits, sizeof e->nunits, 0x756e697473ull);
    for (int i = 0; i < e->nunits; i++) {
      const zs_unit *u = e->units[i];
      h = XXH64(u->name, strlen(u->name) + 1, h);
      h = XXH64(&u->ntensors, sizeof u->ntensors, h);
      for (int t = 0; t < u->ntensors; t++) {
        const zs_tensor_desc *d = &u->t[t];
        int64_t f[6] = {d->ndim, d->no_weight_decay != 0}; /* the dimensions it has, below */
        for (int k = 0; k < d->ndim && k < 4; k++)
          f[2 + k] = d->shape[k];
        h = XXH64(u->tnames[t], strlen(u->tnames[t]) + 1, h);
        h = XXH64(f, sizeof f, h);
      }
    }
    w[n].name = "units (zs_engine_add_unit: names, tensors, shapes, no_weight_decay)", w[n].v = h;
  }
  n++;
  if (n < CFG_MAX) /* the parameter groups: their values and every tensor's membership */
    w[n].name = "param groups (zs_engine_add_group, zs_unit_set_group)",
    w[n].v = zs_engine_groups_hash(e);
  n++;
  if (n < CFG_MAX) w[n].name = "tp layouts (zs_unit_set_tp)", w[n].v = zs_engine_tp_hash(e);
  n++;
  if (n < CFG_MAX) { /* rank 0 writes every rank's checkpoint segments from its own flags */
    uint64_t h = XXH64(&e->nunits, sizeof e->nunits, 0x66726f7a656eull);
    for (int i = 0; i < e->nunits; i++)
      h = XXH64(&e->units[i]->frozen, sizeof e->units[i]->frozen, h);
    w[n].name = "frozen units (zs_unit_freeze)", w[n].v = h;
  }
  n++;
  if (n > CFG_MAX) /* a field added to cfg_words without room: every commit says so, in tests */
    return zs_err(ZS_ERR_STATE,
                  "zs_engine_commit: %d configuration words, room for %d (raise "
                  "CFG_MAX in src/engine/calls.c)",
                  n, CFG_MAX);
  uint64_t mine[CFG_MAX];
  for (int i = 0; i < n; i++)
    mine[i] = w[i].v;
  /* Over every rank: the tp groups' ranks must agree as the data-parallel ones do. */
  const size_t W = (size_t)e->all_size, bytes = W * (size_t)n * sizeof(uint64_t);
  uint64_t *rows = malloc(bytes);
  if (!rows) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_commit: out of host memory");
  const zs_status rc =
      zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, mine, (size_t)n, rows);
  if (rc != ZS_OK) {
    free(rows);
    return zs_err_wrap(rc, "zs_engine_commit: agreeing on the configuration");
  }
  for (int q = 0; q < e->all_size; q++)
    for (int i = 0; i < n; i++) {
      const uint64_t theirs = rows[(size_t)q * n + i];
      if (theirs == mine[i]) continue;
      free(rows);
      const int model = strchr(w[i].name, '(') != NULL; /* a word of the model, not cfg's */
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_engine_commit: the ranks disagree on %s%s (this rank %d: %#llx, rank %d: "
                    "%#llx; %s): every rank must %s; nothing was allocated",
                    model ? "the " : "zs_config.", w[i].name, e->all_rank,
                    (unsigned long long)mine[i], q, (unsigned long long)theirs,
                    model ? "hashes"
                          : "integers, floats by their bits, after the environment "
                            "variables",
                    model ? "build the same model (the same calls with the same arguments)"
                          : "resolve the same configuration (the same program and the same "
                            "ZS_* environment)");
    }
  free(rows);
  return ZS_OK;
}

void zs_engine_goodbye(zs_engine *e) {
  if (!e->all || e->all_size == 1) return;
  zs_engine_call(e, ZS_CALL_DESTROY, NULL);
  const int reason = e->state != ZS_ENGINE_FAILED ? 0
                     : e->aborted                 ? ZS_GOODBYE_ABORTED
                                                  : ZS_GOODBYE_FAILED;
  zs_coll *gs[5] = {e->world, e->shard != e->world ? e->shard : NULL, e->replica, e->tp,
                    e->all != e->world ? e->all : NULL};
  /* A peer that left or is elsewhere: tear down as failed. */
  if (zs_coll_goodbye(gs, 5, reason) != ZS_OK) zs_engine_abort_comms(e);
}
