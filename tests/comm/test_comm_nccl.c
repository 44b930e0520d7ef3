/* GPU collectives (CUDA builds; prints "SKIP: no CUDA device" and passes without a GPU, fails on
 * any other CUDA failure). Under mpirun the same reference cases as test_comm_mpi run on device
 * buffers through the nccl backend and the mpi-staged backend, in the world group and in
 * color = rank % 2 sub-groups. More ranks than GPUs on one host: each rank gets its own
 * NCCL_HOSTID (and NCCL_SOCKET_IFNAME=lo), so NCCL accepts two ranks on one GPU (it then talks
 * over loopback sockets). With 2+ ranks, a silent rank 1 must give rank 0 ZS_ERR_TIMEOUT on sync,
 * and ranks that call different collectives must all get ZS_ERR_COMM from the divergence check.
 *
 * Every copy between the host and a device mirror runs on the stream the collectives use and is
 * waited for there (bounded): a cudaMemcpy from pageable memory goes on the legacy default stream,
 * which the non-blocking test stream does not wait for, and may return before its DMA lands. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <time.h>

#include "test_comm_ref.h"

static cudaStream_t g_stream; /* the stream of every collective and copy (main creates it) */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Polls s until idle: cudaSuccess, its error, or cudaErrorNotReady after limit_s (a test never
   blocks in an unbounded wait behind a collective). */
static cudaError_t settle(cudaStream_t s, double limit_s) {
  const double t0 = now_s();
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady && now_s() - t0 < limit_s) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return e;
}

/* Copies b bytes on g_stream, complete on return. The stream is idle first: a copy through
   pageable memory may wait inside cudaMemcpyAsync for the work queued before it. */
static void stream_copy(void *dst, const void *src, size_t b, enum cudaMemcpyKind kind) {
  if (b == 0) return;
  cudaError_t e = settle(g_stream, 60);
  if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, b, kind, g_stream);
  if (e == cudaSuccess) e = settle(g_stream, 60);
  if (e != cudaSuccess) {
    fprintf(stderr, "FATAL: copy of %zu bytes on the test stream: %s\n", b, cudaGetErrorString(e));
    exit(1);
  }
}

/* Device copy of host bytes, in place before any collective on g_stream reads it. */
static void *dev_up(const void *h, size_t b) {
  void *d = NULL;
  if (cudaMalloc(&d, b ? b : 1) != cudaSuccess) {
    fprintf(stderr, "FATAL: cudaMalloc of %zu bytes failed\n", b);
    exit(1);
  }
  stream_copy(d, h, b, cudaMemcpyHostToDevice);
  return d;
}

/* Device bytes back to host (after the collectives on g_stream). */
static void dev_down(void *h, const void *d, size_t b) {
  stream_copy(h, d, b, cudaMemcpyDeviceToHost);
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
    const cudaError_t se = settle(stream, 10); /* the aborted kernel must have been released */
    ZS_EXPECT(se == cudaSuccess, "the stream after the abort: %s", cudaGetErrorString(se));
    if (se == cudaSuccess) cudaFree(d); /* else a kernel may still use it: leaked */
  }
  MPI_Barrier(MPI_COMM_WORLD);
  zs_coll_destroy(w);
  unsetenv("ZS_COMM");
}

/* One diverging pair on a fresh nccl world group: rank 0 runs first(d), every other rank
   other(d), both on the test stream, then a sync; every rank must get ZS_ERR_COMM naming both
   calls (the device-side header) well before the group's timeout, never OK or a timeout. */
static void diverge_pair(zs_comm *comm, void *stream, const char *name, const char *want0,
                         const char *want1, zs_status (*first)(zs_coll *, float *, void *),
                         zs_status (*other)(zs_coll *, float *, void *)) {
  const int wr = zs_comm_rank(comm), ws = zs_comm_size(comm);
  zs_coll *w = NULL;
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CUDA, 60.0, &w));
  ZS_OK_OR_DIE(zs_coll_barrier(w));
  float h[64 * 8 * 2] = {0};
  float *d = dev_up(h, sizeof(float) * 64 * (size_t)(ws > 8 ? 8 : ws) * 2); /* room for both */
  const double t0 = now_s();
  zs_status rc = (wr == 0 ? first : other)(w, d, stream);
  if (rc == ZS_OK) rc = zs_coll_sync(w, stream);
  const double dt = now_s() - t0;
  const char *msg = rc == ZS_OK ? "" : zs_last_error();
  printf("diverge %s rank %d: %s after %.2f s: %s\n", name, wr, zs_status_str(rc), dt, msg);
  ZS_EXPECT(rc == ZS_ERR_COMM, "%s rank %d: got %s (%s)", name, wr, zs_status_str(rc), msg);
  ZS_EXPECT(rc == ZS_OK || (strstr(msg, "ranks diverged") && strstr(msg, want0) &&
                            strstr(msg, want1) && strstr(msg, "already queued")),
            "%s rank %d: message: %s", name, wr, msg);
  ZS_EXPECT(dt < 30.0, "%s rank %d: took %.1f s (the timeout, not the check?)", name, wr, dt);
  ZS_EXPECT_STATUS(zs_coll_barrier(w), ZS_ERR_COMM); /* broken */
  const cudaError_t se = settle(stream, 10);
  ZS_EXPECT(se == cudaSuccess, "%s: the stream after the abort: %s", name, cudaGetErrorString(se));
  if (se == cudaSuccess) cudaFree(d);
  MPI_Barrier(MPI_COMM_WORLD);
  zs_coll_destroy(w);
}

