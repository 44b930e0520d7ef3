/* The engine's facts (zs_engine_facts_get, zs_config_origin, zs_unit_placed) and the parts of
 * zs_engine_info written from them: the facts are filled first, the text printed from them. */
#include "engine/facts.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/check.h"
#include "base/config.h"
#include "base/master_mode.h"
#include "base/error.h"
#include "tier/nvme_tier.h"

/* printf-appends to zs_engine_info; returns vsnprintf's count (<= 0: nothing more fits). */
ZS_PRINTF(2, 3) static int info_add(zs_engine *e, const char *fmt, ...);
static int info_add(zs_engine *e, const char *fmt, ...) {
  const size_t n = strlen(e->info);
  if (n + 1 >= sizeof e->info) return 0;
  va_list ap;
  va_start(ap, fmt);
  const int w = vsnprintf(e->info + n, sizeof e->info - n, fmt, ap);
  va_end(ap);
  return w;
}

void zs_engine_facts_create(zs_engine *e, const char *sources) {
  zs_engine_facts *f = &e->facts;
  const zs_config *cfg = &e->cfg;
  memset(f, 0, sizeof *f);
  f->struct_size = sizeof *f;
  f->struct_version = ZS_ENGINE_FACTS_VERSION;
  snprintf(f->comm, sizeof f->comm, "%s", zs_coll_backend(e->world));
  f->world_size = e->world_size;
  f->world_rank = e->world_rank;
  f->shard_group_size = e->shard_size;
  f->shard_rank = e->shard_rank;
  f->sharded_params = e->plan.shard_params != 0;
  f->sharded_grads = e->plan.shard_grads != 0;
  f->sharded_optimizer = e->plan.shard_optimizer != 0;
  f->host_arena = e->arena != NULL;
  f->host_pinned = e->arena ? zs_host_arena_pinned(e->arena) != 0 : 0;
  f->host_numa_node = e->arena ? zs_host_arena_node(e->arena) : -1;
  zs_optim_workers(e->optim, &f->offload_workers, &f->cpu_workers);

  char dev[32];
  if (cfg->device == ZS_DEVICE_CUDA)
    snprintf(dev, sizeof dev, "cuda:%d", cfg->device_index);
  else
    snprintf(dev, sizeof dev, "cpu");
  e->info[0] = '\0';
  info_add(e,
           "zshard %s: stage %d (sharded:%s%s%s%s), %s, comm %s, world %d, shard group %d, %s "
           "params, %s reduce%s%s",
           zs_version(), cfg->stage, f->sharded_params ? " params" : "",
           f->sharded_grads ? " grads" : "", f->sharded_optimizer ? " optimizer" : "",
           f->sharded_optimizer ? "" : " none", dev, f->comm, f->world_size, f->shard_group_size,
           cfg->param_dtype == ZS_BF16 ? "bf16" : "fp32",
           cfg->reduce_dtype == ZS_BF16 ? "bf16" : "fp32",
           zs_grad_accum_dtype(cfg) != cfg->param_dtype ? ", fp32 gradient accumulation" : "",
           cfg->deterministic ? ", deterministic" : "");
  if (e->tp_size > 1)
    info_add(e, ", tensor parallel %d x data parallel %d (rank %d of %d)", e->tp_size,
             e->world_size, e->all_rank, e->all_size);
  info_add(e, "; optimizer %s", zs_opt_name_of(cfg));
  const zs_master_mode *mm = zs_master_mode_of(cfg->master);
  info_add(e, "; optimizer state: %s, moments %s", mm->words,
           zs_dtype_size(cfg->moment_dtype) == 2 ? "bf16" : "fp32");
  if (mm->lean) info_add(e, ", rounding_seed %llu", (unsigned long long)cfg->rounding_seed);
  info_add(e, "; settings: %s", sources);
  if (f->host_arena)
    info_add(e, "; offload%s%s%s: %s%s%s",
             (cfg->offload & ZS_OFFLOAD_OPTIMIZER) ? " optimizer" : "",
             (cfg->offload & ZS_OFFLOAD_PARAMS) ? " params" : "",
             cfg->offload_budget_bytes ? " by budget" : "", zs_host_arena_info(e->arena),
             *zs_optim_info(e->optim) ? "; " : "", zs_optim_info(e->optim));
}

