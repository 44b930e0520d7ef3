/* A step: begin (zero gradients), and the optimizer step: the reductions' end, the global
 * gradient norm, clipping and the optimizer on this rank's segments (the engine's zs_optim,
 * src/optim/optim.h, computes and chooses; this file hands it the units' pieces), publishing the
 * updated params. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/ckpt_save.h"
#include "engine/engine_internal.h"
#include "tier/nvme_tier.h"
#include "tier/whole.h"
#include "engine/fail.h"
#include "engine/agree.h"
#include "engine/facts.h"
#include "base/clock.h"
#include "base/error.h"
#include "optim/optim.h"

double zs_engine_io_seconds(const zs_engine *e) {
  return e->tiers.nvme ? e->tiers.nvme->step_wait : 0.0;
}

zs_status zs_engine_begin_step(zs_engine *e, int micro_steps) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_begin_step: engine is NULL");
  if (e->state == ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "zs_engine_begin_step before zs_engine_commit: commit first");
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "zs_engine_begin_step: the engine failed earlier; destroy it");
  if (e->state == ZS_ENGINE_IN_STEP)
    return zs_err(ZS_ERR_STATE, "zs_engine_begin_step called twice: finish the step with "
                                "zs_engine_step first");
  if (micro_steps < 1)
    return zs_err(ZS_ERR_INVALID_ARG, "micro_steps %d must be >= 1", micro_steps);
  if (zs_comm_launcher_gone(e->comm))
    return zs_engine_fail(e, zs_err(ZS_ERR_COMM,
                                    "zs_engine_begin_step: the launcher that started this rank "
                                    "(pid %d: mpirun or its daemon) has died, so the job is over: "
                                    "this rank stops instead of training on (destroy the engine "
                                    "and exit)",
                                    e->comm->launcher_pid));
  if (e->save_job) { /* an asynchronous save commits once every rank's writer is done */
    zs_engine_call(e, ZS_CALL_BEGIN_STEP, NULL);
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", zs_last_error());
    const zs_status rc = zs_ckpt_save_finish(e, 0, NULL);
    if (e->state == ZS_ENGINE_FAILED) return rc; /* the exchange failed: so has the engine */
    if (rc != ZS_OK) { /* the save's failure, for zs_engine_save_wait or the next save */
      e->save_rc = rc;
      snprintf(e->save_msg, sizeof e->save_msg, "%s", zs_last_error());
    }
    zs_err(ZS_OK, "%s", saved);
  }
  e->step_t0 = zs_clock_now_s();
  (void)zs_dev_timer_begin(&e->dev); /* CUDA; a step that cannot be timed goes on untimed */
  e->check_t0 = zs_engine_check_seconds(e);
  e->comm_t0 = zs_engine_comm_seconds(e);
  e->io_t0 = zs_engine_io_seconds(e);
  if (e->set_pending) zs_engine_set_clear_grads(e); /* an abandoned step's */
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    u->grads_ready_count = 0;
    u->grad_shard_valid = 0;
    u->no_grad = 0;
    u->fwd_micro = -1;
    if (zs_state_is(&u->st, ZS_ST_GRAD_FULL, ZS_LIFE_PERSISTENT))
      ZS_CHECK(zs_dev_zero(&e->dev, u->grad_full, zs_unit_state_bytes(u, ZS_ST_GRAD_FULL),
                           e->dev.compute_stream));
  }
  e->micro_steps = micro_steps;
  e->sh.in_step = 1;
  e->sh.last_gather = -1;
  e->state = ZS_ENGINE_IN_STEP;
  return ZS_OK;
}

/* This rank's reduced gradient of unit u at flat element a (inside its optimizer range): in its
   persistent gradient state, full or shard (the table's home). */
static const void *grad_at(zs_unit *u, size_t a) {
  return zs_unit_home_at(u, ZS_ST_GRAD_FULL, a);
}

/* The global gradient norm of the summed gradients (before the division by world * micro_steps,
   which `scale` applies) and the count of non-finite values (src/optim/optim.h). */