static zs_status ag4(zs_coll *w, float *d, void *s) {
  return zs_coll_all_gather(w, d, d + 64, 4, ZS_CDT_F32, s);
}
static zs_status ag8(zs_coll *w, float *d, void *s) {
  return zs_coll_all_gather(w, d, d + 64, 8, ZS_CDT_F32, s);
}
static zs_status ar8(zs_coll *w, float *d, void *s) {
  return zs_coll_all_reduce(w, d, d, 8, ZS_CDT_F32, s);
}
static zs_status bc8(zs_coll *w, float *d, void *s) {
  return zs_coll_broadcast(w, d, 8, ZS_CDT_F32, 0, s);
}

/* The nccl backend's divergence check (on by default): counts that differ, and operations of
   the same bytes that differ (NCCL could pair those silently); then 600 legal all-reduces
   queued without a wait (more than the check's ring of 256 slots) sum right and sync OK. */
static void nccl_diverge(zs_comm *comm, void *stream) {
  setenv("ZS_COMM", "nccl", 1);
  diverge_pair(comm, stream, "counts", "all_gather of 4 ", "all_gather of 8 ", ag4, ag8);
  diverge_pair(comm, stream, "ops", "all_reduce of 8 ", "broadcast of 8 ", ar8, bc8);
  const int ws = zs_comm_size(comm);
  zs_coll *w = NULL;
  ZS_OK_OR_DIE(zs_coll_open(comm, ZS_DEVICE_CUDA, 60.0, &w));
  const float one[2] = {1.0f, 0.0f};
  float got = 0.0f;
  float *c = dev_up(one, sizeof one), *d = c + 1;
  zs_status rc = ZS_OK;
  for (int i = 0; i < 600 && rc == ZS_OK; i++) /* d = the sum of every rank's 1, then moved */
    rc = i % 2 == 0 ? zs_coll_all_reduce(w, c, d, 1, ZS_CDT_F32, stream)
                    : zs_coll_broadcast(w, d, 1, ZS_CDT_F32, i % ws, stream);
  if (rc == ZS_OK) rc = zs_coll_sync(w, stream);
  ZS_EXPECT(rc == ZS_OK, "600 legal collectives: %s (%s)", zs_status_str(rc), zs_last_error());
  if (rc == ZS_OK) dev_down(&got, d, sizeof got);
  ZS_EXPECT(rc != ZS_OK || got == (float)ws, "600 legal collectives: %g, want %d", got, ws);
  dev_rel(c);
  zs_coll_destroy(w);
  unsetenv("ZS_COMM");
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  me_world = zs_comm_rank(comm);
  if (zs_test_cuda_absent(me_world == 0)) { /* other CUDA failures: exit 1 */
    zs_comm_destroy(comm);
    return 0;
  }
  int ndev = 0;
  ZS_EXPECT(cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0, "cudaGetDeviceCount");
  if (comm->local_size > ndev) {
    char host[64];
    snprintf(host, sizeof host, "zs-test-rank-%d", me_world);
    setenv("NCCL_HOSTID", host, 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1); /* all ranks are on this host: NCCL's sockets too */
  }
  ZS_EXPECT(cudaSetDevice(comm->local_rank % ndev) == cudaSuccess, "cudaSetDevice");
  cudaStream_t s = NULL;
  ZS_EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
  g_stream = s;
  zs_test_mem m = {dev_up, dev_down, dev_rel, s};
  tmem = &m;
  backend_cases(comm, "nccl", "nccl", s);
  backend_cases(comm, "mpi", "mpi-staged", s);
  tmem = NULL;
  if (zs_comm_size(comm) >= 2) nccl_timeout(comm, s);
  if (zs_comm_size(comm) >= 2) nccl_diverge(comm, s);
  cudaStreamDestroy(s);
  zs_comm_destroy(comm);
  if (me_world == 0 && !zs_test_failures) printf("test_comm_nccl: OK\n");
  ZS_TEST_END("test_comm_nccl");
}
