/* Public per-unit calls of a step: gather, param/grad pointers, release, grads_ready. They check
 * the call order and hand the work to src/shard. */
#include "engine/engine_internal.h"
#include "engine/fail.h"
#include "base/error.h"

/* Common checks: non-NULL unit of a committed, healthy engine. */
static zs_status check_unit(const zs_unit *u, const char *fn) {
  if (!u) return zs_err(ZS_ERR_INVALID_ARG, "%s: unit is NULL", fn);
  const zs_engine *e = u->e;
  if (e->state == ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "%s('%s') before zs_engine_commit: commit the engine first", fn,
                  u->name);
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE,
                  "%s('%s'): the engine failed earlier (a collective timed out or "
                  "failed); destroy it and restart from a checkpoint",
                  fn, u->name);
  return ZS_OK;
}

zs_status zs_unit_gather(zs_unit *u) {
  ZS_CHECK(check_unit(u, "zs_unit_gather"));
  if (u->held) return ZS_OK; /* already gathered (e.g. kept from its forward): a no-op */
  zs_engine_call(u->e, ZS_CALL_GATHER, u);
  ZS_CHECK(zs_shard_gather_user(u));
  u->held = 1;
  return ZS_OK;
}

int zs_unit_is_gathered(const zs_unit *u) {
  if (!u || u->e->state == ZS_ENGINE_BUILDING) return 0;
  return zs_state_is(&u->st, ZS_ST_PARAM_FULL, ZS_LIFE_PERSISTENT) ? 1 : u->gathered;
}

void *zs_unit_param(zs_unit *u, int t) {
  if (check_unit(u, "zs_unit_param") != ZS_OK) return NULL;
  if (t < 0 || t >= u->ntensors) {
    zs_err(ZS_ERR_INVALID_ARG, "zs_unit_param('%s', %d): tensor index out of range 0..%d", u->name,
           t, u->ntensors - 1);
    return NULL;
  }
  if (!u->held) {
    zs_err(ZS_ERR_STATE, "zs_unit_param('%s'): call zs_unit_gather first", u->name);
    return NULL;
  }
  return zs_ptr_add(u->param_full, u->lay.off[t], u->e->cfg.param_dtype);
}

void *zs_unit_grad(zs_unit *u, int t) {
  if (check_unit(u, "zs_unit_grad") != ZS_OK) return NULL;
  zs_engine *e = u->e;
  if (t < 0 || t >= u->ntensors) {
    zs_err(ZS_ERR_INVALID_ARG, "zs_unit_grad('%s', %d): tensor index out of range 0..%d", u->name,
           t, u->ntensors - 1);
    return NULL;
  }
  if (u->frozen) {
    zs_err(ZS_ERR_INVALID_ARG,
           "zs_unit_grad('%s', %d): the unit is frozen (zs_unit_freeze): it has no gradient; "
           "compute only the input gradients of its backward",
           u->name, t);
    return NULL;
  }
  if (e->state != ZS_ENGINE_IN_STEP) {
    zs_err(ZS_ERR_STATE, "zs_unit_grad('%s') outside a step: call zs_engine_begin_step first",
           u->name);
    return NULL;
  }
  if (u->grads_ready_count >= e->micro_steps) {
    zs_err(ZS_ERR_STATE, "zs_unit_grad('%s'): all %d micro-steps of this unit are reduced already",
           u->name, e->micro_steps);
    return NULL;
  }
  if (u->no_grad) {
    zs_err(ZS_ERR_STATE, "zs_unit_grad('%s'): zs_unit_no_grad said it gets no gradient this step",
           u->name);
    return NULL;
  }
  if (zs_state_is(&u->st, ZS_ST_GRAD_STAGE, ZS_LIFE_TRANSIENT)) {
    /* A full gradient spans the micro-steps: hand out this micro-step's own zeroed buffer, which
       its reduction folds in (global micro-batch order). */
    if (zs_shard_grad_stage(u) != ZS_OK) return NULL;
    return zs_ptr_add(u->grad_stage, u->lay.off[t], u->st.s[ZS_ST_GRAD_STAGE].dtype);
  }
  if (zs_state_is(&u->st, ZS_ST_GRAD_FULL, ZS_LIFE_TRANSIENT) && zs_shard_grad_buffer(u) != ZS_OK)
    return NULL;
  return zs_ptr_add(u->grad_full, u->lay.off[t], u->st.s[ZS_ST_GRAD_FULL].dtype);
}

