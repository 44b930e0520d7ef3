/* The NVMe tier's disk at commit, on a small file system of its own (nvme_full_fs.sh: a loop-
 * mounted ext4 that every rank of this host shares):
 *  - a killed run's tier directory (its lock file there, nobody holding it) is reclaimed, so a
 *    model that fits only without it commits; a live run's directory (its lock held) and one
 *    without a lock file stay untouched, and zs_engine_info says what was reclaimed;
 *  - ranks that each fit the free space alone but not together are refused on every rank
 *    before any file is reserved, the message giving the ranks' total and naming the other
 *    runs' directories that hold space; nothing of ours is left on the disk.
 * Usage: test_engine_nvme_disk DIR (2 ranks or more, one host). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <mpi.h>
#include <unistd.h>

#include "zs_test.h"

static const char *root;
static int rank, world;
static zs_comm *comm;

/* The bytes free on root for this user. */
static uint64_t free_bytes(void) {
  struct statvfs sv;
  ZS_EXPECT(statvfs(root, &sv) == 0, "statvfs %s: %s", root, strerror(errno));
  return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* The configuration: every unit's AdamW state on the tier (a host cap under it). */
static void config(zs_config *c) {
  zs_config_default(c);
  c->stage = 1;
  c->offload = ZS_OFFLOAD_OPTIMIZER;
  c->offload_allow_unpinned = 1;
  c->offload_chunk = 16384;
  c->offload_host_bytes = 4u << 20;
  c->nvme_path = root;
  c->comm_timeout_s = 120;
}

/* The planner's disk bytes per rank for a one-unit model of n elements. */
static size_t disk_of(int64_t n) {
  zs_config c;
  config(&c);
  zs_plan_report r;
  ZS_OK_OR_DIE(zs_plan_model(&c, world, &n, 1, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_EXPECT(r.nvme_units == 1, "the unit is not on the tier: %s", r.verdict);
  return r.disk_bytes;
}

/* Elements of a one-unit model whose tier files take about `bytes` per rank, and the planner's
   disk bytes per rank for it. */
static int64_t model_for(uint64_t bytes, size_t *disk) {
  const int64_t n0 = (int64_t)(bytes / 8) * world;
  const int64_t n = (int64_t)((double)n0 * (double)bytes / (double)disk_of(n0));
  *disk = disk_of(n);
  return n;
}

static zs_status commit(int64_t n, zs_engine **out) {
  zs_config c;
  config(&c);
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, out));
  const zs_tensor_desc t = {"w", 1, {n, 0, 0, 0}, 0};
  zs_unit *u = NULL;
  ZS_OK_OR_DIE(zs_engine_add_unit(*out, "u0", 1, &t, &u));
  return zs_engine_commit(*out);
}

/* Makes root/name with `bytes` of file in it and, when lock, its lock file; held: the lock
   kept (the fd is returned: this process is that run). */
static int make_dir(const char *name, uint64_t bytes, int lock, int held) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", root, name);
  ZS_EXPECT(mkdir(p, 0700) == 0, "mkdir %s: %s", p, strerror(errno));
  snprintf(p, sizeof p, "%s/%s/u0.m", root, name);
  int fd = open(p, O_RDWR | O_CREAT, 0600);
  ZS_EXPECT(fd >= 0 && fallocate(fd, 0, 0, (off_t)bytes) == 0, "fill %s: %s", p, strerror(errno));
  close(fd);
  if (!lock) return -1;
  snprintf(p, sizeof p, "%s/%s/.lock", root, name);
  fd = open(p, O_RDWR | O_CREAT, 0600);
  ZS_EXPECT(fd >= 0, "lock %s: %s", p, strerror(errno));
  if (held) {
    ZS_EXPECT(flock(fd, LOCK_EX) == 0, "flock %s: %s", p, strerror(errno));
    return fd;
  }
  close(fd); /* its run is dead: nobody holds the lock */
  return -1;
}

static int exists(const char *name) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", root, name);
  return access(p, F_OK) == 0;
}

