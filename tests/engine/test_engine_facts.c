/* zshard_facts.h: zs_engine_facts_get, zs_config_origin and zs_unit_placed.
 *  - refusals: NULL arguments, a struct_size under the struct's (ZS_ERR_INVALID_ARG naming
 *    struct_size, out untouched), an unknown field name (named), zs_unit_placed before commit
 *    (ZS_ERR_STATE); a larger struct_size gets its tail zeroed;
 *  - the origins: a variable's, the program's, the default, for int, size_t and path fields;
 *  - the facts before and after commit under an offload budget that mixes host and device units
 *    (the planner's placement, unit by unit through zs_unit_placed);
 *  - zs_engine_info, which users read, says what the facts say: it is written from them, and this
 *    is where its words are checked (backend, world, sharding, origins, precision modes, the
 *    placement and its unit names, the offload workers).
 * Any number of ranks on the CPU device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_model.h"
#include "zs_test.h"

/* Fails the test when zs_engine_info(e) lacks `want`. */
static void info_has(const zs_engine *e, const char *want, const char *what) {
  ZS_EXPECT(strstr(zs_engine_info(e), want) != NULL, "%s: zs_engine_info lacks '%s': %s", what,
            want, zs_engine_info(e));
}

static zs_engine *create(const zs_config *c, zs_comm *comm, zs_unit **u) {
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(c, comm, &e));
  for (int i = 0; u && i < TM_NUNITS; i++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[i].name, tm_units[i].ntensors, tm_units[i].t, &u[i]));
  return e;
}

