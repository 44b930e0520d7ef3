/* Parameter groups (zshard.h): the hyperparameters each group replaces, the tensors' membership,
 * and what the step and the agreement at commit read of them. Group 0 is the configuration's and
 * is never stored: its values are the engine's config at the moment they are read (so
 * zs_engine_set_lr reaches it, and every other group through its lr_scale). */
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <xxhash.h>

#include "base/config.h"
#include "base/error.h"
#include "base/opt_shape.h"
#include "optim/optimizer.h"
#include "shard/tp_slice.h"
#include "engine/engine_internal.h"

zs_status zs_engine_group_default(const zs_engine *e, zs_param_group *g) {
  if (!e || !g) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_group_default: NULL engine or group");
  const zs_config *c = &e->cfg;
  *g = (zs_param_group){.struct_size = sizeof *g,
                        .lr_scale = 1.0f,
                        .weight_decay = c->optim.weight_decay,
                        .beta1 = c->optim.beta1,
                        .beta2 = c->optim.beta2,
                        .eps = c->optim.eps,
                        .momentum = c->sgd.momentum,
                        .optimizer = NULL};
  return ZS_OK;
}

void zs_engine_group_config(const zs_engine *e, int id, zs_config *out) {
  *out = e->cfg;
  if (id <= 0 || id >= e->ngroups) return;
  const zs_param_group *g = &e->groups[id];
  out->optim.lr = e->cfg.optim.lr * g->lr_scale;
  out->optim.weight_decay = g->weight_decay;
  out->optim.beta1 = g->beta1;
  out->optim.beta2 = g->beta2;
  out->optim.eps = g->eps;
  out->sgd.momentum = g->momentum;
  out->optimizer = e->group_opt[id];
}

zs_status zs_engine_group_check(const zs_config *cfg, const zs_config *c) {
  ZS_CHECK(zs_config_validate(c));
  /* The state arrays are the configuration's optimizer's, by name and dtype; a group's optimizer
     uses the first of them (OPTIMIZER.md §8). */
  if (zs_opt_shape_of(c)->nstate > zs_opt_shape_of(cfg)->nstate)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "optimizer '%s' (momentum %g) keeps %d state arrays where the configuration's "
                  "optimizer '%s' keeps %d (SGD keeps a momentum buffer only with momentum > 0): "
                  "a group's optimizer keeps at most the configuration's state; make the one with "
                  "the most state the configuration's",
                  zs_opt_name_of(c), (double)c->sgd.momentum, zs_opt_shape_of(c)->nstate,
                  zs_opt_name_of(cfg), zs_opt_shape_of(cfg)->nstate);
  /* The precision mode: a module runs it or says why not. */
  const zs_opt_mode mode = {c->master, c->moment_dtype};
  zs_opt_host_fn fn = NULL;
  return zs_optimizer_for(c)->host_fn(&mode, &fn);
}

/* The caller's group over the defaults: its first struct_size bytes (an older header's fields),
   the rest zs_engine_group_default's. */
static zs_status group_in(const zs_engine *e, const zs_param_group *user, zs_param_group *g) {
  const size_t n = user->struct_size, first = offsetof(zs_param_group, lr_scale) + sizeof(float);
  if (n < first || n > sizeof *g)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_add_group: the group's struct_size is %zu, which no zshard header "
                  "gives (this one's zs_param_group is %zu bytes): start from "
                  "zs_engine_group_default, then change fields",
                  n, sizeof *g);
  ZS_CHECK(zs_engine_group_default(e, g));
  memcpy(g, user, n);
  g->struct_size = sizeof *g;
  return ZS_OK;
}

