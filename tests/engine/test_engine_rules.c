/* Regression tests of the stage-3 promises, one per defect they fixed (the randomized protocol
 * test, test_engine_protocol.c, covers the call orders at large):
 *  - evaluation and sampling after a step keep at most held + prefetch_units gathered, and leave
 *    at most the prefetched units gathered (they used to gather the whole model);
 *  - the backward order gather -> release -> grads_ready with several micro-steps stays bounded;
 *  - zs_unit_set_param refreshes a held copy and drops a prefetched one (no stale weights);
 *  - max_live_bytes: a unit larger than the limit is refused at commit, a gather with no room
 *    is refused with nothing changed;
 *  - deterministic hybrid sharding keeps reduction scratch within two units;
 *  - a model far larger than memory is refused at commit before anything is allocated;
 *  - offload workers split the node's cores among the ranks of the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "zs_test.h"

#define NU 8
enum { UNIT_N = 1024 }; /* divides by 1, 2, 4: no padding */
static const zs_tensor_desc one[1] = {{"w", 1, {UNIT_N, 0, 0, 0}, 0}};

static zs_engine *make(zs_comm *comm, int prefetch, size_t max_live, zs_unit **u, int n) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.prefetch_units = prefetch;
  cfg.max_live_bytes = max_live;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "u%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, one, &u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

static int ngathered(zs_unit **u, int n) {
  int k = 0;
  for (int i = 0; i < n; i++)
    k += zs_unit_is_gathered(u[i]);
  return k;
}

static size_t buffers(zs_engine *e) {
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  return m.buffers.cur;
}

/* One training step in the plain order, then forward-only passes (evaluation, sampling). */
static void eval_after_step(zs_comm *comm) {
  zs_unit *u[NU];
  zs_engine *e = make(comm, 1, 0, u, NU);
  const size_t unit = UNIT_N * 4;
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = 0; i < NU; i++) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  for (int i = NU - 1; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  for (int pass = 0; pass < 3; pass++) {
    const int upto = pass == 1 ? 2 : NU - 1; /* a partial pass in the middle */
    for (int i = 0; i <= upto; i++) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_EXPECT(ngathered(u, NU) <= 2,
                "eval pass %d at unit %d: %d units gathered (held 1 + "
                "prefetch 1)",
                pass, i, ngathered(u, NU));
      ZS_EXPECT(buffers(e) <= 2 * unit, "eval pass %d at unit %d: buffers %zu", pass, i,
                buffers(e));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
    ZS_EXPECT(ngathered(u, NU) <= 1, "after eval pass %d: %d units still gathered", pass,
              ngathered(u, NU));
  }
  /* Backward order gather -> release -> grads_ready, two micro-steps. */
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 2));
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < NU; i++) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
    for (int i = NU - 1; i >= 0; i--) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
      ZS_EXPECT(ngathered(u, NU) <= 1, "micro %d backward at unit %d: %d gathered after release", k,
                i, ngathered(u, NU));
      ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    }
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  ZS_EXPECT(buffers(e) == 0, "buffers after the step: %zu", buffers(e));
  zs_engine_destroy(e);
}

/* Prefetch happens where it helps, in the GPT-2 order with a tied embedding (unit 0 used again
   by the head after the last unit): forward gathers prefetch the next unit; the backward's first
   gather (the last unit, after the head re-gathered unit 0) prefetches the one below it; the
   next micro-step's forward prefetches unit 1 again. */
static void prefetch_where_it_helps(zs_comm *comm) {
  zs_unit *u[NU];
  zs_engine *e = make(comm, 1, 0, u, NU);
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 2));
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < NU; i++) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      if (i + 1 < NU)
        ZS_EXPECT(zs_unit_is_gathered(u[i + 1]), "micro %d: forward gather of u%d prefetches u%d",
                  k, i, i + 1);
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
    ZS_OK_OR_DIE(zs_unit_gather(u[0])); /* the tied head */
    ZS_OK_OR_DIE(zs_unit_release(u[0]));
    for (int i = NU - 1; i >= 1; i--) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      if (i > 1)
        ZS_EXPECT(zs_unit_is_gathered(u[i - 1]), "micro %d: backward gather of u%d prefetches u%d",
                  k, i, i - 1);
      ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[0])); /* the lookup's backward needs no params */
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  zs_engine_destroy(e);
}

