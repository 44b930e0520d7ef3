/* GPU tier of the stage-3 promises (CUDA builds; without a GPU it prints one SKIP line and
 * passes). One mode per run:
 *   pool     (1 rank)  the engine's stream-ordered pool keeps what a step reserved: after a
 *                      synchronised step the GPU's free memory stays lower by at least a unit,
 *                      and a second step takes no more (the default pool's threshold of 0 would
 *                      hand it back at every synchronisation and map it again next step).
 *   overlap  (2 ranks, nccl) a gather waits for its own all-gather only: while rank 1 holds
 *                      back its reduce-scatter for 3 s, rank 0's compute stream runs work
 *                      queued after gathering the (prefetched) next unit at once.
 *   timeout  (2 ranks, nccl) rank 1 stops answering; rank 0's zs_kernels_copy to the host (a
 *                      loss read) waits behind a collective and must return ZS_ERR_TIMEOUT
 *                      within comm_timeout_s + 5 s (zs_kernels_watch), not hang; the engine is
 *                      then failed and destroy returns.
 * Usage: test_engine_cuda_rules pool|overlap|timeout */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zs_test.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static zs_engine *make(zs_comm *comm, int prefetch, double timeout, int64_t n, zs_unit **u,
                       int nu) {
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.device = ZS_DEVICE_CUDA;
  c.prefetch_units = prefetch;
  c.comm_timeout_s = timeout;
  zs_engine *e = NULL;
  const zs_tensor_desc t[1] = {{"w", 1, {n, 0, 0, 0}, 0}};
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  for (int i = 0; i < nu; i++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", i);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, name, 1, t, &u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  return e;
}

/* A whole training step in the plain order (gradients left zero). */
static void plain_step(zs_engine *e, zs_unit **u, int nu) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = 0; i < nu; i++) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  for (int i = nu - 1; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    ZS_EXPECT(zs_unit_grad(u[i], 0) != NULL, "grad: %s", zs_last_error());
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
}

static size_t free_bytes(void) {
  size_t f = 0, t = 0;
  cudaDeviceSynchronize();
  cudaMemGetInfo(&f, &t);
  return f;
}

static void pool(zs_comm *comm) {
  const int64_t n = 16 << 20; /* 64 MiB per unit */
  zs_unit *u[2];
  zs_engine *e = make(comm, 1, 60, n, u, 2);
  const size_t f0 = free_bytes();
  plain_step(e, u, 2);
  const size_t f1 = free_bytes();
  plain_step(e, u, 2);
  const size_t f2 = free_bytes();
  const size_t unit = (size_t)n * 4;
  printf("pool: free after commit %zu, after step 1 %zu, after step 2 %zu\n", f0, f1, f2);
  ZS_EXPECT(f0 > f1 && f0 - f1 >= unit,
            "the step's buffers were handed back at synchronisation (free %zu -> %zu)", f0, f1);
  ZS_EXPECT(f1 <= f2 + ((size_t)4 << 20), "a second step reserved more (free %zu -> %zu)", f1, f2);
  zs_engine_destroy(e);
}

