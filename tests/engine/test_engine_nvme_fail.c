/* The NVMe tier's failures in the engine, on any number of ranks (the failing one is the last):
 *  - a unit's file deleted between steps: the next zs_engine_step returns ZS_ERR_IO on every
 *    rank, the failing rank naming the file and the offset, the others naming that rank; the engine
 *    is failed (later calls ZS_ERR_STATE) and destroy removes every rank's directory;
 *  - an injected I/O error (the test build's hook, src/offload/nvme_hooks.h) in the step's pass:
 *    the same;
 *  - a file size limit (RLIMIT_FSIZE) lowered under the files between steps (writes past it fail,
 *    as on a full disk): the same;
 *  - RLIMIT_FSIZE under a unit's file at commit: zs_engine_commit fails on every rank (the failing
 *    rank naming the file, the others that rank), nothing left on disk, and the engine can be
 *    destroyed.
 * Usage: test_engine_nvme_fail DIR (a folder on a real disk, created when missing). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <mpi.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "tier/nvme_tier.h"
#include "offload/nvme_hooks.h"
#include "offload/nvme_test_util.h"
#include "zs_test.h"

#ifndef ZS_TEST_HOOKS
#error "test_engine_nvme_fail needs the test build's hooks (ZS_TEST_HOOKS)"
#endif

#define NU 2
static const int64_t numel[NU] = {1000003, 1200007}; /* each rank's state over the cap */

static const char *root;
static int rank, world;

/* An engine with NU units, every one's optimizer state on the tier; commit's status. */
static zs_status build(zs_comm *comm, zs_engine **out) {
  zs_config c;
  zs_config_default(&c);
  c.stage = 1;
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_allow_unpinned = 1;
  c.offload_chunk = 16384;
  c.offload_host_bytes = 5u << 20;
  c.nvme_path = root;
  c.comm_timeout_s = 60;
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

/* One training step (gradient = params - 1). */
static zs_status step(zs_engine *e) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = NU - 1; i >= 0; i--) {
    zs_unit *u = zs_engine_unit(e, i);
    ZS_OK_OR_DIE(zs_unit_gather(u));
    const float *p = zs_unit_param(u, 0);
    float *g = zs_unit_grad(u, 0);
    for (int64_t k = 0; k < numel[i]; k++)
      g[k] += p[k] - 1.0f;
    ZS_OK_OR_DIE(zs_unit_grads_ready(u));
    ZS_OK_OR_DIE(zs_unit_release(u));
  }
  return zs_engine_step(e, NULL);
}

/* The number of entries of root named rank*: what the tiers left behind. */
static int leftovers(void) {
  DIR *d = opendir(root);
  int n = 0;
  for (struct dirent *x; d && (x = readdir(d));)
    if (!strncmp(x->d_name, "rank", 4)) n++;
  if (d) closedir(d);
  return n;
}

/* The step after `breaker` ran on the last rank fails everywhere: ZS_ERR_IO, the last rank's
   message with `want` (and "offset"), the others' naming the last rank; later calls refused. */
static void step_fails(zs_comm *comm, const char *what, void (*breaker)(zs_engine *, char *),
                       const char *want_extra) {
  zs_engine *e = NULL;
  ZS_EXPECT(build(comm, &e) == ZS_OK, "%s: commit: %s", what, zs_last_error());
  ZS_EXPECT(e->tiers.nvme && e->tiers.nvme->nunits == NU, "%s: not every unit on the tier: %s",
            what, zs_engine_info(e));
  ZS_EXPECT(step(e) == ZS_OK, "%s: the first step: %s", what, zs_last_error());
  char want[4352] = "";
  if (rank == world - 1) breaker(e, want);
  const zs_status rc = step(e);
  const char *m = zs_last_error();
  ZS_EXPECT(rc == ZS_ERR_IO, "%s: rank %d: the step returned %d: %s", what, rank, (int)rc, m);
  if (rank == world - 1) {
    ZS_EXPECT(strstr(m, want) && strstr(m, "offset") && (!want_extra || strstr(m, want_extra)),
              "%s: rank %d: '%s' does not name '%s' and the offset", what, rank, m, want);
  } else {
    char r[64];
    snprintf(r, sizeof r, "rank %d's tier failed", world - 1);
    ZS_EXPECT(strstr(m, r) != NULL, "%s: rank %d: '%s' does not name rank %d", what, rank, m,
              world - 1);
  }
  printf("%s: rank %d: %s\n", what, rank, m);
  ZS_EXPECT_STATUS(zs_engine_begin_step(e, 1), ZS_ERR_STATE);
  zs_engine_destroy(e);
  MPI_Barrier(MPI_COMM_WORLD);
  ZS_EXPECT(leftovers() == 0, "%s: rank directories left under %s", what, root);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("%s: every rank failed the step\n", what);
}