/* set_param on a prefetched and on a held unit: the next use sees the new values. */
static void set_param_fresh(zs_comm *comm) {
  zs_unit *u[3];
  zs_engine *e = make(comm, 1, 0, u, 3);
  float *v = malloc(UNIT_N * 4);
  for (int i = 0; i < UNIT_N; i++)
    v[i] = 1.0f;
  for (int i = 0; i < 3; i++)
    ZS_OK_OR_DIE(zs_unit_set_param(u[i], 0, v));
  ZS_OK_OR_DIE(zs_unit_gather(u[0])); /* prefetches u1 */
  ZS_EXPECT(zs_unit_is_gathered(u[1]), "u1 prefetched");
  for (int i = 0; i < UNIT_N; i++)
    v[i] = 2.0f + (float)i;
  ZS_OK_OR_DIE(zs_unit_set_param(u[1], 0, v)); /* prefetched copy: dropped */
  ZS_OK_OR_DIE(zs_unit_set_param(u[0], 0, v)); /* held copy: refreshed */
  const float *p0 = zs_unit_param(u[0], 0);
  ZS_EXPECT(p0 && memcmp(p0, v, UNIT_N * 4) == 0, "held unit shows stale values after set_param");
  ZS_OK_OR_DIE(zs_unit_release(u[0]));
  ZS_OK_OR_DIE(zs_unit_gather(u[1]));
  const float *p1 = zs_unit_param(u[1], 0);
  ZS_EXPECT(p1 && memcmp(p1, v, UNIT_N * 4) == 0,
            "prefetched unit shows stale values after set_param");
  ZS_OK_OR_DIE(zs_unit_release(u[1]));
  free(v);
  zs_engine_destroy(e);
}

/* max_live_bytes: refusal at commit and at gather, bound kept with prefetch. */
static void max_live(zs_comm *comm) {
  const size_t unit = UNIT_N * 4;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.max_live_bytes = unit - 4;
  zs_engine *e = NULL;
  zs_unit *u[3];
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "big", 1, one, &u[0]));
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "max_live_bytes") != NULL, "message: %s", zs_last_error());
  zs_engine_destroy(e);
  e = make(comm, 2, 2 * unit, u, 3);
  ZS_OK_OR_DIE(zs_unit_gather(u[0]));
  ZS_EXPECT(ngathered(u, 3) == 2, "prefetch limited to one unit by max_live (%d)", ngathered(u, 3));
  ZS_OK_OR_DIE(zs_unit_gather(u[2])); /* drops the prefetched u1 */
  ZS_EXPECT(ngathered(u, 3) == 2 && !zs_unit_is_gathered(u[1]), "u1 dropped for u2");
  ZS_EXPECT_STATUS(zs_unit_gather(u[1]), ZS_ERR_OUT_OF_MEMORY);
  ZS_EXPECT(ngathered(u, 3) == 2 && zs_unit_param(u[0], 0) && zs_unit_param(u[2], 0),
            "a refused gather changes nothing");
  ZS_OK_OR_DIE(zs_unit_release(u[0]));
  ZS_OK_OR_DIE(zs_unit_gather(u[1]));
  ZS_OK_OR_DIE(zs_unit_release(u[1]));
  ZS_OK_OR_DIE(zs_unit_release(u[2]));
  zs_engine_destroy(e);
}

/* Deterministic reductions with shard groups of 2: scratch within about two units. */
static void hybrid_scratch(zs_comm *comm) {
  if (zs_comm_size(comm) != 4) return;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 3;
  cfg.deterministic = 1;
  cfg.shard_group_size = 2;
  cfg.prefetch_units = 0;
  zs_engine *e = NULL;
  zs_unit *u = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "u", 1, one, &u));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_OK_OR_DIE(zs_unit_gather(u));
  ZS_EXPECT(zs_unit_grad(u, 0) != NULL, "grad");
  ZS_OK_OR_DIE(zs_unit_grads_ready(u));
  ZS_OK_OR_DIE(zs_unit_release(u));
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  const size_t unit = UNIT_N * 4;
  /* gathered + full grad + two packed pieces of at most a unit + norm bins */
  ZS_EXPECT(m.buffers.peak <= 4 * unit + 4096, "hybrid deterministic buffers peak %zu > %zu",
            m.buffers.peak, 4 * unit + 4096);
  zs_engine_destroy(e);
}

/* A model far larger than memory: refused before any allocation. */
static void too_big(zs_comm *comm) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 0;
  zs_engine *e = NULL;
  zs_unit *u = NULL;
  const zs_tensor_desc huge[1] = {{"w", 2, {1 << 20, 1 << 18, 0, 0}, 0}}; /* 2^38 floats */
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "huge", 1, huge, &u));
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_OUT_OF_MEMORY);
  ZS_EXPECT(strstr(zs_last_error(), "available") && strstr(zs_last_error(), "does not fit: needs"),
            "the message names what is needed and what is available: %s", zs_last_error());
  zs_memory m;
  ZS_OK_OR_DIE(zs_engine_memory(e, &m));
  ZS_EXPECT(m.total.peak == 0, "nothing allocated before the refusal (peak %zu)", m.total.peak);
  ZS_EXPECT_STATUS(zs_engine_begin_step(e, 1), ZS_ERR_STATE); /* still uncommitted */
  zs_engine_destroy(e);
}

