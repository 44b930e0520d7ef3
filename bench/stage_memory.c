/* Stage-comparison memory benchmark: the same model under stages 0-3 and offload modes, per-rank
 * bytes by category as the engine's ledger measures them beside the ZeRO prediction, and the step
 * time. Model: `units` units of `per_unit` parameters (a GPT-like stack on the CPU device by
 * default). The "backward" is a cheap synthetic gradient, so the time is the engine's own cost
 * (gathers, reductions, optimizer), not the model's.
 * Usage: mpirun -np N stage_memory [--units U] [--per-unit P] [--steps S] [--bf16 0|1]
 *        [--device cpu|cuda] [--csv FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/device.h" /* zs_dev_cuda_count */
#include "zshard.h"

#include "bench_util.h"

typedef struct {
  const char *name;
  int stage;
  unsigned offload;
} mode;

/* Runs one mode; returns the mean step seconds and fills the ledger snapshot (peaks). */
static double run_mode(zs_comm *comm, const mode *md, int units, long per_unit, int steps, int bf16,
                       int cuda, zs_memory *mem) {
  zs_config c;
  zs_config_default(&c);
  c.stage = md->stage;
  c.offload = md->offload;
  c.param_dtype = c.reduce_dtype = bf16 ? ZS_BF16 : ZS_F32;
  c.device = cuda ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  zs_engine *e = NULL;
  DIE(zs_engine_create(&c, comm, &e));
  zs_tensor_desc t[1] = {{"w", 1, {per_unit, 0, 0, 0}, 0}};
  zs_unit **u = calloc((size_t)units, sizeof *u);
  for (int i = 0; i < units; i++) {
    char name[32];
    snprintf(name, sizeof name, "block%d", i);
    DIE(zs_engine_add_unit(e, name, 1, t, &u[i]));
  }
  DIE(zs_engine_commit(e));
  double t0 = 0;
  for (int s = 0; s <= steps; s++) {
    if (s == 1) t0 = bench_now(); /* step 0 warms up */
    DIE(zs_engine_begin_step(e, 1));
    for (int i = 0; i < units; i++) {
      DIE(zs_unit_gather(u[i]));
      DIE(zs_unit_release(u[i]));
    }
    for (int i = units - 1; i >= 0; i--) {
      DIE(zs_unit_gather(u[i]));
      if (!cuda) {
        void *g = zs_unit_grad(u[i], 0);
        if (!g) DIE(ZS_ERR_STATE);
        memset(g, 0, 4); /* touch: a real backward writes here */
      }
      DIE(zs_unit_grads_ready(u[i]));
      DIE(zs_unit_release(u[i]));
    }
    DIE(zs_engine_step(e, NULL));
  }
  double dt = (bench_now() - t0) / (steps > 0 ? steps : 1);
  DIE(zs_engine_memory(e, mem));
  zs_engine_destroy(e);
  free(u);
  return dt;
}

int main(int argc, char **argv) {
  int units = 12, steps = 3, bf16 = 1, cuda = 0;
  long per_unit = 1L << 20;
  const char *csv = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--units"))
      units = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--per-unit"))
      per_unit = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps"))
      steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bf16"))
      bf16 = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--device"))
      cuda = !strcmp(argv[i + 1], "cuda");
    else if (!strcmp(argv[i], "--csv"))
      csv = argv[i + 1];
  }
  zs_comm *comm = NULL;
  DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm), N = zs_comm_size(comm);
  if (cuda && zs_dev_cuda_count() == 0) { /* the GPU machine's bench list runs it everywhere */
    if (rank == 0) printf("SKIP: no CUDA device\n");
    zs_comm_destroy(comm);
    return 0;
  }
  const double psi = (double)units * (double)per_unit, b = bf16 ? 2 : 4, K = 12;
  const mode modes[] = {{"stage0", 0, 0},
                        {"stage1", 1, 0},
                        {"stage2", 2, 0},
                        {"stage3", 3, 0},
                        {"stage3+opt-offload", 3, ZS_OFFLOAD_OPTIMIZER},
                        {"stage3+all-offload", 3, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS}};
  FILE *f = (rank == 0 && csv) ? fopen(csv, "w") : NULL;
  if (f)
    fprintf(f,
            "mode,world,psi,params,grads,optimizer,buffers_peak,host,predicted_device,step_ms\n");
  if (rank == 0) {
    printf("stage_memory: world %d, %d units x %ld params = %.1f M params, %s, per-rank MiB\n", N,
           units, per_unit, psi / 1e6, bf16 ? "bf16" : "fp32");
    printf("%-20s %9s %9s %9s %9s %9s %9s %11s %9s\n", "mode", "params", "grads", "optim",
           "buf-peak", "host", "device", "predicted", "ms/step");
  }
  for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
    const mode *md = &modes[k];
    zs_memory m;
    double dt = run_mode(comm, md, units, per_unit, steps, bf16, cuda, &m);
    const int st = md->stage;
    double pp = st <= 2 ? b * psi : b * psi / N, pg = st <= 1 ? b * psi : b * psi / N;
    double po = (md->offload & ZS_OFFLOAD_OPTIMIZER) ? 0 : (st == 0 ? K * psi : K * psi / N);
    if (md->offload & ZS_OFFLOAD_PARAMS) pp = 0;
    const double MiB = 1048576.0;
    size_t device = m.params.cur + m.grads.cur + m.optimizer.cur;
    if (rank == 0) {
      printf("%-20s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %11.1f %9.1f\n", md->name,
             m.params.cur / MiB, m.grads.cur / MiB, m.optimizer.cur / MiB, m.buffers.peak / MiB,
             m.host_pinned.cur / MiB, device / MiB, (pp + pg + po) / MiB, dt * 1e3);
      if (f)
        fprintf(f, "%s,%d,%.0f,%zu,%zu,%zu,%zu,%zu,%.0f,%.3f\n", md->name, N, psi, m.params.cur,
                m.grads.cur, m.optimizer.cur, m.buffers.peak, m.host_pinned.cur, pp + pg + po,
                dt * 1e3);
    }
  }
  if (f) fclose(f);
  zs_comm_destroy(comm);
  return 0;
}