/* NULL, a short struct, an unknown field, a unit before commit. */
static void refusals(zs_comm *comm) {
  zs_config c;
  zs_config_default(&c);
  zs_unit *u[TM_NUNITS];
  zs_engine *e = create(&c, comm, u);
  zs_engine_facts f;
  memset(&f, 0x5a, sizeof f);
  f.struct_size = sizeof f;
  ZS_EXPECT_STATUS(zs_engine_facts_get(NULL, &f), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "engine is NULL") != NULL, "said: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_engine_facts_get(e, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "out is NULL") != NULL, "said: %s", zs_last_error());
  const size_t shorts[3] = {0, sizeof(size_t), sizeof f - 1};
  for (int i = 0; i < 3; i++) {
    f.struct_size = shorts[i];
    ZS_EXPECT_STATUS(zs_engine_facts_get(e, &f), ZS_ERR_INVALID_ARG);
    char want[64];
    snprintf(want, sizeof want, "struct_size is %zu", shorts[i]);
    ZS_EXPECT(strstr(zs_last_error(), want) && strstr(zs_last_error(), "sizeof(zs_engine_facts)"),
              "a struct_size of %zu: the refusal does not say why and what to do: %s", shorts[i],
              zs_last_error());
    ZS_EXPECT(f.struct_version == 0x5a5a5a5au && f.world_size == 0x5a5a5a5a,
              "a refused call wrote into out");
  }
  /* A struct from a later header (larger): filled, its unknown tail zeroed. */
  unsigned char big[sizeof(zs_engine_facts) + 64];
  memset(big, 0x5a, sizeof big);
  zs_engine_facts *fb = (zs_engine_facts *)(void *)big;
  fb->struct_size = sizeof big;
  ZS_OK_OR_DIE(zs_engine_facts_get(e, fb));
  int tail = 0;
  for (size_t i = sizeof(zs_engine_facts); i < sizeof big; i++)
    tail |= big[i];
  ZS_EXPECT(fb->struct_size == sizeof big && fb->struct_version == ZS_ENGINE_FACTS_VERSION &&
                tail == 0,
            "a larger struct: size %zu, version %u, tail %s", fb->struct_size, fb->struct_version,
            tail ? "not zeroed" : "zeroed");
  zs_origin o = (zs_origin)7;
  ZS_EXPECT_STATUS(zs_config_origin(NULL, "stage", &o), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_config_origin(e, NULL, &o), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_config_origin(e, "stage", NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_config_origin(e, "no_such_field", &o), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'no_such_field'") != NULL, "the name is not named: %s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_config_origin(e, "adamw", &o), ZS_ERR_INVALID_ARG); /* no variable sets it */
  ZS_EXPECT(o == (zs_origin)7, "a refused call wrote *out");
  ZS_EXPECT_STATUS(zs_unit_placed(NULL, NULL, NULL), ZS_ERR_INVALID_ARG);
  int h = -1, n = -1;
  ZS_EXPECT_STATUS(zs_unit_placed(u[0], &h, &n), ZS_ERR_STATE);
  ZS_EXPECT(strstr(zs_last_error(), "before zs_engine_commit") && h == -1 && n == -1,
            "before commit: %s", zs_last_error());
  zs_engine_destroy(e);
}

/* Origins: a variable's, the program's, the default's, for int, size_t and path fields. */
static void origins(zs_comm *comm) {
  setenv("ZS_PREFETCH_UNITS", "2", 1);
  setenv("ZS_BUCKET_BYTES", "4096", 1);
  zs_config c;
  zs_config_default(&c);
  c.bucket_bytes = 0; /* the program's, over the variable */
  c.comm_check = 1;   /* the program's, equal to the default */
  zs_engine *e = create(&c, comm, NULL);
  unsetenv("ZS_PREFETCH_UNITS");
  unsetenv("ZS_BUCKET_BYTES");
  const zs_config *r = zs_engine_config(e);
  ZS_EXPECT(r->prefetch_units == 2 && zs_test_origin(e, "prefetch_units") == ZS_ORIGIN_ENV,
            "prefetch_units %d from the variable", r->prefetch_units);
  ZS_EXPECT(r->bucket_bytes == 0 && zs_test_origin(e, "bucket_bytes") == ZS_ORIGIN_PROGRAM,
            "bucket_bytes %zu from the program", r->bucket_bytes);
  ZS_EXPECT(zs_test_origin(e, "comm_check") == ZS_ORIGIN_PROGRAM, "comm_check from the program");
  ZS_EXPECT(getenv("ZS_OFFLOAD_CHUNK") || zs_test_origin(e, "offload_chunk") == ZS_ORIGIN_DEFAULT,
            "offload_chunk: default");
  ZS_EXPECT(getenv("ZS_NVME_PATH") || zs_test_origin(e, "nvme_path") == ZS_ORIGIN_DEFAULT,
            "nvme_path: default");
  /* The text says the same. */
  info_has(e, "prefetch_units=2 (ZS_PREFETCH_UNITS)", "origins");
  info_has(e, "bucket_bytes=0 (program)", "origins");
  info_has(e, "comm_check=1 (program)", "origins");
  if (!getenv("ZS_STAGE")) {
    ZS_EXPECT(zs_test_origin(e, "stage") == ZS_ORIGIN_DEFAULT, "stage: default");
    info_has(e, "stage=3 (default)", "origins");
  }
  zs_engine_destroy(e);
  c.nvme_path = "/from/the/program"; /* the tier needs a host tier and a cap; commit opens it */
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_host_bytes = (size_t)1 << 30;
  e = create(&c, comm, NULL);
  ZS_EXPECT(zs_test_origin(e, "nvme_path") == ZS_ORIGIN_PROGRAM, "nvme_path: the program's");
  info_has(e, "nvme_path=/from/the/program (program)", "origins");
  zs_engine_destroy(e);
}

/* The precision modes by name in the text (the configuration says which: zs_engine_config). */
static void precision_words(zs_comm *comm) {
  zs_config c;
  zs_config_default(&c);
  c.param_dtype = c.reduce_dtype = ZS_BF16;
  c.master = ZS_MASTER_LEAN;
  c.rounding_seed = 42;
  zs_engine *e = create(&c, comm, NULL);
  ZS_EXPECT(zs_engine_config(e)->master == ZS_MASTER_LEAN, "lean");
  info_has(e, "optimizer state: master lean", "lean");
  info_has(e, "rounding_seed 42", "lean");
  zs_engine_destroy(e);
  c.master = ZS_MASTER_REMAINDER;
  c.moment_dtype = ZS_BF16;
  e = create(&c, comm, NULL);
  info_has(e, "remainder master", "remainder");
  info_has(e, "moments bf16", "remainder");
  zs_engine_destroy(e);
}

/* An offload budget halfway between the floor and no offload: the facts before and after commit,
   the planner's placement unit by unit, and the text. */
static void placement(zs_comm *comm) {
  const int world = zs_comm_size(comm), rank = zs_comm_rank(comm);
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  int64_t numel[TM_NUNITS];
  for (int u = 0; u < TM_NUNITS; u++) {
    numel[u] = 0;
    for (int k = 0; k < tm_units[u].ntensors; k++)
      numel[u] += tm_numel(u, k);
  }
  zs_plan_report none, all;
  c.offload_budget_bytes = 0;
  ZS_OK_OR_DIE(zs_plan_model(&c, world, numel, TM_NUNITS, 0, SIZE_MAX, SIZE_MAX, &none));
  c.offload_budget_bytes = 1;
  ZS_OK_OR_DIE(zs_plan_model(&c, world, numel, TM_NUNITS, 0, SIZE_MAX, SIZE_MAX, &all));
  c.offload_budget_bytes = all.budget_floor + (none.device_total - all.budget_floor) / 2;
  unsigned char host[TM_NUNITS];
  ZS_OK_OR_DIE(zs_plan_placement(&c, world, numel, TM_NUNITS, host));
  int nhost = 0;
  for (int u = 0; u < TM_NUNITS; u++)
    nhost += host[u] != 0;
  zs_unit *u[TM_NUNITS];
  zs_engine *e = create(&c, comm, u);
  zs_engine_facts f = zs_test_facts(e);
  ZS_EXPECT(f.struct_version == ZS_ENGINE_FACTS_VERSION && f.struct_size == sizeof f &&
                !f.committed && !f.budget_active && f.units == TM_NUNITS,
            "before commit: version %u, committed %d, budget %d, units %d", f.struct_version,
            f.committed, f.budget_active, f.units);
  ZS_EXPECT(f.world_size == world && f.world_rank == rank && f.shard_group_size == world &&
                f.shard_rank == rank && f.sharded_params && f.sharded_grads &&
                f.sharded_optimizer && f.host_arena && f.offload_workers >= 1 && !f.nvme &&
                f.nvme_dir == NULL,
            "stage 3 with a budget on %d ranks: %s", world, zs_engine_info(e));
  char want[256];
  snprintf(want, sizeof want, "comm %s, world %d, shard group %d", f.comm, f.world_size,
           f.shard_group_size);
  info_has(e, want, "create");
  info_has(e, "(sharded: params grads optimizer)", "create");
  snprintf(want, sizeof want, "; %d workers", f.offload_workers);
  info_has(e, want, "create");
  info_has(e, f.host_pinned ? "; pinned" : "unpinned", "create");
  ZS_OK_OR_DIE(zs_engine_commit(e));
  f = zs_test_facts(e);
  ZS_EXPECT(f.committed && f.budget_active && f.budget_free_ranks == 0 &&
                f.budget_bytes == c.offload_budget_bytes && f.units == TM_NUNITS &&
                f.units_on_host == nhost && nhost > 0 && nhost < TM_NUNITS && f.device_bytes > 0 &&
                f.device_bytes <= f.budget_bytes,
            "after commit: budget %zu (want %zu), device %zu, %d of %d on the host (planner %d)",
            f.budget_bytes, c.offload_budget_bytes, f.device_bytes, f.units_on_host, f.units,
            nhost);
  snprintf(want, sizeof want,
           "; placement: budget %zu bytes, device %zu bytes, %d of %d units on the host:",
           f.budget_bytes, f.device_bytes, f.units_on_host, f.units);
  info_has(e, want, "commit");
  const char *names = strstr(zs_engine_info(e), want);
  for (int i = 0; i < TM_NUNITS; i++) {
    int h = -1, n = -1;
    ZS_OK_OR_DIE(zs_unit_placed(u[i], &h, &n));
    ZS_EXPECT(h == (host[i] != 0) && n == 0, "unit %s: on the host %d (planner %d), nvme %d",
              tm_units[i].name, h, host[i], n);
    char name[64];
    snprintf(name, sizeof name, " %s", tm_units[i].name);
    const char *at = names ? strstr(names + strlen(want), name) : NULL;
    const size_t len = strlen(name);
    ZS_EXPECT(h == (at && (at[len] == ' ' || at[len] == '\0' || at[len] == ';')),
              "unit %s: on the host %d, but the text's list says otherwise: %s", tm_units[i].name,
              h, zs_engine_info(e));
  }
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  refusals(comm);
  origins(comm);
  precision_words(comm);
  placement(comm);
  if (zs_comm_rank(comm) == 0) printf("engine_facts: done on %d ranks\n", zs_comm_size(comm));
  zs_comm_destroy(comm);
  ZS_TEST_END("engine_facts");
}