/* "; placement: budget B bytes, device D bytes, 2 of 5 units on the host: u3 u1" (unit names, as
   many as the line holds); a budget measured at commit (ZS_BUDGET_FREE) says so after its
   number. */
static void info_placement(zs_engine *e, const zs_plan_units *us, const zs_placement *pl) {
  const zs_engine_facts *f = &e->facts;
  char free_at_commit[64] = "";
  if (f->budget_free_ranks)
    snprintf(free_at_commit, sizeof free_at_commit, " (free at commit, the least over %d ranks)",
             f->budget_free_ranks);
  int w =
      info_add(e, "; placement: budget %zu bytes%s, device %zu bytes, %d of %d units on the host%s",
               f->budget_bytes, free_at_commit, f->device_bytes, f->units_on_host, f->units,
               f->units_on_host ? ":" : "");
  for (int i = 0; i < e->nunits && w > 0; i++)
    if (zs_placement_host(pl, &e->plan, us, i)) w = info_add(e, " %s", e->units[i]->name);
}

void zs_engine_facts_commit(zs_engine *e, const zs_plan_units *us, const zs_placement *pl) {
  zs_engine_facts *f = &e->facts;
  f->committed = 1;
  f->units = e->nunits;
  if (e->ngroups > 1)
    info_add(e, "; %d parameter groups besides the configuration's", e->ngroups - 1);
  for (int g = 1; g < e->ngroups; g++) /* those on another optimizer than the configuration's */
    if (e->group_opt[g] != e->cfg.optimizer)
      info_add(e, ", group %d on %s", g, zs_optimizer_name(e->group_opt[g]));
  /* The units whose groups keep fewer state arrays than the configuration's (OPTIMIZER.md §8). */
  const int ns = zs_opt_shape_of(&e->cfg)->nstate;
  for (int k = 0; k < ns; k++) {
    int n = 0;
    for (int i = 0; i < e->nunits; i++)
      n += !e->units[i]->frozen && e->units[i]->nstate == k;
    if (n)
      info_add(e, "; %d unit%s keep%s %d state array%s", n, n > 1 ? "s" : "", n > 1 ? "" : "s", k,
               k == 1 ? "" : "s");
  }
  /* The units that pack an array only some of their tensors keep (src/shard/opt_pack.h). */
  int packed = 0;
  for (int i = 0; i < e->nunits; i++) {
    int any = 0;
    for (int k = 0; k < ZS_OPT_MAX_STATE; k++)
      any |= e->units[i]->st.s[ZS_ST_OPT(k)].packed;
    packed += any;
  }
  if (packed)
    info_add(e, "; %d unit%s pack%s state arrays that only some of %s tensors or elements keep",
             packed, packed > 1 ? "s" : "", packed > 1 ? "" : "s", packed > 1 ? "their" : "its");
  if (pl->active) {
    f->budget_active = 1;
    f->budget_free_ranks = e->budget_free_ranks;
    f->budget_bytes = pl->budget;
    f->device_bytes = pl->device_bytes;
    f->units_on_host = pl->nhost;
    info_placement(e, us, pl);
  }
  if (!pl->nvme) return;
  f->nvme = 1;
  f->nvme_units = pl->nnvme;
  f->nvme_disk_bytes = pl->disk_bytes;
  f->nvme_host_bytes = pl->host_bytes;
  f->nvme_host_cap = pl->host_cap;
  /* "; nvme: D of N units' optimizer state on the tier (B bytes), host H of cap C bytes", and with
     units on the tier its directory and the step's I/O totals (zs_engine_nvme_info, rewritten
     after each step). */
  info_add(e,
           "; nvme: %d of %d units' optimizer state on the tier (%zu bytes), host %zu of cap %zu "
           "bytes",
           f->nvme_units, f->units, f->nvme_disk_bytes, f->nvme_host_bytes, f->nvme_host_cap);
  if (e->nvme_reclaimed.dirs)
    info_add(e, ", %d dead runs' tier directories reclaimed under nvme_path (%llu bytes)",
             e->nvme_reclaimed.dirs, (unsigned long long)e->nvme_reclaimed.bytes);
  if (!e->tiers.nvme) return;
  e->tiers.nvme->info_at = strlen(e->info);
  zs_engine_nvme_info(e);
}

