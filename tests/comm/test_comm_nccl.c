/* GPU collectives (CUDA builds; prints a skip line and passes without a GPU). Under mpirun the
 * same reference cases as test_comm_mpi run on device buffers through the nccl backend and the
 * mpi-staged backend, in the world group and in color = rank % 2 sub-groups. More ranks than GPUs
 * on one host: each rank gets its own NCCL_HOSTID, so NCCL accepts two ranks on one GPU (it then
 * talks over sockets). With 2+ ranks, a silent rank 1 must give rank 0 ZS_ERR_TIMEOUT on sync. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <time.h>

#include "test_comm_ref.h"

/* Device copy of host bytes. */
static void *dev_up(const void *h, size_t b) {
  void *d = NULL;
  if (cudaMalloc(&d, b ? b : 1) != cudaSuccess || cudaMemcpy(d, h, b, cudaMemcpyHostToDevice)) {
    fprintf(stderr, "cudaMalloc/cudaMemcpy of %zu bytes failed\n", b);
    exit(1);
  }
  return d;
}

/* Device bytes back to host. */
static void dev_down(void *h, const void *d, size_t b) {
  if (cudaMemcpy(h, d, b, cudaMemcpyDeviceToHost) != cudaSuccess) {
    fprintf(stderr, "cudaMemcpy back failed\n");
    exit(1);
  }
}

/* Frees a device mirror. */
static void dev_rel(void *d) {
  cudaFree(d);
}

/* Every reference case on one backend (ZS_COMM=which). */
static void backend_cases(zs_comm *comm, const char *which, const char *want, void *stream) {
  int wr = zs_comm_rank(comm), ws = zs_comm_size(comm);
  setenv("ZS_COMM", which, 1);
  zs_coll *w = NULL, *sub = NULL;
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CUDA, 60.0, &w));
  ZS_EXPECT(!strcmp(zs_coll_backend(w), want), "backend %s, want %s", zs_coll_backend(w), want);
  int *mem = calloc((size_t)ws + 1, sizeof(int)), *gm = calloc((size_t)ws + 1, sizeof(int)), gs = 0;
  if (!mem || !gm) exit(2);
  for (int i = 0; i < ws; i++)
    mem[i] = i;
  all_cases(w, mem);
  ZS_OK_OR_DIE(zs_coll_split(w, wr % 2, wr, &sub));
  for (int i = 0; i < ws; i++)
    if (i % 2 == wr % 2) gm[gs++] = i;
  ZS_EXPECT(zs_coll_size(sub) == gs && gm[zs_coll_rank(sub)] == wr, "%s split", which);
  all_cases(sub, gm);
  zs_coll_destroy(sub);
  zs_coll_destroy(w);
  free(mem);
  free(gm);
  unsetenv("ZS_COMM");
  (void)stream;
}

/* Rank 1 never joins an all-reduce: rank 0's sync must time out and name the wait. */
static void nccl_timeout(zs_comm *comm, void *stream) {
  int wr = zs_comm_rank(comm);
  zs_coll *w = NULL;
  setenv("ZS_COMM", "nccl", 1);
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CUDA, 60.0, &w));
  ZS_OK_OR_DIE(zs_coll_barrier(w));
  if (wr == 0) {
    float *d = dev_up((float[4]){1, 2, 3, 4}, 16);
    zs_coll_set_timeout(w, 2.0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    zs_status rc = zs_coll_all_reduce(w, d, d, 4, ZS_CDT_F32, stream);
    if (rc == ZS_OK) rc = zs_coll_sync(w, stream);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ZS_EXPECT(rc == ZS_ERR_TIMEOUT, "got %s (%s)", zs_status_str(rc), zs_last_error());
    ZS_EXPECT(dt < 2.0 + 5.0, "timed out after %.1f s", dt);
    ZS_EXPECT_STATUS(zs_coll_barrier(w), ZS_ERR_COMM);
    cudaStreamSynchronize(stream); /* the aborted kernel must have been released */
    cudaFree(d);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  zs_coll_destroy(w);
  unsetenv("ZS_COMM");
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  me_world = zs_comm_rank(comm);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    if (me_world == 0) printf("test_comm_nccl: SKIP (no CUDA device)\n");
    zs_comm_destroy(comm);
    return 0;
  }
  if (comm->local_size > ndev) {
    char host[64];
    snprintf(host, sizeof host, "zs-test-rank-%d", me_world);
    setenv("NCCL_HOSTID", host, 1);
  }
  ZS_EXPECT(cudaSetDevice(comm->local_rank % ndev) == cudaSuccess, "cudaSetDevice");
  cudaStream_t s = NULL;
  ZS_EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
  zs_test_mem m = {dev_up, dev_down, dev_rel, s};
  tmem = &m;
  backend_cases(comm, "nccl", "nccl", s);
  backend_cases(comm, "mpi", "mpi-staged", s);
  tmem = NULL;
  if (zs_comm_size(comm) >= 2) nccl_timeout(comm, s);
  cudaStreamDestroy(s);
  zs_comm_destroy(comm);
  if (me_world == 0 && !zs_test_failures) printf("test_comm_nccl: OK\n");
  ZS_TEST_END("test_comm_nccl");
}