zs_status zs_engine_add_group(zs_engine *e, const zs_param_group *user, int *id) {
  if (id) *id = -1;
  if (!e || !user || !id)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_add_group: NULL engine, group or id");
  if (e->state != ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "zs_engine_add_group after zs_engine_commit: add groups first");
  zs_param_group gv;
  ZS_CHECK(group_in(e, user, &gv));
  const zs_param_group *g = &gv;
  if (e->ngroups >= ZS_MAX_PARAM_GROUPS)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_add_group: at most %d groups (group 0 included)",
                  ZS_MAX_PARAM_GROUPS);
  if (!(g->lr_scale >= 0) || !isfinite(g->lr_scale))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_add_group: lr_scale %g must be finite and >= 0",
                  (double)g->lr_scale);
  /* Every field finite, even those the optimizer does not read: checkpoints record them all. */
  const float f[5] = {g->weight_decay, g->beta1, g->beta2, g->eps, g->momentum};
  for (int i = 0; i < 5; i++)
    if (!isfinite(f[i]))
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_engine_add_group: a value is not finite (weight_decay %g, betas %g %g, "
                    "eps %g, momentum %g): give every field a number, also those the optimizer "
                    "does not read",
                    (double)g->weight_decay, (double)g->beta1, (double)g->beta2, (double)g->eps,
                    (double)g->momentum);
  int opt = e->cfg.optimizer;
  if (g->optimizer && zs_optimizer_id(g->optimizer, &opt) != ZS_OK)
    return zs_err_wrap(ZS_ERR_INVALID_ARG, "zs_engine_add_group");
  /* The group's values are checked as the configuration's own (the same sentences). */
  const int n = e->ngroups;
  e->group_opt[n] = opt;
  e->groups[n] = (zs_param_group){.struct_size = sizeof *g,
                                  .lr_scale = g->lr_scale + 0.0f,
                                  .weight_decay = g->weight_decay + 0.0f,
                                  .beta1 = g->beta1 + 0.0f,
                                  .beta2 = g->beta2 + 0.0f,
                                  .eps = g->eps + 0.0f,
                                  .momentum = g->momentum + 0.0f,
                                  .optimizer = NULL};
  /* (+ 0.0f: -0 is 0, so the agreement's bits of equal groups are equal) */
  e->ngroups = n + 1;
  zs_config c;
  zs_engine_group_config(e, n, &c);
  const zs_status rc = zs_engine_group_check(&e->cfg, &c);
  if (rc != ZS_OK) {
    e->ngroups = n; /* refused: nothing added */
    return zs_err_wrap(rc, "zs_engine_add_group (group %d)", n);
  }
  *id = n;
  return ZS_OK;
}

zs_status zs_unit_set_group(zs_unit *u, int t, int id) {
  if (!u) return zs_err(ZS_ERR_INVALID_ARG, "zs_unit_set_group: unit is NULL");
  const zs_engine *e = u->e;
  if (e->state != ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "zs_unit_set_group('%s') after zs_engine_commit: set groups first",
                  u->name);
  if (t < -1 || t >= u->ntensors)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_unit_set_group: unit '%s' has no tensor %d (0..%d, or -1)", u->name, t,
                  u->ntensors - 1);
  if (id < 0 || id >= e->ngroups)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_unit_set_group: no group %d (0 and those zs_engine_add_group returned)", id);
  for (int k = 0; k < u->ntensors; k++)
    if (t < 0 || k == t) u->group[k] = id;
  zs_engine_unit_state(u);
  return ZS_OK;
}

void zs_engine_unit_state(zs_unit *u) {
  const zs_engine *e = u->e;
  u->nstate = 0;
  for (int k = 0; k < u->ntensors; k++) {
    zs_config gc;
    u->keeps[k] = zs_engine_tensor_nstate(u, k, &gc);
    u->part[k] = zs_engine_state_part(&gc, &u->t[k], u->tp[k], e->tp_size, e->tp_rank);
    u->part_most[k] = zs_engine_state_part(&gc, &u->t[k], u->tp[k], e->tp_size, 0);
    if (u->keeps[k] > u->nstate) u->nstate = u->keeps[k];
  }
}

size_t zs_engine_state_part(const zs_config *gc, const zs_tensor_desc *t, int layout, int T,
                            int q) {
  const zs_optimizer *m = zs_optimizer_for(gc);
  /* Only a whole-tensor module may keep a prefix: an elementwise update reads its state there. */
  int64_t rows, cols;
  zs_tp_whole_dims(t, layout, T, &rows, &cols);
  if (!m->state_elems || !m->whole || rows < 1) return SIZE_MAX;
  const size_t prefix = m->state_elems(rows, cols);
  if (!zs_tp_is_split(layout, T)) return prefix;
  zs_tp_whole_dims(t, ZS_TP_REPLICATED, 1, &rows, &cols); /* the slice's */
  return zs_tp_prefix_share(layout, rows, (size_t)(rows * cols), q, T, prefix);
}

int zs_engine_tensor_nstate(const zs_unit *u, int t, zs_config *gc) {
  zs_config own;
  if (!gc) gc = &own;
  zs_engine_group_config(u->e, u->group[t], gc);
  return zs_opt_shape_of(gc)->nstate;
}

uint64_t zs_engine_groups_hash(const zs_engine *e) {
  const int n = e->ngroups;
  uint64_t h = XXH64(&n, sizeof n, 0x67726f7570ull);
  for (int i = 1; i < e->ngroups; i++) { /* the floats by their bits, and the optimizer */
    const float f[6] = {e->groups[i].lr_scale, e->groups[i].weight_decay, e->groups[i].beta1,
                        e->groups[i].beta2,    e->groups[i].eps,          e->groups[i].momentum};
    h = XXH64(f, sizeof f, h);
    h = XXH64(&e->group_opt[i], sizeof e->group_opt[i], h);
  }
  for (int i = 0; i < e->nunits; i++)
    h = XXH64(e->units[i]->group, (size_t)e->units[i]->ntensors * sizeof(int), h);
  return h;
}

