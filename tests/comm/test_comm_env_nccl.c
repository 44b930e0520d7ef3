/* zs_comm_init_env with NCCL (CUDA builds; prints "SKIP: no CUDA device" and passes without a
 * GPU): the launcher (this program without ZS_ENV_NCCL_CHILD) starts W processes as torchrun
 * would, with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free
 * MASTER_PORT (no MPI anywhere), each with its own NCCL_HOSTID so that NCCL accepts several ranks
 * on one GPU. Each rank: zs_comm_init_env, a CUDA engine (the NCCL id travels over the TCP
 * rendezvous of src/comm/rendezvous.c; the banner must say "comm nccl"), the synthetic model of
 * tests/engine/engine_model.h trained STEPS steps at STAGE in deterministic mode, and its final
 * params compared bit for bit with a 1-rank engine of the same process (zs_comm_init_env with
 * WORLD_SIZE=1: the "self" group on the CPU device) that trained W micro-steps a step on the same
 * batches: N ranks x 1 micro-step = 1 rank x N micro-steps, and CUDA gives the CPU's bits.
 * The launcher waits at most 150 s, then kills what it started.
 * Usage: test_comm_env_nccl [W=2] [STAGE=3] [STEPS=4] */
#include <cuda_runtime.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_model.h"
#include "zs_test.h"
#include "test_free_port.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Host <-> engine memory; an upload synchronises the device so the engine's streams see it. */
static void copy(void *dst, const void *src, size_t n, int cuda) {
  if (!cuda) {
    memcpy(dst, src, n);
    return;
  }
  if (cudaMemcpy(dst, src, n, cudaMemcpyDefault) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {
    fprintf(stderr, "FATAL: cudaMemcpy failed\n");
    exit(1);
  }
}

/* An engine of the synthetic model with its initial params. */
static zs_engine *make(zs_comm *comm, int cuda, int stage, zs_unit **u) {
  zs_config c;
  zs_config_default(&c);
  c.stage = stage;
  c.device = cuda ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  c.deterministic = 1;
  c.adamw.lr = 0.05f;
  c.adamw.weight_decay = 0.1f;
  c.adamw.max_grad_norm = 0.5f;
  c.comm_timeout_s = 60;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  for (int i = 0; i < TM_NUNITS; i++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[i].name, tm_units[i].ntensors, tm_units[i].t, &u[i]));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  for (int i = 0; i < TM_NUNITS; i++)
    for (int k = 0; k < tm_units[i].ntensors; k++) {
      const int64_t n = tm_numel(i, k), b = tm_base(i, k);
      float *h = malloc((size_t)n * sizeof *h);
      for (int64_t j = 0; j < n; j++)
        h[j] = tm_init(b + j);
      ZS_OK_OR_DIE(zs_unit_set_param(u[i], k, h));
      free(h);
    }
  return e;
}

/* `micro` micro-steps of one step; micro-step m of this rank trains on batch first + m*world +
   rank (the order of tests/engine/test_engine_train.c). */
static void step(zs_engine *e, zs_unit **u, int cuda, int micro, int64_t first, int world,
                 int rank) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, micro));
  for (int m = 0; m < micro; m++) {
    const int64_t batch = first + (int64_t)m * world + rank;
    for (int i = 0; i < TM_NUNITS; i++) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
    for (int i = TM_NUNITS - 1; i >= 0; i--) {
      ZS_OK_OR_DIE(zs_unit_gather(u[i]));
      if (cuda && cudaStreamSynchronize((cudaStream_t)zs_engine_stream(e)) != cudaSuccess) {
        fprintf(stderr, "FATAL: cudaStreamSynchronize failed\n");
        exit(1);
      }
      for (int k = 0; k < tm_units[i].ntensors; k++) {
        const int64_t n = tm_numel(i, k), b = tm_base(i, k);
        float *p = malloc((size_t)n * 4), *g = malloc((size_t)n * 4);
        copy(p, zs_unit_param(u[i], k), (size_t)n * 4, cuda);
        copy(g, zs_unit_grad(u[i], k), (size_t)n * 4, cuda);
        for (int64_t j = 0; j < n; j++)
          g[j] += tm_a(batch, b + j) * (p[j] - tm_t(batch, b + j));
        copy(zs_unit_grad(u[i], k), g, (size_t)n * 4, cuda);
        free(p);
        free(g);
      }
      ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
      ZS_OK_OR_DIE(zs_unit_release(u[i]));
    }
  }
  zs_step_stats st;
  ZS_OK_OR_DIE(zs_engine_step(e, &st));
}

static float *final_params(zs_unit **u) {
  float *all = malloc((size_t)tm_total() * sizeof *all);
  for (int i = 0; i < TM_NUNITS; i++)
    for (int k = 0; k < tm_units[i].ntensors; k++)
      ZS_OK_OR_DIE(zs_unit_get_param(u[i], k, all + tm_base(i, k)));
  return all;
}

/* One rank of the job: the CUDA engine over the env-bootstrapped comm, then the 1-rank CPU
   reference. */
