/* The plan (plan.h): the stage or the switches turned into buffer, reduction and publishing
   decisions. */
#include "plan.h"

#include <stdint.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "base/host_charge.h"
#include "device/ops.h" /* zs_dtype_size, ZS_SQ_NWORDS */

/* A switch: ZS_SHARD_YES / ZS_SHARD_NO, or ZS_SHARD_AS_STAGE (0). */
static int resolve(int sw, int from_stage) {
  return sw == ZS_SHARD_AS_STAGE ? from_stage : sw == ZS_SHARD_YES;
}

zs_status zs_plan_make(const zs_config *c, int shard_size, zs_plan *p) {
  memset(p, 0, sizeof *p);
  p->shard_params = resolve(c->shard_params, c->stage >= 3);
  p->shard_grads = resolve(c->shard_grads, c->stage >= 2);
  p->shard_optimizer = resolve(c->shard_optimizer, c->stage >= 1);
  p->offload_params = (c->offload & ZS_OFFLOAD_PARAMS) != 0;
  p->offload_optimizer = (c->offload & ZS_OFFLOAD_OPTIMIZER) != 0;
  if ((p->shard_grads || p->shard_params) && !p->shard_optimizer)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "sharded %s with unsharded optimizer state: the optimizer updates what a rank "
                  "owns, so shard the optimizer state too (shard_optimizer = ZS_SHARD_YES, or "
                  "stage >= 1)",
                  p->shard_grads ? "gradients" : "params");
  if (p->offload_params && !p->shard_params)
    return zs_err(
        ZS_ERR_INVALID_ARG,
        "ZS_OFFLOAD_PARAMS needs sharded params (stage 3 or shard_params = ZS_SHARD_YES): full "
        "params stay on every device, so there is nothing to offload; shard the params "
        "or drop the flag");
  if (p->offload_optimizer && !p->shard_optimizer)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "ZS_OFFLOAD_OPTIMIZER needs sharded optimizer state (stage 1, 2 or 3, or "
                  "shard_optimizer = ZS_SHARD_YES): the optimizer runs on shards; shard it or drop "
                  "the flag");
  if (c->offload_budget_bytes && c->offload_budget_bytes != ZS_UNSET_SIZE) {
    if (c->offload)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "offload_budget_bytes with offload bits 0x%x: the budget decides what is "
                    "offloaded, unit by unit; set offload = 0, or offload_budget_bytes = 0 for "
                    "all-or-nothing offload",
                    c->offload);
    if (!p->shard_optimizer)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "offload_budget_bytes needs sharded optimizer state (stage 1, 2 or 3, or "
                    "shard_optimizer = ZS_SHARD_YES): offloaded optimizer state runs on shards");
  }
  p->nshards = p->shard_optimizer ? shard_size : 1;
  zs_state_table_make(&p->table, p->shard_params, p->shard_grads, p->shard_optimizer,
                      p->offload_params, p->offload_optimizer, c->deterministic != 0,
                      c->param_dtype, zs_grad_accum_dtype(c), c->master, c->moment_dtype,
                      zs_opt_shape_of(c)->nstate);
  p->reduce = !p->shard_optimizer ? ZS_REDUCE_ALL
              : p->shard_grads    ? ZS_REDUCE_TO_SHARD
                                  : ZS_REDUCE_OWN_SLOT;
  /* deterministic: the global order interleaves ranks within a micro-step, so every micro-step
     is folded in on its own (full gradients too) */
  p->reduce_every_micro =
      p->shard_grads || zs_state_is(&p->table, ZS_ST_GRAD_STAGE, ZS_LIFE_TRANSIENT);
  p->norm_partial = p->shard_optimizer && shard_size > 1;
  p->publish = !p->shard_params && p->shard_optimizer;
  return ZS_OK;
}

size_t zs_plan_padded(const zs_plan *p, size_t n) {
  const size_t S = (size_t)p->nshards;
  if (n > SIZE_MAX - S) return SIZE_MAX;
  const size_t r = (n + S - 1) / S * S;
  return r < S ? S : r;
}

/* a + b*c, saturating (plan.h). */
size_t zs_plan_add_mul(size_t a, size_t b, size_t c) {
  if (c && b > SIZE_MAX / c) return SIZE_MAX;
  return a > SIZE_MAX - b * c ? SIZE_MAX : a + b * c;
}

void zs_plan_unit_bytes(const zs_plan *p, size_t n, size_t add[ZS_MEM_NCAT]) {
  zs_plan_unit_bytes_of(p, &p->table, n, add);
}

void zs_plan_unit_bytes_of(const zs_plan *p, const zs_state_table *t, size_t n,
                           size_t add[ZS_MEM_NCAT]) {
  const size_t P = zs_plan_padded(p, n), s = P / (size_t)p->nshards;
  for (int k = 0; k < ZS_ST_N; k++) {
    if (!zs_state_is(t, (zs_state)k, ZS_LIFE_PERSISTENT)) continue;
    if (t->s[k].tier == ZS_TIER_NVME) continue; /* disk, not memory (zs_placement.disk_bytes) */
    const zs_mem_cat c = t->s[k].cat;
    const size_t b =
        zs_plan_add_mul(0, zs_state_elems(t, (zs_state)k, P, s), zs_dtype_size(t->s[k].dtype));
    if (!b) continue; /* a packed array of no elements: nothing allocated (tier_memory.c) */
    /* a host-tier array holds its whole pages (one region each: base/host_charge.h) */
    add[c] = zs_plan_add_mul(add[c], c == ZS_MEM_HOST_PINNED ? zs_host_charge(b) : b, 1);
  }
}

size_t zs_plan_piece_len(const zs_config *c, int shard_size, size_t s, size_t nblocks) {
  const size_t es = zs_dtype_size(c->reduce_dtype), S = (size_t)shard_size;
  size_t n = s;
  if (c->bucket_bytes) n = c->bucket_bytes / (es * nblocks);
  if (nblocks > S && n > s * S / nblocks) n = s * S / nblocks;
  if (n < 1) n = 1;
  return n < s ? n : s;
}

size_t zs_plan_reduce_scratch(const zs_plan *p, const zs_config *c, int world, size_t P) {
  const size_t rs = zs_dtype_size(c->reduce_dtype), W = (size_t)world;
  const size_t S = (size_t)p->nshards;
  const int det = c->deterministic != 0;
  size_t b = c->reduce_dtype != c->param_dtype ? zs_plan_add_mul(0, P, rs) : 0; /* conversion */
  if (p->reduce == ZS_REDUCE_ALL) {
    if (W <= 1 || !det) return b; /* an in-place all-reduce, or one rank's add */
    size_t piece = P;             /* fold_all_pieces: bucket over two buffers */
    if (c->bucket_bytes && c->bucket_bytes / (rs * 2) < piece) piece = c->bucket_bytes / (rs * 2);
    if (piece < 1) piece = 1;
    const size_t ps = zs_dtype_size(zs_grad_accum_dtype(c)), blocks = W * ((piece + W - 1) / W);
    /* ordered_fold_all: receive, send */
    return zs_plan_add_mul(b, blocks, rs + (ps > rs ? ps : rs));
  }
  const size_t s = P / S, nblocks = det ? W : S, n = zs_plan_piece_len(c, p->nshards, s, nblocks);
  const int pack = !(n == s && nblocks == S);
  if (pack) b = zs_plan_add_mul(b, zs_plan_add_mul(0, nblocks, n), rs);            /* send */
  if (det || pack) b = zs_plan_add_mul(b, zs_plan_add_mul(0, det ? W : 1, n), rs); /* receive */
  return b;
}