static zs_status grad_norm(zs_engine *e, double scale, zs_optim_norm *nm) {
  zs_dev *d = &e->dev;
  uint64_t *bins = NULL;
  zs_status rc = ZS_OK;
  ZS_CHECK(zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, ZS_OPTIM_NORM_BYTES, (void **)&bins,
                        d->compute_stream));
  ZS_CHECK_GOTO(zs_optim_norm_start(e->optim, bins), rc, out);
  for (int i = 0; i < e->nunits; i++) {
    zs_unit *u = e->units[i];
    if (u->frozen || u->no_grad) continue; /* no gradient: not in the norm */
    if (e->tp_size == 1) {
      ZS_CHECK_GOTO(zs_optim_norm_add(e->optim, bins, grad_at(u, u->opt_off), u->opt_n), rc, out);
      continue;
    }
    /* Tensor parallelism: each tp rank's slices of split tensors, the others once. */
    for (int t = 0; t < u->ntensors; t++) {
      size_t a, b;
      if (!zs_engine_tp_in_norm(e, u, t) ||
          !zs_layout_overlap(&u->lay, t, u->opt_off, u->opt_off + u->opt_n, &a, &b))
        continue;
      ZS_CHECK_GOTO(zs_optim_norm_add(e->optim, bins, grad_at(u, a), b - a), rc, out);
    }
  }
  rc = zs_optim_norm_finish(e->optim, bins, e->plan.norm_partial ? e->shard : NULL, e->tp, scale,
                            nm);
out:
  /* An abandoned all-reduce may still write the bins: zs_mem_free_after defers them then, and
     zs_engine_step marks the failure. */
  zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, bins, ZS_OPTIM_NORM_BYTES, d->compute_stream);
  return rc;
}

/* The optimizer over every trained unit, each through the tier that holds its state
   (tier/tier.h: in memory in place, on the NVMe tier streamed from its files); the optimizer picks
   its path. With the NVMe tier open (the same on every rank) the ranks then agree on the outcome,
   so that an I/O error on one fails every rank instead of leaving its peers waiting in the
   publish: collective over the world then. */
static zs_status run_optimizer(zs_engine *e, double gscale) {
  zs_config cfgs[ZS_MAX_PARAM_GROUPS]; /* each group's hyperparameters, this step's lr */
  for (int g = 0; g < e->ngroups; g++)
    zs_engine_group_config(e, g, &cfgs[g]);
  zs_status rc = ZS_OK;
  int64_t prepared = -1; /* the step the coefficients are of: each unit's own (zs_unit_no_grad) */
  for (int i = 0; i < e->nunits && rc == ZS_OK; i++) {
    zs_unit *u = e->units[i];
    if (u->frozen || u->no_grad) continue; /* its params and state stay as they are */
    const int64_t t = u->opt_steps + 1;
    if (t != prepared) {
      rc = zs_optim_prepare(e->optim, cfgs, e->ngroups, t, gscale);
      if (rc != ZS_OK) break;
      prepared = t;
    }
    rc = zs_tier_whole_begin(&e->tiers, u); /* Muon's orthogonalisation: collective */
    if (rc == ZS_OK) rc = zs_tier_of_unit(u)->update(&e->tiers, u);
    zs_tier_whole_end(&e->tiers, u, rc);
  }
  if (!e->tiers.nvme) return rc;
  const zs_agree_text say = {.what = "NVMe tier",
                             .phrase = "'s tier failed in the step's update (its error names the "
                                       "file and the offset); the engine failed on every rank: "
                                       "restart from the last checkpoint",
                             .theirs = ZS_ERR_IO};
  ZS_CHECK(zs_engine_agree(e, rc, NULL, &say)); /* a failed rank keeps its own failure */
  zs_engine_nvme_info(e);
  return ZS_OK;
}

static zs_status step_update(zs_engine *e, zs_step_stats *st);

zs_status zs_engine_sync_groups(zs_engine *e) {
  void *cs = e->dev.comm_stream;
  zs_status rc = zs_coll_sync(e->world, cs);
  if (rc == ZS_OK && e->shard != e->world) rc = zs_coll_sync(e->shard, cs);
  if (rc == ZS_OK && e->replica) rc = zs_coll_sync(e->replica, cs);
  return rc;
}

/* Ends a step refused before its update (sr, whose message is kept): its collectives are done,
   nothing was updated and its gradients are dropped (the next zs_engine_begin_step starts them
   afresh); the engine is between steps again, the step count unchanged. */
static zs_status abandon_step(zs_engine *e, zs_status sr) {
  const zs_status rc = zs_dev_sync(&e->dev, e->dev.compute_stream);
  if (rc != ZS_OK) return zs_engine_fail_hard(e, zs_err_wrap(rc, "zs_engine_step"));
  e->state = ZS_ENGINE_READY;
  return sr;
}

