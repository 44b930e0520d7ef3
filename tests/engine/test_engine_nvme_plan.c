/* The NVMe tier at commit (zs_config.nvme_path): a cap that keeps every unit's optimizer state in
 * memory commits (the directory is never opened) and reports the tier's empty placement
 * (zs_engine_facts_get, and in words in zs_engine_info); a cap one byte short puts the largest unit
 * on the tier (the placement's numbers recomputed here: 12 bytes of fp32 master, m and v per
 * element, 36 x offload_chunk bytes of staging), which commit refuses under a directory that does
 * not exist (naming it, nothing left) and takes under a real one, with the ledger's host bytes
 * those of the planner; a cap under the staging alone fails the fit check with the least cap; and
 * zs_plan_model counts the same placement. One rank. Usage: test_engine_nvme_plan DIR (on a real
 * disk). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_test.h"

#define NU 3
static const int64_t numel[NU] = {256 << 10, 768 << 10, 512 << 10}; /* unit 1 is the largest */

/* An engine with the three units, offload_host_bytes = cap, offload_chunk = chunk; commit's status.
 */
static zs_status build(zs_comm *comm, size_t cap, size_t chunk, const char *dir, zs_engine **out) {
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_chunk = chunk;
  c.offload_host_bytes = cap;
  c.offload_allow_unpinned = 1;
  c.nvme_path = dir;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, out));
  for (int i = 0; i < NU; i++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", i);
    const zs_tensor_desc t = {"w", 1, {numel[i], 0, 0, 0}, 0};
    zs_unit *u = NULL;
    ZS_OK_OR_DIE(zs_engine_add_unit(*out, name, 1, &t, &u));
  }
  return zs_engine_commit(*out);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const char *dir = argc > 1 ? argv[1] : ".";
  const size_t host = 12 * ((size_t)(256 + 768 + 512) << 10), staging = 36 * 256;
  zs_engine *e = NULL;
  /* Room for exactly everything (the arrays are whole pages: the arena reserves no more):
     nothing on the tier. */
  const size_t roomy = host;
  ZS_EXPECT(build(comm, roomy, 256, "/nonexistent/nvme-tier", &e) == ZS_OK, "cap %zu: %s", roomy,
            zs_last_error());
  zs_engine_facts f = zs_test_facts(e);
  ZS_EXPECT(f.nvme && f.nvme_units == 0 && f.units == 3 && f.nvme_disk_bytes == 0 &&
                f.nvme_host_bytes == host && f.nvme_host_cap == roomy && f.nvme_dir == NULL,
            "not 0 of 3 units on the tier, host %zu of cap %zu: %s", host, roomy,
            zs_engine_info(e));
  /* The line people read says the same in words (one of the few checks of the text itself). */
  char want[256];
  snprintf(want, sizeof want,
           "nvme: 0 of 3 units' optimizer state on the tier (0 bytes), host %zu of cap %zu bytes",
           host, roomy);
  ZS_EXPECT(strstr(zs_engine_info(e), want) != NULL, "info '%s' lacks '%s'", zs_engine_info(e),
            want);
  zs_engine_destroy(e);
  /* One byte short: the largest unit (768 Ki elements) goes to the tier; under a directory that
     does not exist commit refuses, naming it, and the engine can still be destroyed. */
  e = NULL;
  ZS_EXPECT_STATUS(build(comm, host - 1, 256, "/nonexistent/nvme-tier", &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "/nonexistent/nvme-tier") != NULL, "'%s' lacks the path",
            zs_last_error());
  zs_engine_destroy(e);
  /* Under a real directory: committed, the unit on the tier, the ledger's host bytes the
     planner's (the two other units' state and the staging). */
  e = NULL;
  ZS_EXPECT(build(comm, host - 1, 256, dir, &e) == ZS_OK, "cap %zu under %s: %s", host - 1, dir,
            zs_last_error());
  f = zs_test_facts(e);
  ZS_EXPECT(f.nvme && f.nvme_units == 1 && f.units == 3 &&
                f.nvme_disk_bytes == (size_t)12 * (768 << 10) &&
                f.nvme_host_bytes == host - 12 * (768 << 10) + staging &&
                f.nvme_host_cap == host - 1 && f.nvme_dir != NULL,
            "not 1 of 3 units on the tier (%d bytes), host %zu of cap %zu: %s", 12 * (768 << 10),
            host - 12 * (768 << 10) + staging, host - 1, zs_engine_info(e));
  zs_memory mem;
  ZS_OK_OR_DIE(zs_engine_memory(e, &mem));
  ZS_EXPECT(mem.host_pinned.cur == host - 12 * (768 << 10) + staging,
            "ledger host_pinned %zu, planned %zu", (size_t)mem.host_pinned.cur,
            host - 12 * (768 << 10) + staging);
  zs_engine_destroy(e);
  /* A cap under the staging alone (36 x 1 Mi elements): over it with every unit on the tier, the
     fit check refuses, naming the least cap (the staging). */
  e = NULL;
  ZS_EXPECT_STATUS(build(comm, 16u << 20, 1u << 20, dir, &e), ZS_ERR_OUT_OF_MEMORY);
  snprintf(want, sizeof want, "fits with offload_host_bytes of %zu bytes or more",
           (size_t)36 << 20);
  ZS_EXPECT(strstr(zs_last_error(), want) != NULL, "'%s' lacks '%s'", zs_last_error(), want);
  zs_engine_destroy(e);
  /* The planner: host bytes with the unit on the tier, staging included. */
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_chunk = 256;
  c.offload_host_bytes = host - 1;
  c.nvme_path = "/nonexistent/nvme-tier";
  zs_plan_report r;
  ZS_EXPECT(zs_plan_model(&c, 1, numel, NU, 0, SIZE_MAX, SIZE_MAX, &r) == ZS_OK, "plan: %s",
            zs_last_error());
  const size_t want_host = host - 12 * (768 << 10) + staging;
  ZS_EXPECT(r.host_pinned == want_host, "planned host %zu, want %zu", (size_t)r.host_pinned,
            want_host);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_nvme_plan");
}
