/* The NVMe tier's range reads and writes (src/tier/nvme_range.c) and its life in the engine
 * (nvme_tier.c): an engine whose trainable units all have their optimizer state on the tier (a
 * frozen unit has none), random ranges of every array written and read against a plain float
 * array kept here (the reference), and the files read back with buffered I/O (not the code under
 * test) after every write; the zero tail past each array; bad ranges and a unit off the tier
 * refused; zs_unit_set_param / zs_unit_get_param through the tier (sharded master: read and
 * all-gather); the ledger's host bytes equal to the planner's; a deleted file an ZS_ERR_IO naming
 * it; the directory gone after destroy. Any number of ranks (each has its own directory).
 * Usage: test_engine_nvme_range DIR (a directory on a real disk: not tmpfs). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "tier/nvme_tier.h"
#include "offload/nvme_test_util.h"
#include "zs_test.h"

/* Units 0..2 trainable (on the tier), unit 3 frozen (no optimizer state: never on the tier). */
#define NU 4
static const int64_t tshape[NU][3] = {
    {300001, 17, 500000}, {1000000, 0, 0}, {99999, 1234567, 7}, {64, 0, 0}};

/* The bytes [0, n) of file path as floats, read with buffered I/O; NULL when unreadable. */
static float *file_floats(const char *path, size_t n) {
  return nvt_read_file(path, n * 4);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const char *root = argc > 1 ? argv[1] : ".";
  nvt_require_root(root);
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_allow_unpinned = 1;
  c.offload_chunk = 1000; /* rounded up to 1024 elements: windows of 12 KiB, many per range */
  /* Under each rank's smallest unit's state (the host arena needs a few MiB of its own). */
  c.offload_host_bytes = world == 1 ? 8u << 20 : 4u << 20;
  c.nvme_path = root;
  c.comm_timeout_s = 60;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  zs_unit *units[NU];
  for (int i = 0; i < NU; i++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", i);
    zs_tensor_desc t[3];
    int nt = 0;
    for (int k = 0; k < 3 && tshape[i][k]; k++, nt++) {
      static const char *const tn[3] = {"a", "b", "c"};
      t[k] = (zs_tensor_desc){tn[k], 1, {tshape[i][k], 0, 0, 0}, k == 1};
    }
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, nt, t, &units[i]));
  }
  ZS_OK_OR_DIE(zs_unit_freeze(units[3], 1));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_EXPECT(e->tiers.nvme != NULL, "no tier: %s", zs_engine_info(e));
  const int ntier = 3, lo_unit = 0; /* units lo_unit..2 on the tier */
  const zs_engine_facts f = zs_test_facts(e);
  ZS_EXPECT(f.nvme && f.nvme_units == ntier && f.units == 4, "not %d of 4 units on the tier: %s",
            ntier, zs_engine_info(e));
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", zs_nvme_dir_path(e->tiers.nvme->dir));
  ZS_EXPECT(f.nvme_dir && strcmp(f.nvme_dir, dir) == 0, "the facts' directory %s is not %s",
            f.nvme_dir ? f.nvme_dir : "NULL", dir);
  /* Planner = ledger, to the byte (the staging booked as 36 x offload_chunk). */
  zs_memory mem, plan;
  ZS_OK_OR_DIE(zs_engine_memory(e, &mem));
  ZS_OK_OR_DIE(zs_engine_plan_memory(e, &plan));
  const size_t in_mem = lo_unit ? 12 * units[0]->opt_n : 0; /* unit 0's state in the arena */
  ZS_EXPECT(mem.host_pinned.cur == plan.host_pinned.cur &&
                mem.host_pinned.cur == 36 * 1000 + in_mem,
            "host_pinned: ledger %zu, plan %zu, want %zu", (size_t)mem.host_pinned.cur,
            (size_t)plan.host_pinned.cur, 36 * 1000 + in_mem);
  ZS_EXPECT(mem.optimizer.cur == 0, "optimizer bytes in memory: %zu", (size_t)mem.optimizer.cur);
  for (int i = lo_unit; i < 3; i++)
    ZS_EXPECT(units[i]->nv[0] && units[i]->nv[1] && units[i]->nv[2] && !units[i]->master &&
                  !units[i]->opt[0] && !units[i]->opt[1],
              "unit %d: files %p %p %p, memory %p %p %p", i, (void *)units[i]->nv[0],
              (void *)units[i]->nv[1], (void *)units[i]->nv[2], (void *)units[i]->master,
              units[i]->opt[0], units[i]->opt[1]);
  ZS_EXPECT(!units[3]->nv[0] && (lo_unit == 0 || !units[0]->nv[0]),
            "units off the tier have files");

  /* The reference: every array of every unit on the tier, zero at commit. */
  float *ref[3][3] = {{NULL}};
  size_t maxn = 0;
  for (int i = lo_unit; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      ref[i][j] = calloc(units[i]->opt_n, sizeof(float));
      if (units[i]->opt_n > maxn) maxn = units[i]->opt_n;
      float *f = file_floats(units[i]->nv[j]->path, units[i]->opt_n);
      ZS_EXPECT(f && memcmp(f, ref[i][j], units[i]->opt_n * 4) == 0,
                "unit %d array %d is not zero at commit", i, j);
      free(f);
    }
  uint64_t seed = 1234 + (uint64_t)rank;
  float *buf = malloc((maxn + 1) * sizeof(float));
  int nread = 0, nwrite = 0, bad = 0;
  for (int op = 0; op < 300 && !bad; op++) {
    const int i = lo_unit + (int)(nvt_rng(&seed) % (unsigned)ntier), j = (int)(nvt_rng(&seed) % 3);
    const size_t N = units[i]->opt_n;
    size_t first = nvt_rng(&seed) % (N + 1), n = N - first;
    if (nvt_rng(&seed) % 4) n = n ? nvt_rng(&seed) % (n < 5000 ? n + 1 : 5000) : 0;
    if (nvt_rng(&seed) % 2) { /* write */
      for (size_t k = 0; k < n; k++)
        buf[k] = (float)(nvt_rng(&seed) % 2000001) / 1000.0f - 1000.0f;
      ZS_OK_OR_DIE(zs_tier_nvme_ops.write(&e->tiers, units[i], j, first, n, buf));
      memcpy(ref[i][j] + first, buf, n * 4);
      nwrite++;
      float *f = file_floats(units[i]->nv[j]->path, N);
      if (!f || memcmp(f, ref[i][j], N * 4) != 0) bad = 1;
      ZS_EXPECT(!bad, "op %d: unit %d array %d after writing [%zu, +%zu): the file differs", op, i,
                j, first, n);
      free(f);
    } else {
      memset(buf, 0xff, (n + 1) * 4);
      ZS_OK_OR_DIE(zs_tier_nvme_ops.read(&e->tiers, units[i], j, first, n, buf));
      if (memcmp(buf, ref[i][j] + first, n * 4) != 0) bad = 1;
      ZS_EXPECT(!bad, "op %d: unit %d array %d: read [%zu, +%zu) differs", op, i, j, first, n);
      uint32_t past;
      memcpy(&past, buf + n, 4);
      ZS_EXPECT(past == 0xffffffffu, "op %d: the read wrote past its %zu elements", op, n);
      nread++;
    }
  }
  /* The tail of every file past its elements stays zero. */
  for (int i = lo_unit; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      const zs_nvme_file *f = units[i]->nv[j];
      unsigned char *b = nvt_read_file(f->path, (size_t)f->bytes);
      ZS_EXPECT(b != NULL, "cannot read %s", f->path);
      for (size_t k = units[i]->opt_n * 4; b && k < f->bytes; k++)
        if (b[k]) {
          ZS_EXPECT(0, "%s: byte %zu past the elements is %d", f->path, k, b[k]);
          break;
        }
      free(b);
    }
  /* Bad calls. */
  ZS_EXPECT_STATUS(zs_tier_nvme_ops.read(&e->tiers, units[2], 0, units[2]->opt_n, 1, buf),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_tier_nvme_ops.write(&e->tiers, units[2], 0, 1, units[2]->opt_n, buf),
                   ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_tier_nvme_ops.read(&e->tiers, units[2], 3, 0, 1, buf), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_tier_nvme_ops.read(&e->tiers, units[3], 0, 0, 1, buf), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'u3'") != NULL, "'%s' does not name the unit",
            zs_last_error());

  /* zs_unit_set_param / zs_unit_get_param through the tier: the master range of this rank's
     shard lands in the master file (element j at byte 4 j), and the gathered read gives the
     values set. */
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < units[i]->ntensors; k++) {
      const size_t nk = units[i]->lay.numel[k], base = units[i]->lay.off[k];
      float *h = malloc(nk * 4), *back = malloc(nk * 4);
      for (size_t x = 0; x < nk; x++)
        h[x] = (float)(i * 1000003 + k * 7919 + (int)x) * 0.001f;
      ZS_OK_OR_DIE(zs_unit_set_param(units[i], k, h));
      ZS_OK_OR_DIE(zs_unit_get_param(units[i], k, back));
      ZS_EXPECT(memcmp(h, back, nk * 4) == 0, "unit %d tensor %d: get_param differs from set", i,
                k);
      const size_t lo = units[i]->opt_off, hi = lo + units[i]->opt_n;
      for (size_t x = base; x < base + nk && ref[i][0]; x++)
        if (x >= lo && x < hi) ref[i][0][x - lo] = h[x - base];
      free(h);
      free(back);
    }
  for (int i = lo_unit; i < 3; i++) {
    float *f = file_floats(units[i]->nv[0]->path, units[i]->opt_n);
    ZS_EXPECT(f && memcmp(f, ref[i][0], units[i]->opt_n * 4) == 0,
              "unit %d: the master file differs from the params set", i);
    free(f);
  }

  /* A deleted file: ZS_ERR_IO naming it, for a read and a write. */
  const char *victim = units[1]->nv[ZS_ARR_OPT0 + 1]->path;
  ZS_EXPECT(unlink(victim) == 0, "cannot delete %s", victim);
  ZS_EXPECT_STATUS(zs_tier_nvme_ops.read(&e->tiers, units[1], ZS_ARR_OPT0 + 1, 0, 10, buf),
                   ZS_ERR_IO);
  ZS_EXPECT(strstr(zs_last_error(), victim) && strstr(zs_last_error(), "deleted"),
            "'%s' does not name %s", zs_last_error(), victim);
  ZS_EXPECT_STATUS(zs_tier_nvme_ops.write(&e->tiers, units[1], ZS_ARR_OPT0 + 1, 5, 10, buf),
                   ZS_ERR_IO);
  zs_engine_destroy(e);
  struct stat st;
  ZS_EXPECT(stat(dir, &st) != 0, "the tier directory %s is still there after destroy", dir);
  ZS_EXPECT(nread > 40 && nwrite > 40, "%d reads, %d writes", nread, nwrite);
  if (rank == 0) printf("rank 0 of %d: %d reads, %d writes checked\n", world, nread, nwrite);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      free(ref[i][j]);
  free(buf);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_nvme_range");
}
