/* Collective benchmark: all-gather, reduce-scatter, all-reduce and all-to-all through zshard's
 * comm layer (the backend the engine would use: MPI on the CPU, NCCL on CUDA), for message sizes
 * from 4 KiB to 64 MiB, reporting time and bus bandwidth (the nccl-tests convention: algorithm
 * bandwidth x 2(N-1)/N for reduce-scatter/all-gather style traffic, x 2(N-1)/N twice for
 * all-reduce). Uses internal headers: it measures the layer itself, not an example.
 * Usage: mpirun -np N collectives [--device cpu|cuda] [--max-mib M] [--iters K] [--csv FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "device/device.h"

#include "bench_util.h"

typedef enum { OP_ALL_GATHER, OP_REDUCE_SCATTER, OP_ALL_REDUCE, OP_ALL_TO_ALL, OP_N } op_kind;
static const char *op_name[OP_N] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all"};

/* One collective of `bytes` total (fp32), per the op's count convention. */
static zs_status run_op(zs_coll *c, op_kind op, void *a, void *b, size_t bytes, void *stream) {
  const size_t n = bytes / 4, N = (size_t)zs_coll_size(c), blk = n / N;
  switch (op) {
  case OP_ALL_GATHER:
    return zs_coll_all_gather(c, a, b, blk, ZS_CDT_F32, stream);
  case OP_REDUCE_SCATTER:
    return zs_coll_reduce_scatter(c, a, b, blk, ZS_CDT_F32, stream);
  case OP_ALL_REDUCE:
    return zs_coll_all_reduce(c, a, b, n, ZS_CDT_F32, stream);
  case OP_ALL_TO_ALL:
    return zs_coll_all_to_all(c, a, b, blk, ZS_CDT_F32, stream);
  default:
    return ZS_ERR_INVALID_ARG;
  }
}

/* Bus-bandwidth factor of op for N ranks (nccl-tests convention). */
static double bus_factor(op_kind op, int N) {
  double f = (double)(N - 1) / N;
  return op == OP_ALL_REDUCE ? 2 * f : f;
}

int main(int argc, char **argv) {
  int cuda = 0, iters = 10;
  size_t max_mib = 64;
  const char *csv = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--device"))
      cuda = !strcmp(argv[i + 1], "cuda");
    else if (!strcmp(argv[i], "--max-mib"))
      max_mib = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters"))
      iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--csv"))
      csv = argv[i + 1];
  }
  zs_comm *comm = NULL;
  DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm), N = zs_comm_size(comm);
  if (cuda && zs_dev_cuda_count() == 0) {
    if (rank == 0) printf("SKIP: no CUDA device\n");
    zs_comm_destroy(comm);
    return 0;
  }
  zs_dev dev;
  DIE(zs_dev_open(&dev, cuda ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU,
                  cuda ? comm->local_rank % zs_dev_cuda_count() : -1));
  zs_coll *c = NULL;
  DIE(zs_coll_open(comm, dev.kind, 60.0, &c));
  const size_t maxb = max_mib << 20;
  void *a = NULL, *b = NULL;
  DIE(zs_dev_alloc(&dev, maxb, &a, NULL));
  DIE(zs_dev_alloc(&dev, maxb, &b, NULL));
  DIE(zs_dev_zero(&dev, a, maxb, NULL));
  DIE(zs_dev_zero(&dev, b, maxb, NULL));
  FILE *f = (rank == 0 && csv) ? fopen(csv, "w") : NULL;
  if (f) fprintf(f, "backend,world,op,bytes,us,algbw_gbs,busbw_gbs\n");
  if (rank == 0)
    printf("collectives: backend %s, world %d, fp32\n%-15s %12s %12s %12s %12s\n",
           zs_coll_backend(c), N, "op", "bytes", "time (us)", "algbw GB/s", "busbw GB/s");
  double best_bus = 0;
  const char *best_op = "";
  for (int op = 0; op < OP_N; op++) {
    for (size_t bytes = 4096; bytes <= maxb; bytes *= 4) {
      const size_t tb = bytes / (4 * (size_t)N) * 4 * (size_t)N; /* divisible into N blocks */
      if (tb == 0) continue;
      DIE(run_op(c, (op_kind)op, a, b, tb, dev.comm_stream)); /* warm-up */
      DIE(zs_coll_sync(c, dev.comm_stream));
      DIE(zs_coll_barrier(c));
      double t0 = bench_now();
      for (int k = 0; k < iters; k++)
        DIE(run_op(c, (op_kind)op, a, b, tb, dev.comm_stream));
      DIE(zs_coll_sync(c, dev.comm_stream));
      double us = (bench_now() - t0) / iters * 1e6;
      double alg = (double)tb / (us * 1e-6) / 1e9, bus = alg * bus_factor((op_kind)op, N);
      if (bus > best_bus) {
        best_bus = bus;
        best_op = op_name[op];
      }
      if (rank == 0) {
        printf("%-15s %12zu %12.1f %12.3f %12.3f\n", op_name[op], tb, us, alg, bus);
        if (f)
          fprintf(f, "%s,%d,%s,%zu,%.2f,%.4f,%.4f\n", zs_coll_backend(c), N, op_name[op], tb, us,
                  alg, bus);
      }
    }
  }
  if (rank == 0)
    printf("headline: collectives (%s, world %d): best bus bandwidth %.2f GB/s (%s)\n",
           zs_coll_backend(c), N, best_bus, best_op);
  if (f) fclose(f);
  zs_dev_free(&dev, a, NULL);
  zs_dev_free(&dev, b, NULL);
  zs_coll_destroy(c);
  zs_dev_close(&dev);
  zs_comm_destroy(comm);
  return 0;
}