#if !defined(__SANITIZE_ADDRESS__) /* ASan's shadow memory does not live with RLIMIT_AS */
/* VmSize of this process in bytes (0 when unreadable). */
static size_t vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb * 1024;
}

/* A refusal says what would fit: with the address space capped at 12 bytes per parameter, a
   model of psi fp32 params needs 20 psi at stage 0 (refused) but less at a higher stage or over
   more ranks, which the message must offer, in the same words as zs_plan_model. */
static void hint_what_fits(zs_comm *comm) {
  const size_t psi = (size_t)100 << 20, vm = vm_size();
  struct rlimit old;
  if (!vm || getrlimit(RLIMIT_AS, &old) != 0) return;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 0;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  const zs_tensor_desc part[1] = {{"w", 1, {(int64_t)(psi / 64), 0, 0, 0}, 0}};
  for (int i = 0; i < 64; i++) {
    char name[16];
    snprintf(name, sizeof name, "p%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, part, NULL));
  }
  struct rlimit cap = old;
  cap.rlim_cur = vm + 12 * psi;
  if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < cap.rlim_cur) cap.rlim_cur = old.rlim_cur;
  ZS_EXPECT(setrlimit(RLIMIT_AS, &cap) == 0, "setrlimit");
  const zs_status rc = zs_engine_commit(e);
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", zs_last_error());
  setrlimit(RLIMIT_AS, &old);
  ZS_EXPECT(rc == ZS_ERR_OUT_OF_MEMORY, "stage 0 at 16 bytes per param is refused: %s", msg);
  /* 1 rank: no stage helps, 2 ranks at stage 3 (10 psi) do; 2 ranks: a higher stage; 4 ranks:
     stage 1 (11 psi) already. */
  const char *fits = strstr(msg, "; fits ");
  ZS_EXPECT(fits &&
                strstr(fits, zs_comm_size(comm) == 1 ? "with 2 ranks at stage 3" : "at stage ") &&
                !strstr(msg, "nothing fits"),
            "the refusal offers a configuration that fits: %s", msg);
  /* The planner says the same: zs_plan_model on the same units gives the same sentence up to
     the alternatives (which depend on the memory measured at commit). */
  int64_t numel[64];
  for (int i = 0; i < 64; i++)
    numel[i] = (int64_t)(psi / 64);
  zs_plan_report rep;
  ZS_OK_OR_DIE(zs_plan_model(&cfg, zs_comm_size(comm), numel, 64, 0, 12 * psi, 12 * psi, &rep));
  const char *semi = strchr(rep.verdict, ';'), *at = strstr(msg, "does not fit");
  ZS_EXPECT(!rep.fits && semi && at && strncmp(at, rep.verdict, (size_t)(semi - rep.verdict)) == 0,
            "commit and zs_plan_model agree:\n  commit: %s\n  plan:   %s", msg, rep.verdict);
  zs_engine_destroy(e);
}
#endif

/* Offload workers: the ranks of this host split the node's cores. */
static void worker_share(zs_comm *comm) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = 1;
  cfg.offload = ZS_OFFLOAD_OPTIMIZER;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  if (getenv("ZS_OFFLOAD_THREADS")) {
    zs_engine_destroy(e);
    return; /* the count is the user's */
  }
  const char *info = zs_engine_info(e);
  const int n = zs_test_facts(e).offload_workers;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const long ranks = zs_comm_size(comm); /* all on this host in the test */
  const long want = cores / ranks > 0 ? cores / ranks : 1;
  ZS_EXPECT(n >= 1 && n <= want,
            "rank %d: %d offload workers for %ld cores shared by %ld ranks "
            "(info: %s)",
            zs_comm_rank(comm), n, cores, ranks, info);
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  eval_after_step(comm);
  prefetch_where_it_helps(comm);
  set_param_fresh(comm);
  max_live(comm);
  hybrid_scratch(comm);
  too_big(comm);
#if !defined(__SANITIZE_ADDRESS__)
  hint_what_fits(comm);
#endif
  worker_share(comm);
  if (zs_comm_rank(comm) == 0)
    printf("test_engine_rules: world %d: %d failure(s)\n", zs_comm_size(comm), zs_test_failures);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_rules");
}
