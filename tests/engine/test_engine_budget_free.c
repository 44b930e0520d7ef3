/* offload_budget_bytes = ZS_BUDGET_FREE on the CPU device, each rank's measurement planted by
 * the test hook (base/free_hook.h) and different on every rank:
 *  - commit makes the least planted number the budget on every rank (zs_engine_config,
 *    zs_engine_facts_get), and places the same units on every rank;
 *  - that placement mixes host and device units and is the one zs_plan_placement gives for an
 *    explicit budget of that number, and the one an engine with that explicit budget makes
 *    (the facts' device bytes and units on the host, zs_unit_placed for each unit);
 *  - both engines train to the same bits (every param after 3 steps);
 *  - a rank that measures 0 makes commit refuse on every rank (ZS_ERR_OUT_OF_MEMORY naming that
 *    rank, the engine uncommitted); commit called again measures again and succeeds;
 *  - with the hook off the real measurement gives a budget > 0, at most the MemAvailable this
 *    test reads itself (/proc/meminfo).
 * Run with 2 or more ranks. The bytes come from the planner's floor (every unit on the host) and
 * ceiling (none), as test_engine_train's --budget-frac does. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/free_hook.h"
#include "engine_model.h"
#include "zs_test.h"

/* The placement of committed engine e without the budget's number, from its facts and
   zs_unit_placed: "device D bytes, K of N units on the host: u3 u1" (in buf, n bytes). */
static const char *placement_of(zs_engine *e, char *buf, size_t n) {
  const zs_engine_facts f = zs_test_facts(e);
  int w = snprintf(buf, n, "device %zu bytes, %d of %d units on the host%s", f.device_bytes,
                   f.units_on_host, f.units, f.budget_active ? ":" : " (no budget)");
  for (int u = 0; u < zs_engine_num_units(e) && w > 0 && (size_t)w < n; u++) {
    int h = 0;
    ZS_OK_OR_DIE(zs_unit_placed(zs_engine_unit(e, u), &h, NULL));
    if (h) w += snprintf(buf + w, n - (size_t)w, " %s", zs_unit_name(zs_engine_unit(e, u)));
  }
  return buf;
}

/* 1 when every rank holds the same string s (compared through a hash and the length). */
static int same_on_all_ranks(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (const char *c = s; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ull;
  uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/* One micro-step of the synthetic model (engine_model.h) on batch `batch`, fp32 on the CPU. */
static void micro_step(zs_unit **units, int64_t batch) {
  for (int u = 0; u < TM_NUNITS; u++)
    ZS_OK_OR_DIE(zs_unit_gather(units[u]));
  for (int u = 0; u < TM_NUNITS; u++)
    ZS_OK_OR_DIE(zs_unit_release(units[u]));
  for (int u = TM_NUNITS - 1; u >= 0; u--) {
    ZS_OK_OR_DIE(zs_unit_gather(units[u]));
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      const float *p = zs_unit_param(units[u], k);
      float *g = zs_unit_grad(units[u], k);
      const int64_t base = tm_base(u, k);
      for (int64_t i = 0; i < tm_numel(u, k); i++)
        g[i] += tm_a(batch, base + i) * (p[i] - tm_t(batch, base + i));
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(units[u]));
    ZS_OK_OR_DIE(zs_unit_release(units[u]));
  }
}

/* An engine of the synthetic model under cfg, its units in units[], initialised; committed
   when commit is set. */
static zs_engine *make_engine(const zs_config *cfg, zs_comm *comm, zs_unit **units, int commit) {
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(cfg, comm, &e));
  for (int u = 0; u < TM_NUNITS; u++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[u].name, tm_units[u].ntensors, tm_units[u].t, &units[u]));
  if (commit) ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

/* Sets every param to its initial value, trains `steps` steps, and returns all params (malloc'd,
   global order). */