zs_status zs_unit_release(zs_unit *u) {
  ZS_CHECK(check_unit(u, "zs_unit_release"));
  if (!u->held)
    return zs_err(ZS_ERR_STATE, "zs_unit_release('%s') without a matching zs_unit_gather", u->name);
  zs_shard_release_user(u);
  return ZS_OK;
}

/* Checks for the calls that reduce u's gradient: inside a step, before its last grads_ready. */
static zs_status check_reducible(const zs_unit *u, const char *fn) {
  ZS_CHECK(check_unit(u, fn));
  const zs_engine *e = u->e;
  if (e->state != ZS_ENGINE_IN_STEP)
    return zs_err(ZS_ERR_STATE, "%s('%s') outside a step: call zs_engine_begin_step first", fn,
                  u->name);
  if (u->grads_ready_count >= e->micro_steps)
    return zs_err(ZS_ERR_STATE,
                  "%s('%s'): zs_unit_grads_ready was already called micro_steps (%d) times in "
                  "this step",
                  fn, u->name, e->micro_steps);
  return ZS_OK;
}

zs_status zs_unit_no_grad(zs_unit *u) {
  ZS_CHECK(check_reducible(u, "zs_unit_no_grad"));
  if (u->no_grad) return ZS_OK; /* said already */
  if (u->grads_ready_count > 0)
    return zs_err(ZS_ERR_STATE,
                  "zs_unit_no_grad('%s') after %d zs_unit_grads_ready calls in this step: declare "
                  "it before the unit's first one",
                  u->name, u->grads_ready_count);
  if (u->frozen) return ZS_OK; /* never has a gradient */
  zs_shard_grad_drop(u);       /* a zs_unit_grad buffer handed out already is not reduced */
  u->no_grad = 1;
  return ZS_OK;
}

zs_status zs_unit_grads_ready(zs_unit *u) {
  ZS_CHECK(check_reducible(u, "zs_unit_grads_ready"));
  zs_engine *e = u->e;
  if (u->frozen || u->no_grad) return ZS_OK; /* nothing to reduce; local, counted by no one */
  zs_engine_call(e, ZS_CALL_GRADS_READY, u);
  zs_status rc = zs_shard_reduce(u, u->grads_ready_count + 1 == e->micro_steps);
  /* A reduction that failed half-way (the collective ran on some ranks, the shard is partly
     accumulated) cannot be retried: the engine is failed. */
  if (rc != ZS_OK) return zs_engine_fail_hard(e, rc);
  u->grads_ready_count++;
  return ZS_OK;
}

zs_status zs_unit_grads_flush(zs_unit *u) {
  ZS_CHECK(check_reducible(u, "zs_unit_grads_flush"));
  zs_engine *e = u->e;
  zs_engine_call(e, ZS_CALL_GRADS_FLUSH, u);
  /* A full gradient is persistent anyway; deterministic mode keeps one reduction per
     micro-step (two would regroup the sums); no zs_unit_grad yet: nothing to reduce. */
  if (u->frozen || u->no_grad || !zs_state_is(&u->st, ZS_ST_GRAD_FULL, ZS_LIFE_TRANSIENT) ||
      e->cfg.deterministic || !u->grad_full)
    return ZS_OK;
  zs_status rc = zs_shard_reduce(u, 0);
  if (rc != ZS_OK) return zs_engine_fail_hard(e, rc);
  return ZS_OK;
}