zs_status zs_engine_step(zs_engine *e, zs_step_stats *st) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_step: engine is NULL");
  if (e->state != ZS_ENGINE_IN_STEP)
    return zs_err(ZS_ERR_STATE, e->state == ZS_ENGINE_FAILED
                                    ? "zs_engine_step: the engine failed earlier; destroy it"
                                    : "zs_engine_step without zs_engine_begin_step");
  for (int i = 0; i < e->nunits; i++)
    if (!e->units[i]->frozen && !e->units[i]->no_grad &&
        e->units[i]->grads_ready_count != e->micro_steps)
      return zs_err(ZS_ERR_STATE,
                    "zs_engine_step: unit '%s' has %d of %d zs_unit_grads_ready calls; every unit "
                    "needs one per micro-step before the step (or zs_unit_no_grad)",
                    e->units[i]->name, e->units[i]->grads_ready_count, e->micro_steps);
  zs_dev *d = &e->dev;
  zs_engine_call(e, ZS_CALL_STEP, NULL);
  /* Every rank must have run the same step (micro_steps, grads_ready calls) before any update:
     else each would divide its gradient by its own count and all return OK. */
  zs_status sr = zs_engine_agree_step(e);
  /* ZS_ERR_INVALID_ARG, on every rank alike: the ranks set different values (calls.c). The step
     is abandoned below, once its collectives are done; any other failure is a divergence. */
  if (sr != ZS_OK && sr != ZS_ERR_INVALID_ARG) return zs_engine_fail_hard(e, sr);
  /* From here on a failure cannot be retried (reductions are consumed, updates half-applied):
     every error marks the engine failed. */
  /* The compute stream's wait for the reductions first (queued before the host waits for them:
     its GPU timing pair is the step's exposed reduction tail), then the host's wait. */
  zs_status rc = zs_dev_order(d, d->compute_stream, d->comm_stream);
  if (rc == ZS_OK) rc = zs_engine_sync_groups(e);
  if (rc != ZS_OK) return zs_engine_fail_hard(e, zs_err_wrap(rc, "zs_engine_step"));
  /* Gathered copies of sharded params would be stale after the update: all are freed (a later
     zs_unit_param needs a new gather). Full params are updated in place. */
  zs_shard_drop_all(&e->sh);
  e->sh.in_step = 0;
  if (sr != ZS_OK) return abandon_step(e, sr);
  rc = step_update(e, st);
  if (rc != ZS_OK) return zs_engine_fail_hard(e, rc);
  return ZS_OK;
}

/* Norm, clip, update, publish, statistics (the part of the step after the reductions). */
static zs_status step_update(zs_engine *e, zs_step_stats *st) {
  zs_dev *d = &e->dev;
  const double inv = 1.0 / ((double)e->world_size * (double)e->micro_steps);
  zs_optim_norm nm;
  ZS_CHECK(grad_norm(e, inv, &nm));
  zs_step_stats s = {0};
  s.grad_norm = nm.nonfinite ? NAN : (float)nm.norm;
  s.skipped_nonfinite = nm.nonfinite ? 1 : 0;
  if (!nm.nonfinite) {
    const double clip = zs_optim_clip_coef(nm.norm, e->cfg.optim.max_grad_norm);
    const double u0 = zs_clock_now_s();
    const double w0 =
        zs_engine_comm_seconds(e) + zs_engine_check_seconds(e) + zs_engine_io_seconds(e);
    ZS_CHECK(run_optimizer(e, inv * clip)); /* its own waits (Muon's exchange, the disk) are not */
    s.update_seconds =
        zs_clock_now_s() - u0 -
        (zs_engine_comm_seconds(e) + zs_engine_check_seconds(e) + zs_engine_io_seconds(e) - w0);
    ZS_CHECK(zs_shard_publish(&e->sh));
    ZS_CHECK(zs_coll_sync(e->shard, d->comm_stream));
    e->opt_steps++;
    for (int i = 0; i < e->nunits; i++)
      if (!e->units[i]->no_grad) e->units[i]->opt_steps++;
  }
  ZS_CHECK(zs_dev_sync(d, d->compute_stream));
  e->steps_done++;
  e->state = ZS_ENGINE_READY;
  s.step_seconds = zs_clock_now_s() - e->step_t0;
  s.check_seconds = zs_engine_check_seconds(e) - e->check_t0;
  s.comm_seconds = zs_engine_comm_seconds(e) - e->comm_t0;
  s.io_seconds = zs_engine_io_seconds(e) - e->io_t0;
  int missed = 0; /* after the compute stream's sync above: no wait added */
  zs_dev_timer_end(d, &s.gpu_comm_seconds, &s.gpu_exposed_seconds, &missed);
  s.gpu_missed = missed;
  s.struct_version = 5;
  if (st) *st = s;
  return ZS_OK;
}