static void delete_file(zs_engine *e, char *want) {
  const zs_nvme_file *f = e->units[1]->nv[ZS_ARR_OPT0];
  snprintf(want, 4352, "%s", f->path);
  ZS_EXPECT(unlink(f->path) == 0, "cannot delete %s", f->path);
}

static void inject_eio(zs_engine *e, char *want) {
  (void)e;
  snprintf(want, 4352, "%s", "u0.");
  zs_nvme_hook_fail_io(5, EIO); /* the 5th I/O of the step: in unit 0's pass */
}

static void limit_fsize(zs_engine *e, char *want) {
  (void)e;
  snprintf(want, 4352, "%s", "u0.");                   /* whichever array's write is reaped first */
  const struct rlimit lim = {64 << 10, RLIM_INFINITY}; /* the first chunk's writes pass it */
  ZS_EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno));
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  root = argc > 1 ? argv[1] : "nvme_fail.d";
  mkdir(root, 0755); /* its own folder: other tests' tiers do not count as left behind */
  MPI_Barrier(MPI_COMM_WORLD);
  nvt_require_root(root);
  rank = zs_comm_rank(comm);
  world = zs_comm_size(comm);
  signal(SIGXFSZ, SIG_IGN); /* RLIMIT_FSIZE: EFBIG instead of the signal's default (death) */
  struct rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  MPI_Barrier(MPI_COMM_WORLD);
  ZS_EXPECT(leftovers() == 0, "rank directories under %s before the test", root);
  MPI_Barrier(MPI_COMM_WORLD);

  step_fails(comm, "a deleted file", delete_file, "deleted");
  step_fails(comm, "an injected EIO", inject_eio, NULL);
  zs_nvme_hook_fail_io(0, 0);
  step_fails(comm, "a file size limit", limit_fsize, NULL);
  setrlimit(RLIMIT_FSIZE, &old);

  /* RLIMIT_FSIZE under the files at commit (the last rank). */
  if (rank == world - 1) {
    const struct rlimit lim = {1 << 20, RLIM_INFINITY};
    ZS_EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno));
  }
  zs_engine *e = NULL;
  const zs_status rc = build(comm, &e);
  const char *m = zs_last_error();
  setrlimit(RLIMIT_FSIZE, &old);
  ZS_EXPECT(rc == ZS_ERR_IO, "commit under RLIMIT_FSIZE: rank %d: %d: %s", rank, (int)rc, m);
  if (rank == world - 1)
    ZS_EXPECT(strstr(m, "cannot reserve") && strstr(m, "u0.master") && strstr(m, root),
              "rank %d: '%s' does not name the file", rank, m);
  else {
    char r[128];
    snprintf(r, sizeof r, "rank %d could not allocate its buffers or open its NVMe tier",
             world - 1);
    ZS_EXPECT(strstr(m, r) != NULL, "rank %d: '%s' does not name rank %d", rank, m, world - 1);
  }
  ZS_EXPECT(e && !e->tiers.nvme, "rank %d: the tier is still open after the failed commit", rank);
  MPI_Barrier(MPI_COMM_WORLD);
  ZS_EXPECT(leftovers() == 0, "rank directories left under %s after the failed commit", root);
  MPI_Barrier(MPI_COMM_WORLD);
  zs_memory mem;
  ZS_OK_OR_DIE(zs_engine_memory(e, &mem));
  ZS_EXPECT(mem.host_pinned.cur == 0 && mem.total.cur == 0, "rank %d: %zu bytes still booked", rank,
            (size_t)mem.total.cur);
  zs_engine_destroy(e);
  if (rank == 0) printf("RLIMIT_FSIZE at commit: every rank refused, nothing left\n");
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_nvme_fail");
}