static void overlap(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  zs_unit *u[3];
  zs_engine *e = make(comm, 1, 60, 1 << 20, u, 3);
  zs_kernels *k = NULL;
  void *buf = NULL;
  ZS_OK_OR_DIE(zs_kernels_create(ZS_DEVICE_CUDA, ZS_F32, zs_engine_stream(e), &k));
  ZS_OK_OR_DIE(zs_kernels_alloc(k, 1 << 20, &buf));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = 0; i < 3; i++) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_unit_gather(u[2])); /* turn: prefetches u1 on both ranks */
  ZS_EXPECT(zs_unit_grad(u[2], 0) != NULL, "grad");
  ZS_OK_OR_DIE(zs_kernels_sync(k));
  const double hold = 3.0;
  if (rank == 1) sleep((unsigned)hold); /* its reduce-scatter of u2 comes late */
  ZS_OK_OR_DIE(zs_unit_grads_ready(u[2]));
  ZS_OK_OR_DIE(zs_unit_release(u[2]));
  const double t0 = now();
  ZS_OK_OR_DIE(zs_unit_gather(u[1])); /* prefetched: waits for u1's all-gather only */
  ZS_OK_OR_DIE(zs_kernels_zero(k, buf, 1 << 20));
  ZS_OK_OR_DIE(zs_kernels_sync(k));
  const double dt = now() - t0;
  if (rank == 0) {
    printf("overlap: compute work after gather(u1) done in %.3f s while the peer held its "
           "reduce-scatter for %.1f s\n",
           dt, hold);
    ZS_EXPECT(dt < hold / 2, "the compute stream waited %.2f s for the pending reduce-scatter", dt);
  }
  ZS_EXPECT(zs_unit_grad(u[1], 0) != NULL, "grad");
  ZS_OK_OR_DIE(zs_unit_grads_ready(u[1]));
  ZS_OK_OR_DIE(zs_unit_release(u[1]));
  ZS_OK_OR_DIE(zs_unit_gather(u[0]));
  ZS_OK_OR_DIE(zs_unit_grads_ready(u[0]));
  ZS_OK_OR_DIE(zs_unit_release(u[0]));
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
  zs_kernels_free(k, buf);
  zs_kernels_destroy(k);
  zs_engine_destroy(e);
}

static void timeout(zs_comm *comm) {
  const int rank = zs_comm_rank(comm);
  const double limit = 3.0;
  zs_unit *u[3];
  zs_engine *e = make(comm, 0, limit, 1 << 16, u, 3);
  zs_kernels *k = NULL;
  void *buf = NULL;
  float host[16];
  ZS_OK_OR_DIE(zs_kernels_create(ZS_DEVICE_CUDA, ZS_F32, zs_engine_stream(e), &k));
  ZS_OK_OR_DIE(zs_kernels_watch(k, e));
  ZS_OK_OR_DIE(zs_kernels_alloc(k, sizeof host, &buf));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = 0; i < 3; i++) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_unit_gather(u[2]));
  ZS_OK_OR_DIE(zs_kernels_sync(k));
  if (rank == 1) {
    sleep((unsigned)(limit + 6)); /* silent past rank 0's timeout */
    (void)zs_unit_grads_ready(u[2]);
    (void)zs_kernels_copy(k, host, buf, sizeof host); /* fails or times out: not checked */
  } else {
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[2])); /* reduce-scatter enqueued, the peer is silent */
    ZS_OK_OR_DIE(zs_unit_release(u[2]));
    ZS_OK_OR_DIE(zs_unit_gather(u[1])); /* its all-gather queues behind the reduce-scatter */
    const double t0 = now();
    zs_status rc = zs_kernels_copy(k, host, buf, sizeof host); /* the loss read of a loop */
    const double dt = now() - t0;
    printf("timeout: zs_kernels_copy -> %s after %.2f s: %s\n", zs_status_str(rc), dt,
           zs_last_error());
    ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "got %s, want ZS_ERR_TIMEOUT", zs_status_str(rc));
    ZS_EXPECT(dt >= 0.9 * limit && dt <= limit + 5, "returned after %.2f s (limit %.1f)", dt,
              limit);
    ZS_EXPECT(strstr(zs_last_error(), "zs_kernels_copy") != NULL, "names the wait: %s",
              zs_last_error());
    ZS_EXPECT_STATUS(zs_engine_step(e, NULL), ZS_ERR_STATE);
  }
  zs_kernels_free(k, buf);
  zs_kernels_destroy(k);
  const double t0 = now();
  zs_engine_destroy(e);
  if (rank == 0) ZS_EXPECT(now() - t0 < 10, "destroy after the timeout took %.1f s", now() - t0);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    if (zs_comm_rank(comm) == 0) printf("SKIP: no CUDA device\n");
    zs_comm_destroy(comm);
    return 0;
  }
  const char *mode = argc > 1 ? argv[1] : "pool";
  if (!strcmp(mode, "pool")) pool(comm);
  if (!strcmp(mode, "overlap")) overlap(comm);
  if (!strcmp(mode, "timeout")) timeout(comm);
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_cuda_rules");
}
