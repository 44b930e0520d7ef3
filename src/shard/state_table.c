/* The state table (state_table.h): the switches turned into one entry per state. */
#include "shard/state_table.h"

#include "base/master_mode.h"
#include "device/device.h"

/* An entry on the device, or in the host arena (booked host_pinned) when host is set. */
static zs_state_entry entry(zs_life life, int sharded, zs_dtype dt, zs_mem_cat cat, int host) {
  zs_state_entry e = {.life = life,
                      .tier = host ? ZS_TIER_HOST : ZS_TIER_DEVICE,
                      .dtype = dt,
                      .sharded = sharded,
                      .cat = host ? ZS_MEM_HOST_PINNED : cat};
  return e;
}

void zs_state_table_make(zs_state_table *t, int shard_params, int shard_grads, int shard_optimizer,
                         int offload_params, int offload_optimizer, int deterministic, zs_dtype pdt,
                         zs_dtype gdt, int master, zs_dtype moment_dt, int nstate) {
  const zs_life P = ZS_LIFE_PERSISTENT, T = ZS_LIFE_TRANSIENT, N = ZS_LIFE_NONE;
  /* Params: full and persistent, or a persistent shard and a full copy while gathered. */
  t->s[ZS_ST_PARAM_FULL] =
      entry(shard_params ? T : P, 0, pdt, shard_params ? ZS_MEM_BUFFERS : ZS_MEM_PARAMS, 0);
  t->s[ZS_ST_PARAM_SHARD] = entry(shard_params ? P : N, 1, pdt, ZS_MEM_PARAMS, offload_params);
  /* Gradients: full and persistent (the accumulator, gdt), or a persistent shard (gdt) and a full
     buffer the backward writes (pdt) until reduced. */
  t->s[ZS_ST_GRAD_FULL] = entry(shard_grads ? T : P, 0, shard_grads ? pdt : gdt,
                                shard_grads ? ZS_MEM_BUFFERS : ZS_MEM_GRADS, 0);
  t->s[ZS_ST_GRAD_SHARD] = entry(shard_grads ? P : N, 1, gdt, ZS_MEM_GRADS, 0);
  /* Full gradients accumulated per micro-step (deterministic, or in another dtype than the
     backward's): one staging buffer per micro-step, folded in by its reduction. */
  const int staged = (deterministic || gdt != pdt) && !shard_grads;
  t->s[ZS_ST_GRAD_STAGE] = entry(staged ? T : N, 0, pdt, ZS_MEM_BUFFERS, 0);
  /* Optimizer state: over the unit or this rank's shard, on the device or the host arena. */
  t->s[ZS_ST_MASTER] = entry(P, shard_optimizer, ZS_F32, ZS_MEM_OPTIMIZER, offload_optimizer);
  for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
    t->s[ZS_ST_OPT(i)] =
        entry(i < nstate ? P : N, shard_optimizer, moment_dt, ZS_MEM_OPTIMIZER, offload_optimizer);
  /* The remainder master: the bf16 params plus a 16-bit remainder, placed as the master was;
     no fp32 master then. */
  const zs_master_mode *mm = zs_master_mode_of(master);
  t->s[ZS_ST_MASTER_REM] =
      entry(mm->remainder ? P : N, shard_optimizer, ZS_BF16, ZS_MEM_OPTIMIZER, offload_optimizer);
  if (mm->remainder) t->s[ZS_ST_MASTER].life = N;
  /* The params are the master (fp32 params, or lean's bf16 params): placed by the tiers. */
  t->master_params = mm->params_master;
  t->master_lean = mm->lean;
  zs_state_table_place_master(t);
}

void zs_state_table_keep_state(zs_state_table *t, int n) {
  for (int i = n < 0 ? 0 : n; i < ZS_OPT_MAX_STATE; i++)
    t->s[ZS_ST_OPT(i)].life = ZS_LIFE_NONE;
}

void zs_state_table_pack(zs_state_table *t, zs_state s, size_t elems) {
  t->s[s].packed = 1;
  t->s[s].packed_elems = elems;
}

void zs_state_table_unpack(zs_state_table *t) {
  for (int k = 0; k < ZS_ST_N; k++) {
    t->s[k].packed = 0;
    t->s[k].packed_elems = 0;
  }
}

void zs_state_table_place_master(zs_state_table *t) {
  if (!t->master_params) return;
  if (t->master_lean) { /* the bf16 params are the master on any tier: never an fp32 copy */
    t->s[ZS_ST_MASTER].life = ZS_LIFE_NONE;
    return;
  }
  const zs_tier params = t->s[zs_state_home(t, ZS_ST_PARAM_FULL)].tier;
  /* The fp32 params are the master where they live with the optimizer state: no copy. */
  t->s[ZS_ST_MASTER].life = params == t->s[ZS_ST_MASTER].tier ? ZS_LIFE_NONE : ZS_LIFE_PERSISTENT;
}

zs_state zs_state_home(const zs_state_table *t, zs_state full) {
  const zs_state f = full == ZS_ST_PARAM_SHARD  ? ZS_ST_PARAM_FULL
                     : full == ZS_ST_GRAD_SHARD ? ZS_ST_GRAD_FULL
                                                : full;
  return t->s[f].life == ZS_LIFE_PERSISTENT ? f : (zs_state)(f + 1);
}

void zs_state_range(const zs_state_table *t, zs_state s, const zs_layout *l, size_t *off,
                    size_t *n) {
  *off = t->s[s].sharded ? l->shard_off : 0;
  *n = t->s[s].sharded ? l->shard : l->padded;
}

size_t zs_state_elems(const zs_state_table *t, zs_state s, size_t P, size_t sh) {
  if (t->s[s].packed) return t->s[s].packed_elems;
  return t->s[s].sharded ? sh : P;
}

size_t zs_state_bytes(const zs_state_table *t, zs_state s, size_t P, size_t sh) {
  return zs_state_elems(t, s, P, sh) * zs_dtype_size(t->s[s].dtype);
}
