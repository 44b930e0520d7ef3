/* Host <-> device copy rates on the GPU, and the optimizer's copy pipeline beside them:
 *
 *   bench_copy_rates [--mib 512] [--chunk-mib 0] [--threads 8] [--csv PATH]
 *
 *   pageable  cudaMemcpy from/to malloc'd (touched) memory, each direction
 *   pinned    cudaMemcpyAsync from/to cudaMallocHost memory, each direction, and both directions
 *             at once on two streams (what the pipeline overlaps: gradients down, params up)
 *   pipeline  zs_offload_stream (src/offload/pipeline.c) on fp32 gradients and params with the
 *             host state in the pinned arena: once with an update that does nothing (the copies
 *             alone) and once with the real fp32 AdamW over --threads workers. Its rate counts
 *             the bytes it must move: gradients down and params up, 8 bytes per element.
 * Each line: the best of 3 timed runs after a warm-up, in GB/s (1e9 bytes). The last line starts
 * with "headline:" and gives the no-op pipeline's rate as a fraction of the pinned both-ways
 * rate (the target is >= 0.8). --chunk-mib 0 keeps the engine's default chunk (ZS_OFFLOAD_CHUNK).
 * Without a GPU: "SKIP: no CUDA device". */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "device/device.h"
#include "offload/host_arena.h"
#include "optim/adamw/host_update.h"
#include "offload/pipeline.h"
#include "offload/worker_pool.h"

#include "bench_util.h"

/* The update that does nothing: the pipeline's copies alone. */
static void noop_update(zs_pool *pool, const void *c, const zs_opt_state *s, size_t lo, size_t len,
                        const void *grad, zs_dtype gdt, void *out, zs_dtype pdt) {
  (void)pool, (void)c, (void)s, (void)lo, (void)len, (void)grad, (void)gdt, (void)out, (void)pdt;
}

/* One pipeline call's update (zs_offload_stream's ctx): fn on the state. */
typedef struct {
  zs_pool *pool;
  zs_opt_host_fn fn;
  const zs_adamw_coef *c;
  const zs_opt_state *s;
} pipe_call;

static void pipe_chunk(void *ctx, size_t lo, size_t len, const void *grad, void *out) {
  const pipe_call *p = ctx;
  p->fn(p->pool, p->c, p->s, lo, len, grad, ZS_F32, out, ZS_F32);
}

typedef enum { H2D, D2H, BOTH } dir_t;

/* Seconds of the best of 3 runs of one copy pattern of `bytes` (each direction). */
static double time_copy(void *dev_a, void *dev_b, void *host_a, void *host_b, size_t bytes,
                        dir_t dir, int async, cudaStream_t s0, cudaStream_t s1) {
  double best = 1e30;
  for (int rep = 0; rep < 4; rep++) { /* rep 0: warm-up */
    CU_OK(cudaDeviceSynchronize());
    double t = bench_now();
    if (dir != D2H) {
      if (async)
        CU_OK(cudaMemcpyAsync(dev_a, host_a, bytes, cudaMemcpyHostToDevice, s0));
      else
        CU_OK(cudaMemcpy(dev_a, host_a, bytes, cudaMemcpyHostToDevice));
    }
    if (dir != H2D) {
      if (async)
        CU_OK(cudaMemcpyAsync(host_b, dev_b, bytes, cudaMemcpyDeviceToHost, dir == BOTH ? s1 : s0));
      else
        CU_OK(cudaMemcpy(host_b, dev_b, bytes, cudaMemcpyDeviceToHost));
    }
    CU_OK(cudaDeviceSynchronize());
    t = bench_now() - t;
    if (rep && t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  size_t mib = 512, chunk_mib = 0;
  int threads = 8;
  const char *csv = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--chunk-mib") && i + 1 < argc)
      chunk_mib = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--mib 512] [--chunk-mib 0] [--threads 8] [--csv PATH]\n",
              argv[0]);
      return 2;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    printf("SKIP: no CUDA device\n");
    return 0;
  }
  const size_t bytes = mib << 20, n = bytes / 4;
  cudaStream_t s0, s1;
  CU_OK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CU_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  void *da, *db, *pa, *pb;
  CU_OK(cudaMalloc(&da, bytes));
  CU_OK(cudaMalloc(&db, bytes));
  CU_OK(cudaMemset(da, 0, bytes));
  CU_OK(cudaMemset(db, 0, bytes));
  CU_OK(cudaMallocHost(&pa, bytes));
  CU_OK(cudaMallocHost(&pb, bytes));
  char *ua = malloc(bytes), *ub = malloc(bytes);
  if (!ua || !ub) {
    fprintf(stderr, "out of host memory for 2 x %zu MiB\n", mib);
    return 1;
  }
  memset(ua, 1, bytes), memset(ub, 1, bytes), memset(pa, 1, bytes), memset(pb, 1, bytes);

  struct {
    const char *name;
    double gbs;
  } rows[8];
  int nr = 0;
