/* The units a plan is computed for and its transient-buffer bound (plan_units.h). */
#include "shard/plan_units.h"

#include <stdint.h>

#include "device/ops.h" /* zs_dtype_size, ZS_SQ_NWORDS */
#include "shard/shard.h"

size_t zs_plan_unit_numel(const zs_plan_units *u, int i) {
  if (u->units) return u->units[i]->lay.numel_total;
  return u->numel[i] > 0 ? (size_t)u->numel[i] : 0;
}

size_t zs_plan_unit_whole(const zs_plan *p, const zs_plan_units *u, int i) {
  if (u->units) return u->units[i]->whole_floats;
  const size_t n = zs_plan_unit_numel(u, i);
  return u->whole ? u->whole(u->whole_arg, i, n, zs_plan_padded(p, n)) : 0;
}

int zs_plan_unit_frozen(const zs_plan_units *u, int i) {
  if (u->units) return u->units[i]->frozen;
  return u->frozen && u->frozen[i];
}

int zs_plan_unit_nstate(const zs_plan_units *u, int i) {
  if (u->units) return u->units[i]->nstate;
  return u->nstate ? u->nstate[i] : ZS_OPT_MAX_STATE;
}

void zs_plan_unit_pack(const zs_plan *p, const zs_plan_units *u, int i, zs_state_table *t) {
  zs_pack_unit pu;
  if (u->units) { /* sized by the tp slice that keeps the most (shard.h: part_most) */
    pu = zs_unit_pack_of(u->units[i]);
    pu.part = u->units[i]->part_most;
  } else if (u->tensors)
    pu = u->tensors[i];
  else
    return;
  const int ns = zs_plan_unit_nstate(u, i);
  const size_t P = zs_plan_padded(p, zs_plan_unit_numel(u, i));
  for (int j = 0; j < ZS_OPT_MAX_STATE; j++) {
    zs_state_entry *s = &t->s[ZS_ST_OPT(j)];
    if (s->life == ZS_LIFE_PERSISTENT && zs_pack_on(&pu, j, ns))
      zs_state_table_pack(t, ZS_ST_OPT(j), zs_pack_elems(&pu, j, P, p->nshards, s->sharded));
  }
}

size_t zs_plan_buffers(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u) {
  size_t max_full = 0, max_grad = 0, scratch = 0;
  for (int i = 0; i < u->n; i++) {
    const size_t P = zs_plan_padded(p, zs_plan_unit_numel(u, i));
    if (P > max_full) max_full = P;
    if (zs_plan_unit_frozen(u, i)) continue; /* params only: no gradient, no reduction */
    const size_t r = zs_plan_reduce_scratch(p, c, world, P);
    if (P > max_grad) max_grad = P;
    if (r > scratch) scratch = r;
  }
  const size_t ps = zs_dtype_size(c->param_dtype);
  size_t gathered = 0;
  if (zs_state_is(&p->table, ZS_ST_PARAM_FULL, ZS_LIFE_TRANSIENT)) {
    const size_t held = c->held_units > 0 ? (size_t)c->held_units : 2;
    gathered =
        zs_plan_add_mul(0, zs_plan_add_mul(0, held + (size_t)c->prefetch_units, max_full), ps);
    if (c->max_live_bytes && c->max_live_bytes < gathered) gathered = c->max_live_bytes;
  }
  /* A sharded gradient's full buffer, and the deterministic staging buffer of a full one, live
     through its reduction (with its scratch); never both. */
  const size_t grad = zs_plan_add_mul(0, max_grad, ps);
  const int grad_buf = zs_state_is(&p->table, ZS_ST_GRAD_FULL, ZS_LIFE_TRANSIENT) ||
                       zs_state_is(&p->table, ZS_ST_GRAD_STAGE, ZS_LIFE_TRANSIENT);
  const size_t grad_red = grad_buf ? zs_plan_add_mul(grad, scratch, 1) : scratch;
  size_t b = zs_plan_add_mul(gathered, grad_red, 1);
  /* The step's whole-tensor buffers (tier/whole.h), one unit at a time, after the gathers and
     the reductions are freed: the larger of the two phases. */
  for (int i = 0; i < u->n; i++) {
    const size_t w = zs_plan_unit_frozen(u, i) ? 0 : zs_plan_unit_whole(p, u, i);
    if (w * sizeof(float) > b) b = w * sizeof(float);
  }
  b = zs_plan_add_mul(b, ZS_SQ_NWORDS, sizeof(uint64_t)); /* gradient-norm bins (step.c) */
  const zs_state_table *t = &p->table;
  const int param_host = t->s[zs_state_home(t, ZS_ST_PARAM_FULL)].tier == ZS_TIER_HOST;
  if (param_host && t->s[ZS_ST_MASTER].tier == ZS_TIER_DEVICE && c->device == ZS_DEVICE_CUDA)
    b = zs_plan_add_mul(b, max_grad / (size_t)p->nshards, ps); /* optim.c: dev_update_host_params */
  return b;
}
