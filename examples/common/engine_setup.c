/* The engine, the kernels and the host batch of a training example, from the shared options
 * (see train_run.h). */
#include <stdlib.h>

#include "muon_rule.h"
#include "train_run.h"
#include "util.h"

/* --optimizer muon: the usual grouping (muon_rule.h), the group at --muon-lr (its lr_scale
   against --lr, so the schedule moves both). */
static int muon_groups(ex_run *r) {
  const ex_train_args *a = &r->a;
  zs_param_group g;
  int id = -1;
  ZS_TRY(zs_engine_group_default(r->eng, &g));
  g.optimizer = "muon";
  g.lr_scale = a->muon_lr / a->lr;
  ZS_TRY(zs_engine_add_group(r->eng, &g, &id));
  const int n = zs_engine_num_units(r->eng);
  for (int i = 0; i < n; i++) {
    zs_unit *u = zs_engine_unit(r->eng, i);
    zs_tensor_desc d;
    for (int t = 0; zs_unit_tensor(u, t, &d) == ZS_OK; t++)
      if (ex_muon_takes(i, n, &d)) ZS_TRY(zs_unit_set_group(u, t, id));
  }
  return 0;
}

int ex_engine_build(ex_run *r, int held_units, int (*add_units)(void *ctx)) {
  const ex_train_args *a = &r->a;
  zs_config zc;
  zs_config_default(&zc);
  zc.stage = a->stage;
  zc.tp_size = a->tp > 1 ? a->tp : 1;
  zc.device = a->device;
  zc.param_dtype = a->dtype;
  zc.reduce_dtype = a->reduce_dtype;
  zc.grad_accum_fp32 = a->grad_accum_fp32 && a->dtype == ZS_BF16; /* fp32 params: fp32 already */
  zc.offload = a->offload;
  zc.deterministic = a->deterministic;
  zc.master = a->master;
  zc.moment_dtype = a->moment_dtype;
  zc.offload_budget_bytes = a->offload_budget;
  if (a->nvme_path) zc.nvme_path = a->nvme_path;                       /* else ZS_NVME_PATH */
  if (a->flight_dir) zc.flight_dir = a->flight_dir;                    /* else ZS_FLIGHT_DIR */
  if (a->ckpt_async) zc.ckpt_async = 1;                                /* else ZS_CKPT_ASYNC */
  if (a->ckpt_write_rate_set) zc.ckpt_write_rate = a->ckpt_write_rate; /* else the variable */
  if (a->offload_host_set) zc.offload_host_bytes = a->offload_host_bytes;
  if (a->prefetch >= 0) zc.prefetch_units = a->prefetch;
  zc.held_units = held_units;
  int muon = -1;
  zs_optimizer_id("muon", &muon);
  zc.optimizer = a->optimizer == muon ? ZS_OPT_ADAMW : a->optimizer; /* muon: a group of it */
  zc.sgd.momentum = a->momentum;
  zc.optim.lr = a->lr;
  zc.optim.beta1 = a->beta1;
  zc.optim.beta2 = a->beta2;
  zc.optim.eps = a->eps;
  zc.optim.weight_decay = a->weight_decay;
  zc.optim.max_grad_norm = a->grad_clip;
  ZS_TRY(zs_engine_create(&zc, r->comm, &r->eng));
  ZS_TRY(zs_engine_mesh(r->eng, ZS_MESH_DP, &r->dp_rank, &r->dp_world));
  TRY(add_units(r->ctx));
  if (a->optimizer == muon) TRY(muon_groups(r));
  ZS_TRY(zs_engine_commit(r->eng));
  return 0;
}

int ex_kernels_open(ex_run *r, gpt2_dev *dev) {
  const ex_train_args *a = &r->a;
  const zs_dtype cdt = a->device == ZS_DEVICE_CPU ? ZS_F32 : a->dtype;
  void *stream = zs_engine_stream(r->eng);
  ZS_TRY(zs_k_create(a->device, cdt, stream, &r->k));
  /* Loss copies and syncs wait behind the engine's collectives: bound them by its timeout. */
  ZS_TRY(zs_k_watch(r->k, r->eng));
  *dev = (gpt2_dev){r->k, cdt, cdt == ZS_BF16 ? 2 : 4};
  return 0;
}

int ex_host_batch_alloc(ex_run *r) {
  size_t n = (size_t)r->a.batch * r->a.seq;
  r->tok = malloc(n * sizeof(int));
  r->tgt = malloc(n * sizeof(int));
  return r->tok && r->tgt ? 0 : gpt2_fail("out of host memory for batches");
}
