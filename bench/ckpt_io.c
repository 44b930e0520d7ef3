/* Checkpoint throughput: zs_engine_save and zs_engine_load of a GPT-2 d12-sized model (124M
 * parameters: 1.49 GB of fp32 master + Adam m + v) on the CPU device at stage 3, on however many
 * ranks mpirun starts. Each measurement starts cold: the checkpoint's files are dropped from the
 * page cache (posix_fadvise DONTNEED after the save) so the load reads the disk. Prints one line
 * per repetition and a final "ckpt_io:" line with the median seconds and GB/s.
 * Usage: mpirun -np N ckpt_io --dir DIR [--reps 3] [--layers 12] */
#include <fcntl.h>
#include <ftw.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zshard.h"

#include "bench_util.h"

static int evict(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)f;
  if (flag != FTW_F) return 0;
  int fd = open(path, O_RDONLY);
  if (fd >= 0) {
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  return 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *dir = NULL;
  int reps = 3, L = 12;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--layers")) L = atoi(argv[i + 1]);
  }
  if (!dir || reps < 1 || reps > 50) {
    fprintf(stderr, "usage: ckpt_io --dir DIR [--reps 3] [--layers 12]\n");
    return 2;
  }
  zs_comm *comm;
  DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.ckpt_keep = 1;
  zs_engine *e;
  DIE(zs_engine_create(&c, comm, &e));
  bench_add_gpt2(e, L);
  DIE(zs_engine_commit(e));
  int64_t params = 0;
  const int64_t most = 50304 * 768; /* the largest tensor: wte */
  float *h = malloc((size_t)most * sizeof *h);
  for (int64_t i = 0; i < most; i++)
    h[i] = (float)((i * 2654435761u) % 1000) * 1e-3f;
  for (int u = 0; u < zs_engine_num_units(e); u++)
    for (int t = 0; zs_unit_numel(zs_engine_unit(e, u), t) > 0; t++) {
      DIE(zs_unit_set_param(zs_engine_unit(e, u), t, h));
      params += zs_unit_numel(zs_engine_unit(e, u), t);
    }
  free(h);
  const double bytes = (double)params * 12.0; /* master + m + v, fp32 */
  double *ts = calloc((size_t)reps, sizeof *ts), *tl = calloc((size_t)reps, sizeof *tl);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    DIE(zs_engine_save(e, dir));
    MPI_Barrier(MPI_COMM_WORLD);
    ts[r] = bench_now() - t0;
    if (rank == 0) nftw(dir, evict, 16, FTW_PHYS);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = bench_now();
    DIE(zs_engine_load(e, dir));
    MPI_Barrier(MPI_COMM_WORLD);
    tl[r] = bench_now() - t0;
    if (rank == 0) nftw(dir, evict, 16, FTW_PHYS);
    if (rank == 0)
      printf("rep %d: save %.3f s (%.2f GB/s), load %.3f s (%.2f GB/s)\n", r, ts[r],
             bytes / ts[r] / 1e9, tl[r], bytes / tl[r] / 1e9);
  }
  qsort(ts, (size_t)reps, sizeof *ts, cmp_d);
  qsort(tl, (size_t)reps, sizeof *tl, cmp_d);
  if (rank == 0)
    printf("ckpt_io: ranks %d params %lld state %.3f GB save %.3f s %.3f GB/s load %.3f s %.3f "
           "GB/s\n",
           world, (long long)params, bytes / 1e9, ts[reps / 2], bytes / ts[reps / 2] / 1e9,
           tl[reps / 2], bytes / tl[reps / 2] / 1e9);
  free(ts);
  free(tl);
  zs_engine_destroy(e);
  zs_comm_destroy(comm);
  return 0;
}
