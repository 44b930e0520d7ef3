/* The whole step of a unit (whole.h). */
#include "tier/whole.h"

#include <string.h>

#include "base/error.h"

/* Whether any tensor of u has a whole step (the plan's answer, the same on every rank). */
static int has_whole(const zs_unit *u) {
  for (int k = 0; k < u->ntensors; k++)
    if (u->whole_owner[k] >= 0) return 1;
  return 0;
}

/* The whole steps of the tensors this rank owns, in place in D; the others' zeroed. */
static zs_status run_owned(zs_tiers *t, zs_unit *u, float *D) {
  zs_shard_ctx *x = t->sh;
  size_t work_n = 0;
  for (int k = 0; k < u->ntensors; k++)
    if (u->whole_owner[k] == x->shard_rank) {
      const int64_t rows = u->t[k].shape[0], cols = (int64_t)u->lay.numel[k] / rows;
      const size_t w = zs_optim_whole_work(t->optim, u->group[k], rows, cols);
      if (w > work_n) work_n = w;
    }
  float *work = NULL;
  if (work_n) ZS_CHECK(zs_sh_alloc(x, ZS_MEM_BUFFERS, work_n * sizeof *work, (void **)&work, NULL));
  for (int k = 0; k < u->ntensors; k++) {
    const int owner = u->whole_owner[k];
    float *d = D + u->lay.off[k];
    const size_t n = u->lay.numel[k];
    if (owner < 0) continue;
    if (owner != x->shard_rank) {
      memset(d, 0, n * sizeof *d);
      continue;
    }
    const int64_t rows = u->t[k].shape[0], cols = (int64_t)n / rows;
    zs_optim_whole(t->optim, u->group[k], !u->t[k].no_weight_decay, d, rows, cols, work);
    for (size_t i = 0; i < n; i++)
      d[i] += 0.0f; /* -0 -> +0: the sum below then gives d exactly */
  }
  if (work) zs_sh_free(x, ZS_MEM_BUFFERS, work, work_n * sizeof *work, NULL);
  return ZS_OK;
}

zs_status zs_tier_whole_begin(zs_tiers *t, zs_unit *u) {
  u->whole_dir = NULL;
  if (!has_whole(u)) return ZS_OK;
  zs_shard_ctx *x = t->sh;
  if (x->dev->kind != ZS_DEVICE_CPU)
    return zs_err(ZS_ERR_UNSUPPORTED, "whole-tensor optimizers run on the CPU device only");
  const size_t P = u->lay.padded, sh = u->lay.shard;
  const int sharded = u->opt_n != P; /* the optimizer range is this rank's shard */
  if (sharded && (u->opt_off != u->lay.shard_off || u->opt_n != sh))
    return zs_err(ZS_ERR_INVALID_ARG, "unit '%s': its optimizer range is not its shard", u->name);
  float *D = NULL;
  ZS_CHECK(zs_sh_alloc(x, ZS_MEM_BUFFERS, P * sizeof *D, (void **)&D, NULL));
  memset(D, 0, P * sizeof *D);
  u->whole_dir = D; /* zs_tier_whole_end frees it whatever happens next */
  for (int k = 0; k < u->ntensors; k++) {
    size_t a, b;
    if (u->whole_owner[k] < 0 ||
        !zs_layout_overlap(&u->lay, k, u->opt_off, u->opt_off + u->opt_n, &a, &b))
      continue;
    const zs_optim_seg seg = zs_tier_mem_seg(u, k, a, b);
    zs_optim_direction(t->optim, &seg, D + a);
  }
  if (x->shard_size == 1) return run_owned(t, u, D);
  zs_status rc = ZS_OK;
  if (sharded) rc = zs_coll_all_gather(x->shard, D + u->lay.shard_off, D, sh, ZS_CDT_F32, NULL);
  if (rc == ZS_OK) rc = run_owned(t, u, D);
  if (rc == ZS_OK)
    rc = sharded ? zs_coll_reduce_scatter(x->shard, D, D + u->lay.shard_off, sh, ZS_CDT_F32, NULL)
                 : zs_coll_all_reduce(x->shard, D, D, P, ZS_CDT_F32, NULL);
  if (rc != ZS_OK) return zs_err_wrap(rc, "the whole-tensor step of unit '%s'", u->name);
  return ZS_OK;
}

void zs_tier_whole_end(zs_tiers *t, zs_unit *u, zs_status rc) {
  if (!u->whole_dir) return;
  zs_sh_free_after(t->sh, rc, ZS_MEM_BUFFERS, u->whole_dir, u->lay.padded * sizeof(float), NULL);
  u->whole_dir = NULL;
}