#define ROW(nm, secs, nbytes)                                                                      \
  (rows[nr].name = (nm), rows[nr++].gbs = (double)(nbytes) / (secs) / 1e9)
  ROW("pageable_h2d", time_copy(da, db, ua, ub, bytes, H2D, 0, s0, s1), bytes);
  ROW("pageable_d2h", time_copy(da, db, ua, ub, bytes, D2H, 0, s0, s1), bytes);
  ROW("pinned_h2d", time_copy(da, db, pa, pb, bytes, H2D, 1, s0, s1), bytes);
  ROW("pinned_d2h", time_copy(da, db, pa, pb, bytes, D2H, 1, s0, s1), bytes);
  ROW("pinned_both", time_copy(da, db, pa, pb, bytes, BOTH, 1, s0, s1), 2 * bytes);
  const double pinned_both = rows[nr - 1].gbs;
  free(ua), free(ub);
  CU_OK(cudaFreeHost(pa));
  CU_OK(cudaFreeHost(pb));

  /* The pipeline: fp32 gradients on the device (da), fp32 params out to the device (db), the
     fp32 master, m and v in the pinned arena. */
  zs_dev d;
  DIE(zs_dev_open(&d, ZS_DEVICE_CUDA, 0));
  zs_host_arena *arena;
  DIE(zs_host_arena_create(0, 0, 0, &arena));
  zs_opt_state hs;
  memset(&hs, 0, sizeof hs);
  DIE(zs_host_arena_alloc(arena, bytes, (void **)&hs.master));
  DIE(zs_host_arena_alloc(arena, bytes, &hs.state[0]));
  DIE(zs_host_arena_alloc(arena, bytes, &hs.state[1]));
  memset(hs.master, 0, bytes), memset(hs.state[0], 0, bytes), memset(hs.state[1], 0, bytes);
  zs_pool *pool = NULL;
  if (threads > 1) DIE(zs_pool_create(threads, ZS_POOL_UNBOUND, &pool));
  zs_offload_pipe pipe;
  zs_config cfg, run;
  zs_config_default(&cfg);
  DIE(zs_config_resolve(&cfg, &run, NULL, 0)); /* the engine's chunk (ZS_OFFLOAD_CHUNK) */
  size_t chunk = chunk_mib ? (chunk_mib << 20) / 4 : run.offload_chunk;
  DIE(zs_offload_pipe_init(&pipe, &d, arena, chunk));
  zs_opt_host_fn adamw;
  DIE(zs_host_update_for(ZS_MASTER_FP32, ZS_F32, &adamw));
  zs_adamw_coef c = {1.0f, 0.9f, 0.1f, 0.95f, 0.05f, 1.0f, 1.0f, 1e-8f, 0.0f, -1e-4f};
  const struct {
    const char *name;
    zs_opt_host_fn fn;
  } modes[2] = {{"pipeline_noop", noop_update}, {"pipeline_adamw", adamw}};
  for (int k = 0; k < 2; k++) {
    double best = 1e30;
    for (int rep = 0; rep < 4; rep++) {
      CU_OK(cudaDeviceSynchronize());
      double t = bench_now();
      pipe_call pc = {pool, modes[k].fn, &c, &hs};
      DIE(zs_offload_stream(&d, &pipe, pipe_chunk, &pc, da, ZS_F32, db, ZS_F32, 0, 0, n));
      CU_OK(cudaDeviceSynchronize());
      t = bench_now() - t;
      if (rep && t < best) best = t;
    }
    ROW(modes[k].name, best, 2 * bytes);
  }
  zs_offload_pipe_free(&pipe, &d, arena);
  if (pool) zs_pool_destroy(pool);
  zs_host_arena_destroy(arena);
  zs_dev_close(&d);
  CU_OK(cudaFree(da));
  CU_OK(cudaFree(db));

  struct cudaDeviceProp prop;
  CU_OK(cudaGetDeviceProperties(&prop, 0));
  printf("%s | %zu MiB each way | pipeline chunk %zu elements, %d threads\n", prop.name, mib, chunk,
         threads);
  printf("%-16s %10s\n", "copy", "GB/s");
  for (int i = 0; i < nr; i++)
    printf("%-16s %10.2f\n", rows[i].name, rows[i].gbs);
  if (csv) {
    FILE *f = fopen(csv, "w");
    if (!f) {
      fprintf(stderr, "cannot write %s\n", csv);
      return 1;
    }
    fprintf(f, "copy,gb_per_s,mib,chunk_elems,threads\n");
    for (int i = 0; i < nr; i++)
      fprintf(f, "%s,%.3f,%zu,%zu,%d\n", rows[i].name, rows[i].gbs, mib, chunk, threads);
    fclose(f);
  }
  printf("headline: pinned h2d %.1f / d2h %.1f / both %.1f GB/s, pageable h2d %.1f GB/s; pipeline "
         "copies %.1f GB/s = %.2fx pinned both ways (target >= 0.8), with AdamW %.1f GB/s\n",
         rows[2].gbs, rows[3].gbs, pinned_both, rows[0].gbs, rows[5].gbs, rows[5].gbs / pinned_both,
         rows[6].gbs);
  return 0;
}
