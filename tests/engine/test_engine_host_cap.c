/* One memory verdict under a host cap (zs_config.offload_host_bytes): for random models (unit
 * sizes, many of them not a whole number of pages), stages, host tiers (optimizer offload, params
 * too, an offload budget), precision modes, moments, with and without the NVMe tier, and caps at,
 * one byte under, and around the planned host bytes and down to 1 MiB, zs_plan_model's fits must
 * equal zs_engine_commit's verdict: a commit refused exactly when the planner says it does not
 * fit, with ZS_ERR_OUT_OF_MEMORY and the planner's sentence; a commit that succeeds books in its
 * ledger exactly the planner's host_pinned, within the cap. One rank. Usage: test_engine_host_cap
 * DIR (on a real disk, for the NVMe tier). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_test.h"

#define MAXU 5

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  return zs_test_rand(&rng);
}

/* A random configuration with a host tier into c (cap and NVMe tier set by the caller). */
static void random_config(zs_config *c) {
  zs_config_default(c);
  c->stage = 1 + (int)(next() % 3);
  const int mode = (int)(next() % 4);
  c->master = mode == 0   ? ZS_MASTER_FP32
              : mode == 1 ? ZS_MASTER_PARAMS
              : mode == 2 ? ZS_MASTER_REMAINDER
                          : ZS_MASTER_LEAN;
  c->param_dtype = c->reduce_dtype = mode >= 2 || (mode == 0 && next() % 2) ? ZS_BF16 : ZS_F32;
  c->moment_dtype = next() % 2 ? ZS_BF16 : ZS_F32;
  c->offload_chunk = 2048;
  c->offload_allow_unpinned = 1;
  const int tier = (int)(next() % 3);
  if (tier == 0) c->offload = ZS_OFFLOAD_OPTIMIZER;
  if (tier == 1) c->offload = c->stage == 3 ? ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS : 0;
  if (tier == 2 || !c->offload) c->offload_budget_bytes = 1 + next() % (8u << 20);
}

/* Plans and commits c over the units; checks that they agree. Returns commit's status. */
static zs_status check_case(zs_comm *comm, const zs_config *c, const int64_t *numel, int n,
                            int iter) {
  zs_plan_report r;
  ZS_OK_OR_DIE(zs_plan_model(c, 1, numel, n, 0, SIZE_MAX, SIZE_MAX, &r));
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(c, comm, &e));
  for (int i = 0; i < n; i++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", i);
    const zs_tensor_desc t = {"w", 1, {numel[i], 0, 0, 0}, 0};
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, &t, NULL));
  }
  const zs_status rc = zs_engine_commit(e);
  ZS_EXPECT((rc == ZS_OK) == (r.fits == 1),
            "case %d (stage %d, master %d, offload %u, budget %zu, nvme %d, %d units): planner "
            "fits %d, commit %s: %s; planner: %s",
            iter, c->stage, (int)c->master, c->offload, c->offload_budget_bytes,
            c->nvme_path != NULL, n, r.fits, zs_status_str(rc), rc == ZS_OK ? "" : zs_last_error(),
            r.verdict);
  if (rc == ZS_OK) {
    zs_memory m;
    ZS_OK_OR_DIE(zs_engine_memory(e, &m));
    ZS_EXPECT(m.host_pinned.cur == r.host_pinned && m.host_pinned.cur <= c->offload_host_bytes,
              "case %d: ledger host %zu, planned %zu, cap %zu", iter, (size_t)m.host_pinned.cur,
              r.host_pinned, c->offload_host_bytes);
  } else {
    ZS_EXPECT(rc == ZS_ERR_OUT_OF_MEMORY && strstr(zs_last_error(), r.verdict) != NULL,
              "case %d: refused with %s '%s', not the planner's '%s'", iter, zs_status_str(rc),
              zs_last_error(), r.verdict);
  }
  zs_engine_destroy(e);
  return rc;
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const char *dir = argc > 1 ? argv[1] : ".";
  int cases = 0, refused = 0;
  for (int iter = 0; iter < 60; iter++) {
    zs_config c;
    random_config(&c);
    const int n = 1 + (int)(next() % MAXU);
    int64_t numel[MAXU];
    for (int i = 0; i < n; i++)
      numel[i] = next() % 4 ? 1 + (int64_t)(next() % 300000) : (int64_t)1024 << (next() % 8);
    zs_plan_report r; /* the host bytes with no cap: the caps are placed around them */
    ZS_OK_OR_DIE(zs_plan_model(&c, 1, numel, n, 0, SIZE_MAX, SIZE_MAX, &r));
    const size_t h = r.host_pinned, MiB = (size_t)1 << 20;
    const size_t caps[8] = {h,       h ? h - 1 : 1, h + 1,   h / 2 + 1,
                            1 * MiB, 3 * MiB,       4 * MiB, 1 + next() % (h + h / 4 + 2)};
    for (int k = 0; k < 8; k++) {
      if (!caps[k]) continue;
      c.offload_host_bytes = caps[k];
      c.nvme_path = iter % 3 == 2 ? dir : NULL; /* with the tier: caps under h put units there */
      refused += check_case(comm, &c, numel, n, iter * 8 + k) != ZS_OK;
      cases++;
    }
  }
  printf("test_engine_host_cap: %d cases, %d refused, every verdict the planner's\n", cases,
         refused);
  ZS_EXPECT(refused > 0 && refused < cases, "the caps should both fit and not (%d of %d refused)",
            refused, cases);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_host_cap");
}