zs_status zs_engine_whole_tensor(const char *fn, const char *unit, const zs_tensor_desc *t,
                                 int layout, int T, const zs_config *c, int frozen, int *chans,
                                 size_t *work) {
  const zs_optimizer *m = zs_optimizer_for(c);
  if (!m->whole) return ZS_OK;
  if (t->ndim < 2 && !m->whole_vectors)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "%s: tensor '%s.%s' has %d dimension(s) but its group's "
                  "optimizer '%s' updates matrices: put it in a group on an elementwise "
                  "optimizer (the configuration's, as embeddings, norms and biases usually are)",
                  fn, unit, t->name, t->ndim, zs_opt_name_of(c));
  int64_t rows, cols;
  zs_tp_whole_dims(t, ZS_TP_REPLICATED, 1, &rows, &cols);
  const int64_t n = rows * cols; /* this rank's (slice's) elements */
  if (n == 0 || frozen) return ZS_OK;
  zs_tp_whole_dims(t, layout, T, &rows, &cols);
  const size_t w =
      m->work_floats(rows, cols) + zs_tp_join_floats(layout, T, (size_t)n, m->whole_in);
  if (w > *work) *work = w;
  if (m->whole_in > *chans) *chans = m->whole_in;
  return ZS_OK;
}

/* Tensors whose group's optimizer needs them whole (Muon, Adafactor) get their whole step from one
   rank of the shard group where the optimizer state is sharded (every rank computes its own where
   it is not): per unit (each unit's whole step waits for its slowest rank), greedily in tensor
   order, the rank with the least load in this unit so far, ties to the least load over the
   model, then the lowest rank; a tensor's load is rows * cols * min(rows, cols) (Muon's GEMMs).
   A tensor split over the tp group is computed by one rank of its owner's tp group, chosen the
   same way among the pairs (owner, tp rank), ties to the tp rank with the least load in this unit
   whatever the owner (unsharded state: every tp group computes every tensor). A function of the
   layout and the groups only, so every rank makes the same plan; which rank it is never changes the
   bits (tier/whole.h). */
zs_status zs_engine_whole_plan(zs_engine *e) {
  double total[ZS_WHOLE_MAX_RANKS] = {0}, unit[ZS_WHOLE_MAX_RANKS];
  const int S = e->shard_size < ZS_WHOLE_MAX_RANKS ? e->shard_size : ZS_WHOLE_MAX_RANKS;
  const int T = e->tp_size;
  /* Per (shard rank r, tp rank q) at [r * T + q]: the split tensors' load in this unit, then over
     the model; per tp rank, this unit's whatever the owner (where the state is not sharded every
     tp group computes every tensor). */
  double *pair = calloc(2 * (size_t)S * (size_t)T + (size_t)T, sizeof *pair),
         *pair_total = pair + S * T, *tp_unit = pair_total + S * T;
  if (!pair) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_commit: out of host memory");
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    size_t work = 0;
    int chans = 0;
    u->whole_floats = 0;
    for (int r = 0; r < S; r++)
      unit[r] = 0;
    for (int r = 0; r < S * T; r++)
      pair[r] = 0;
    for (int q = 0; q < T; q++)
      tp_unit[q] = 0;
    for (int k = 0; k < u->ntensors; k++) {
      zs_config c;
      zs_engine_group_config(e, u->group[k], &c);
      u->whole_owner[k] = u->whole_tp[k] = -1;
      const zs_optimizer *m = zs_optimizer_for(&c);
      if (!m->whole) continue;
      const zs_tensor_desc *t = &u->t[k];
      const zs_status rc = zs_engine_whole_tensor("zs_engine_commit", u->name, t, u->tp[k],
                                                  e->tp_size, &c, u->frozen, &chans, &work);
      if (rc != ZS_OK) {
        free(pair);
        return rc;
      }
      int64_t rows, cols;
      zs_tp_whole_dims(t, u->tp[k], e->tp_size, &rows, &cols);
      if (rows == 0 || u->frozen) continue;
      const double dr = (double)rows, dc = (double)cols, cost = dr * dc * fmin(dr, dc);
      int best = 0;
      for (int r = 1; r < S; r++)
        if (unit[r] < unit[best] || (unit[r] == unit[best] && total[r] < total[best])) best = r;
      unit[best] += cost;
      total[best] += cost;
      u->whole_owner[k] = best;
      if (!zs_tp_is_split(u->tp[k], T)) continue;
      double *pu = pair + best * T, *pt = pair_total + best * T;
      int q = 0;
      for (int j = 1; j < T; j++)
        if (pu[j] < pu[q] || (pu[j] == pu[q] && (tp_unit[j] < tp_unit[q] ||
                                                 (tp_unit[j] == tp_unit[q] && pt[j] < pt[q]))))
          q = j;
      pu[q] += cost;
      pt[q] += cost;
      tp_unit[q] += cost;
      u->whole_tp[k] = q;
    }
    u->whole_floats =
        zs_engine_whole_floats(chans, work, zs_plan_padded(&e->plan, u->lay.numel_total));
  }
  free(pair);
  return ZS_OK;
}