static int child(int stage, int steps) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_env(&comm));
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  ZS_EXPECT(rank == atoi(getenv("RANK")) && world == atoi(getenv("WORLD_SIZE")),
            "rank %d of %d, the environment says %s of %s", rank, world, getenv("RANK"),
            getenv("WORLD_SIZE"));
  zs_unit *u[TM_NUNITS];
  const double t0 = now();
  zs_engine *e = make(comm, 1, stage, u); /* the first CUDA group: the TCP rendezvous */
  const char *info = zs_engine_info(e);
  const zs_engine_facts f = zs_test_facts(e);
  ZS_EXPECT(!strcmp(f.comm, "nccl") && zs_engine_config(e)->device == ZS_DEVICE_CUDA &&
                f.world_size == world && f.world_rank == rank,
            "rank %d: engine %s", rank, info);
  if (rank == 0) printf("rank 0 engine (%.1f s to create): %.120s\n", now() - t0, info);
  for (int s = 0; s < steps; s++)
    step(e, u, 1, 1, (int64_t)s * world, world, rank);
  float *got = final_params(u);
  zs_engine_destroy(e);
  zs_comm_destroy(comm);

  /* The reference: one rank, world micro-steps a step, on the CPU. */
  char ws[16], rk[16];
  snprintf(ws, sizeof ws, "%s", getenv("WORLD_SIZE"));
  snprintf(rk, sizeof rk, "%s", getenv("RANK"));
  setenv("WORLD_SIZE", "1", 1);
  setenv("RANK", "0", 1);
  zs_comm *self = NULL;
  ZS_OK_OR_DIE(zs_comm_init_env(&self));
  setenv("WORLD_SIZE", ws, 1);
  setenv("RANK", rk, 1);
  zs_engine *r = make(self, 0, 0, u);
  for (int s = 0; s < steps; s++)
    step(r, u, 0, world, (int64_t)s * world, 1, 0);
  float *want = final_params(u);
  zs_engine_destroy(r);
  zs_comm_destroy(self);
  int64_t nd = 0;
  for (int64_t i = 0; i < tm_total(); i++)
    if (memcmp(&got[i], &want[i], 4)) {
      if (nd < 5)
        fprintf(stderr, "rank %d: element %lld: %.9g != %.9g\n", rank, (long long)i, (double)got[i],
                (double)want[i]);
      nd++;
    }
  ZS_EXPECT(nd == 0, "rank %d: %lld of %lld params differ from the 1-rank CPU reference", rank,
            (long long)nd, (long long)tm_total());
  if (rank == 0 && nd == 0)
    printf("rank 0: %d steps at stage %d over %d env-launched ranks: %lld params bit-identical "
           "to 1 rank x %d micro-steps on the CPU\n",
           steps, stage, world, (long long)tm_total(), world);
  free(got);
  free(want);
  ZS_TEST_END("test_comm_env_nccl (rank)");
}

int main(int argc, char **argv) {
  const int world = argc > 1 ? atoi(argv[1]) : 2, stage = argc > 2 ? atoi(argv[2]) : 3;
  const int steps = argc > 3 ? atoi(argv[3]) : 4;
  if (getenv("ZS_ENV_NCCL_CHILD")) return child(stage, steps);
  if (zs_test_cuda_absent(1)) return 0; /* other CUDA failures: exit 1 */
  if (world < 1 || world > 16) {
    fprintf(stderr, "W must be 1..16\n");
    return 2;
  }
  const int port = zs_test_free_port();
  pid_t kids[16];
  for (int r = 0; r < world; r++) {
    kids[r] = fork();
    if (kids[r] < 0) {
      perror("fork");
      return 1;
    }
    if (kids[r] == 0) {
      char v[64];
      snprintf(v, sizeof v, "%d", r);
      setenv("RANK", v, 1);
      setenv("LOCAL_RANK", v, 1);
      snprintf(v, sizeof v, "%d", world);
      setenv("WORLD_SIZE", v, 1);
      setenv("LOCAL_WORLD_SIZE", v, 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      snprintf(v, sizeof v, "%d", port);
      setenv("MASTER_PORT", v, 1);
      snprintf(v, sizeof v, "zshard-env-nccl-rank-%d", r);
      setenv("NCCL_HOSTID", v, 1);
      setenv("NCCL_SOCKET_IFNAME", "lo", 1); /* every rank is on this host (with_hostid.sh) */
      setenv("ZS_ENV_NCCL_CHILD", "1", 1);
      unsetenv("ZS_COMM");
      execv("/proc/self/exe", argv);
      perror("execv /proc/self/exe");
      _exit(127);
    }
  }
  /* Reap every rank; past the deadline, kill the ones still running. */
  int bad = 0, left = world;
  const double deadline = now() + 150.0;
  while (left > 0) {
    int st = 0;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      int r = 0;
      while (r < world && kids[r] != p)
        r++;
      if (r == world) continue;
      kids[r] = 0;
      left--;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "rank %d failed (%s %d)\n", r, WIFEXITED(st) ? "exit" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        bad++;
      }
      continue;
    }
    if (now() > deadline) {
      for (int r = 0; r < world; r++)
        if (kids[r] > 0) {
          fprintf(stderr, "rank %d still running after 150 s: killed\n", r);
          kill(kids[r], SIGKILL);
          waitpid(kids[r], NULL, 0);
          kids[r] = 0;
          bad++;
          left--;
        }
      break;
    }
    struct timespec ts = {0, 50000000L};
    nanosleep(&ts, NULL);
  }
  ZS_EXPECT(bad == 0, "%d of %d env-launched ranks failed", bad, world);
  if (!bad)
    printf("test_comm_env_nccl: OK (%d ranks, zs_comm_init_env + TCP rendezvous + NCCL)\n", world);
  ZS_TEST_END("test_comm_env_nccl");
}