static float *train(zs_engine *e, zs_unit **units, int rank, int world, int steps) {
  const int64_t n = tm_total();
  float *all = malloc((size_t)n * sizeof *all);
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      for (int64_t i = 0; i < tm_numel(u, k); i++)
        all[tm_base(u, k) + i] = tm_init(tm_base(u, k) + i);
      ZS_OK_OR_DIE(zs_unit_set_param(units[u], k, all + tm_base(u, k)));
    }
  for (int s = 0; s < steps; s++) {
    ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
    micro_step(units, (int64_t)s * world + rank);
    zs_step_stats st;
    ZS_OK_OR_DIE(zs_engine_step(e, &st));
  }
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++)
      ZS_OK_OR_DIE(zs_unit_get_param(units[u], k, all + tm_base(u, k)));
  return all;
}

/* MemAvailable of /proc/meminfo in bytes (SIZE_MAX when unreadable). */
static size_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return SIZE_MAX;
  char line[256];
  size_t kb = 0;
  int got = 0;
  while (!got && fgets(line, sizeof line, f))
    got = sscanf(line, "MemAvailable: %zu kB", &kb) == 1;
  fclose(f);
  return got ? kb * 1024 : SIZE_MAX;
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  if (world < 2) {
    if (rank == 0) fprintf(stderr, "run with 2 or more ranks\n");
    zs_comm_destroy(comm);
    return 1;
  }
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.deterministic = 1;
  cfg.comm_timeout_s = 60;
  int64_t numel[TM_NUNITS];
  for (int u = 0; u < TM_NUNITS; u++) {
    numel[u] = 0;
    for (int k = 0; k < tm_units[u].ntensors; k++)
      numel[u] += tm_numel(u, k);
  }
  /* The floor (every unit on the host) and the ceiling (none) of a budget for this model. */
  zs_plan_report none, all;
  cfg.offload_budget_bytes = 0;
  ZS_OK_OR_DIE(zs_plan_model(&cfg, world, numel, TM_NUNITS, 0, SIZE_MAX, SIZE_MAX, &none));
  cfg.offload_budget_bytes = 1;
  ZS_OK_OR_DIE(zs_plan_model(&cfg, world, numel, TM_NUNITS, 0, SIZE_MAX, SIZE_MAX, &all));
  const size_t floor_b = all.budget_floor, span = none.device_total - floor_b;
  /* Rank r measures floor + (0.2 + 0.6 (W-1-r)/(W-1)) span: the last rank the least. */
  size_t mine = floor_b + (size_t)((0.2 + 0.6 * (world - 1 - rank) / (world - 1)) * (double)span);
  const size_t least = floor_b + (size_t)(0.2 * (double)span);
  zs_test_hook_free_bytes(1, mine);

  /* The free budget. */
  zs_unit *ua[TM_NUNITS], *ub[TM_NUNITS];
  cfg.offload_budget_bytes = ZS_BUDGET_FREE;
  zs_engine *a = make_engine(&cfg, comm, ua, 1);
  const size_t got = zs_engine_config(a)->offload_budget_bytes;
  ZS_EXPECT(got == least, "rank %d: the free budget is %zu bytes, want the least planted, %zu",
            rank, got, least);
  const zs_engine_facts fa = zs_test_facts(a);
  ZS_EXPECT(fa.budget_active && fa.budget_bytes == least && fa.budget_free_ranks == world,
            "rank %d: not a budget of %zu bytes, the least free over %d ranks: %s", rank, least,
            world, zs_engine_info(a));
  char pla[512], plb[512];
  ZS_EXPECT(same_on_all_ranks(placement_of(a, pla, sizeof pla)),
            "rank %d: placement differs across ranks: %s", rank, pla);
  /* The planner's placement for an explicit budget of that number: mixed, and the engine's. */
  zs_config ex = cfg;
  ex.offload_budget_bytes = least;
  unsigned char host[TM_NUNITS];
  ZS_OK_OR_DIE(zs_plan_placement(&ex, world, numel, TM_NUNITS, host));
  int nhost = 0;
  for (int u = 0; u < TM_NUNITS; u++) {
    nhost += host[u] != 0;
    int h = -1;
    ZS_OK_OR_DIE(zs_unit_placed(ua[u], &h, NULL));
    ZS_EXPECT(h == (host[u] != 0), "rank %d: unit %s on the host %d, the planner says %d (%s)",
              rank, tm_units[u].name, h, host[u], pla);
  }
  ZS_EXPECT(nhost > 0 && nhost < TM_NUNITS, "budget %zu: %d of %d units on the host, not mixed",
            least, nhost, TM_NUNITS);
  ZS_EXPECT(fa.units_on_host == nhost && fa.units == TM_NUNITS,
            "rank %d: the engine's placement '%s' is not the planner's %d of %d", rank, pla, nhost,
            TM_NUNITS);

  /* An explicit budget of the same number: the same placement, the same bits. */
  zs_engine *b = make_engine(&ex, comm, ub, 1);
  ZS_EXPECT(strcmp(placement_of(a, pla, sizeof pla), placement_of(b, plb, sizeof plb)) == 0 &&
                zs_test_facts(b).budget_free_ranks == 0,
            "rank %d: free placement '%s', explicit '%s'", rank, pla, plb);
  float *pa = train(a, ua, rank, world, 3), *pb = train(b, ub, rank, world, 3);
  const int64_t n = tm_total();
  int64_t diff = 0;
  for (int64_t i = 0; i < n; i++)
    diff += memcmp(&pa[i], &pb[i], sizeof(float)) != 0;
  ZS_EXPECT(diff == 0,
            "rank %d: %lld of %lld params differ between the free and the explicit "
            "budget",
            rank, (long long)diff, (long long)n);
  ZS_EXPECT(pa[0] != tm_init(0), "the params did not change in 3 steps");
  free(pa);
  free(pb);
  zs_engine_destroy(b);
  zs_engine_destroy(a);

  /* Rank 0 measures nothing: every rank refuses, naming rank 0; the retry measures again. */
  zs_test_hook_free_bytes(1, rank == 0 ? 0 : mine);
  zs_engine *c = make_engine(&cfg, comm, ua, 0);
  ZS_EXPECT_STATUS(zs_engine_commit(c), ZS_ERR_OUT_OF_MEMORY);
  ZS_EXPECT(strstr(zs_last_error(), "rank 0 measured no free device memory") != NULL,
            "rank %d: the refusal does not name rank 0: %s", rank, zs_last_error());
  ZS_EXPECT(zs_engine_config(c)->offload_budget_bytes == ZS_BUDGET_FREE,
            "rank %d: after the refusal the budget is %zu, not ZS_BUDGET_FREE", rank,
            zs_engine_config(c)->offload_budget_bytes);
  zs_test_hook_free_bytes(1, mine);
  ZS_OK_OR_DIE(zs_engine_commit(c));
  ZS_EXPECT(zs_engine_config(c)->offload_budget_bytes == least,
            "rank %d: the retried commit's budget is %zu, want %zu", rank,
            zs_engine_config(c)->offload_budget_bytes, least);
  zs_engine_destroy(c);

  /* The real measurement: positive, at most this host's MemAvailable. */
  zs_test_hook_free_bytes(0, 0);
  zs_engine *d = make_engine(&cfg, comm, ua, 1);
  const size_t real = zs_engine_config(d)->offload_budget_bytes, avail = mem_available();
  ZS_EXPECT(real > 0 && real != ZS_BUDGET_FREE && real <= avail,
            "rank %d: the measured budget %zu is not in (0, MemAvailable %zu]", rank, real, avail);
  ZS_EXPECT(zs_test_facts(d).budget_free_ranks == world && zs_test_facts(d).budget_bytes == real,
            "rank %d: the facts do not say the budget was measured: %s", rank, zs_engine_info(d));
  zs_engine_destroy(d);
  zs_comm_destroy(comm);
  ZS_TEST_END("engine_budget_free");
}