/* Our own tier directories under root (rank<R>-<pid>-...: this run's pids). */
static int ours(void) {
  char me[64];
  snprintf(me, sizeof me, "rank%d-%ld-", rank, (long)getpid());
  DIR *d = opendir(root);
  int n = 0;
  for (struct dirent *x; d && (x = readdir(d));)
    n += !strncmp(x->d_name, me, strlen(me));
  if (d) closedir(d);
  return n;
}

int main(int argc, char **argv) {
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  rank = zs_comm_rank(comm);
  world = zs_comm_size(comm);
  if (argc < 2 || world < 2) {
    fprintf(stderr, "usage: mpirun -np 2 test_engine_nvme_disk DIR\n");
    return 2;
  }
  root = argv[1];
  uint64_t free0 = free_bytes();
  MPI_Bcast(&free0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  ZS_EXPECT(free0 < (256ull << 20), "%s has %llu bytes free: not a small file system", root,
            (unsigned long long)free0);
  const uint64_t part = free0 / 20; /* 5% of the disk */
  char live[64], legacy[] = "rank5-1-0", dead[] = "rank0-999999-7";
  snprintf(live, sizeof live, "rank3-%ld-900", (long)getpid());
  int live_fd = -1;
  if (rank == 0) {
    live_fd = make_dir(live, part, 1, 1);
    make_dir(legacy, part, 0, 0);
    make_dir(dead, 10 * part, 1, 0);
  }
  MPI_Bcast(live, sizeof live, MPI_CHAR, 0, MPI_COMM_WORLD);

  /* Reclaim: the ranks need 12 parts together, 8 are free until the dead run's 10 come back. */
  size_t disk = 0;
  const int64_t n = model_for(12 * part / (uint64_t)world, &disk);
  zs_engine *e = NULL;
  zs_status rc = commit(n, &e);
  ZS_EXPECT(rc == ZS_OK, "rank %d: commit with a dead run's tier on the disk: %s", rank,
            zs_last_error());
  ZS_EXPECT(!exists(dead), "the dead run's %s/%s is still there", root, dead);
  ZS_EXPECT(exists(live) && exists(legacy), "a live run's %s or the lockless %s was removed", live,
            legacy);
  if (rc == ZS_OK && rank == 0) {
    const char *info = zs_engine_info(e);
    ZS_EXPECT(strstr(info, "tier directories reclaimed") != NULL, "info: %s", info);
    printf("reclaim: %s\n", strstr(info, "; nvme:"));
  }
  zs_engine_destroy(e);
  MPI_Barrier(MPI_COMM_WORLD);

  /* Per disk: each rank's files fit the free space alone (18 parts), not together. */
  const uint64_t now = free_bytes();
  const int64_t m = model_for(now * 6 / 10, &disk);
  ZS_EXPECT(disk < now && disk * (size_t)world > now, "sizes: %zu per rank, %llu free", disk,
            (unsigned long long)now);
  rc = commit(m, &e);
  const char *msg = zs_last_error();
  char want[64];
  snprintf(want, sizeof want, "for the %d ranks of this host", world);
  ZS_EXPECT(rc == ZS_ERR_IO && strstr(msg, want) && strstr(msg, live) &&
                strstr(msg, "a live run's") && strstr(msg, legacy) && strstr(msg, "no lock"),
            "rank %d: commit of %zu bytes per rank, %llu free: %d: %s", rank, disk,
            (unsigned long long)now, (int)rc, msg);
  if (rank == 0) printf("per disk: %s\n", msg);
  zs_engine_destroy(e);
  MPI_Barrier(MPI_COMM_WORLD);
  ZS_EXPECT(ours() == 0, "rank %d: its tier directory is left under %s", rank, root);
  ZS_EXPECT(free_bytes() + (64u << 10) >= now, "free space %llu after the refusal, %llu before",
            (unsigned long long)free_bytes(), (unsigned long long)now);
  if (live_fd >= 0) close(live_fd);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_nvme_disk");
}