zs_status zs_engine_facts_get(const zs_engine *e, zs_engine_facts *out) {
  if (!e || !out)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_facts_get: %s is NULL", e ? "out" : "engine");
  if (out->struct_size < sizeof *out)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_engine_facts_get: out->struct_size is %zu, smaller than this library's "
                  "zs_engine_facts (%zu bytes): set it to sizeof(zs_engine_facts) "
                  "(zs_engine_facts f = {.struct_size = sizeof f};)",
                  out->struct_size, sizeof *out);
  const size_t size = out->struct_size;
  if (size > sizeof *out) memset((char *)out + sizeof *out, 0, size - sizeof *out);
  *out = e->facts;
  out->struct_size = size;
  out->units = e->nunits;
  const zs_coll *gs[5] = {e->world, e->shard != e->world ? e->shard : NULL, e->replica,
                          e->all != e->world ? e->all : NULL, e->tp};
  out->comm_bus_bytes = 0;
  for (int i = 0; i < 5; i++)
    out->comm_bus_bytes += zs_coll_bus_bytes(gs[i]);
  out->comm_tp_bus_bytes = zs_coll_bus_bytes(e->tp);
  return ZS_OK;
}

zs_status zs_config_origin(const zs_engine *e, const char *field, zs_origin *out) {
  if (!e || !field || !out)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_config_origin: %s is NULL",
                  !e       ? "engine"
                  : !field ? "field"
                           : "out");
  const int i = zs_config_field_index(field);
  if (i < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_config_origin: '%s' is not a zs_config field an environment variable may "
                  "set (e.g. \"prefetch_units\", \"stage\", \"nvme_path\"; README lists them)",
                  field);
  *out = (zs_origin)e->origins[i];
  return ZS_OK;
}

zs_status zs_unit_placed(const zs_unit *u, int *on_host, int *on_nvme) {
  if (!u) return zs_err(ZS_ERR_INVALID_ARG, "zs_unit_placed: unit is NULL");
  const zs_engine *e = u->e;
  if (!e->facts.committed)
    return zs_err(ZS_ERR_STATE,
                  "zs_unit_placed('%s') before zs_engine_commit: commit places the "
                  "units",
                  u->name);
  /* The placement is a function of the configuration (the budget as commit fixed it) and the
     unit sizes: the same as commit's. */
  const zs_plan_units us = {e->units, NULL, e->nunits, NULL, NULL, NULL, NULL, NULL};
  zs_placement pl;
  zs_placement_make(&e->plan, &e->cfg, e->world_size, &us, &pl);
  if (on_host) *on_host = zs_placement_host(&pl, &e->plan, &us, u->index);
  if (on_nvme) *on_nvme = zs_placement_nvme(&pl, &e->plan, &us, u->index);
  return ZS_OK;
}

void zs_engine_nvme_info(zs_engine *e) {
  const zs_nvme_tier *t = e->tiers.nvme;
  if (!t) return;
  zs_engine_facts *f = &e->facts; /* the numbers first, the text from them */
  f->nvme_dir = zs_nvme_dir_path(t->dir);
  f->nvme_file_bytes = t->file_bytes;
  f->nvme_chunk = t->chunk;
  f->nvme_read_bytes = t->step_read;
  f->nvme_written_bytes = t->step_written;
  f->nvme_io_seconds = t->step_seconds;
  if (t->info_at >= sizeof e->info) return;
  const double gb = (double)(f->nvme_read_bytes + f->nvme_written_bytes) / 1e9;
  snprintf(e->info + t->info_at, sizeof e->info - t->info_at,
           ", dir %s (%d units, %llu file bytes, chunk %zu elements); step I/O %llu bytes read, "
           "%llu written in %.3f s (%.3f GB/s)",
           f->nvme_dir, t->nunits, (unsigned long long)f->nvme_file_bytes, f->nvme_chunk,
           (unsigned long long)f->nvme_read_bytes, (unsigned long long)f->nvme_written_bytes,
           f->nvme_io_seconds, f->nvme_io_seconds > 0 ? gb / f->nvme_io_seconds : 0.0);
}

void zs_engine_nvme_close(zs_engine *e) {
  if (!e || !e->tiers.nvme) return;
  zs_nvme_tier_close(&e->tiers);
  e->facts.nvme_dir = NULL; /* the directory is gone */
}
