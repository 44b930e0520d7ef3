/* What an asynchronous save costs training, against the synchronous save in the same run: a GPT-2
 * d12-sized model (124M parameters, 1.49 GB of fp32 master + Adam m + v) on the CPU device at
 * stage 3, two engines of it (ckpt_async 0 and 1) taking turns. Each round: the synchronous
 * engine runs its steps and saves (blocking = the whole save); the asynchronous one runs the
 * same steps, saves (blocking = staging), and runs steps while its writers work, until the save
 * commits at a step's start (at most 24 steps, then zs_engine_save_wait). Prints per round the
 * blocking seconds of both saves, the step time without a save and while one is written, and a
 * final "ckpt_async:" line with the medians and the ratios (targets: blocking <= 0.10 of the
 * synchronous save; steps while writing <= 1.05x). Usage: mpirun -np N ckpt_async --dir DIR
 * [--rounds 3] [--steps 4] [--layers 12]. The writer thread runs inside its rank's CPU binding
 * (OpenMPI binds 1 or 2 ranks to a core each): `--bind-to none` gives it a spare core. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zshard.h"

#include "bench_util.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return v[n / 2];
}

static zs_engine *build(zs_comm *comm, int async, int L) {
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.ckpt_keep = 1;
  c.ckpt_async = async;
  zs_engine *e;
  DIE(zs_engine_create(&c, comm, &e));
  bench_add_gpt2(e, L);
  DIE(zs_engine_commit(e));
  return e;
}

/* One training step: every unit gathered, a gradient written over it, reduced, then AdamW. */
static double step(zs_engine *e) {
  const double t0 = bench_now();
  DIE(zs_engine_begin_step(e, 1));
  for (int u = zs_engine_num_units(e) - 1; u >= 0; u--) {
    zs_unit *x = zs_engine_unit(e, u);
    DIE(zs_unit_gather(x));
    for (int t = 0; zs_unit_numel(x, t) > 0; t++) {
      float *g = zs_unit_grad(x, t);
      const float *p = zs_unit_param(x, t);
      for (int64_t i = 0; i < zs_unit_numel(x, t); i++)
        g[i] = 1e-3f * p[i] + 1e-4f;
    }
    DIE(zs_unit_grads_ready(x));
    DIE(zs_unit_release(x));
  }
  DIE(zs_engine_step(e, NULL));
  return bench_now() - t0;
}

int main(int argc, char **argv) {
  const char *dir = NULL;
  int rounds = 3, steps = 4, L = 12;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--layers")) L = atoi(argv[i + 1]);
  }
  if (!dir || rounds < 1 || rounds > 50 || steps < 1) {
    fprintf(stderr, "usage: ckpt_async --dir DIR [--rounds 3] [--steps 4] [--layers 12]\n");
    return 2;
  }
  zs_comm *comm;
  DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm), world = zs_comm_size(comm);
  char ds[4200], da[4200];
  snprintf(ds, sizeof ds, "%s/sync", dir);
  snprintf(da, sizeof da, "%s/async", dir);
  zs_engine *es = build(comm, 0, L), *ea = build(comm, 1, L);
  double *sync_s = calloc((size_t)rounds, sizeof(double));
  double *async_s = calloc((size_t)rounds, sizeof(double));
  double *base = calloc((size_t)rounds * (size_t)steps, sizeof(double));
  double *during = calloc((size_t)rounds * 24, sizeof(double));
  int nbase = 0, nduring = 0;
  step(es); /* first touches */
  step(ea);
  /* The first asynchronous save maps and touches the staging the engine keeps for the next ones:
     reported apart, out of the medians. */
  MPI_Barrier(MPI_COMM_WORLD);
  double t_first = bench_now();
  DIE(zs_engine_save(ea, da));
  MPI_Barrier(MPI_COMM_WORLD);
  t_first = bench_now() - t_first;
  DIE(zs_engine_save_wait(ea));
  if (rank == 0) printf("first asynchronous save (maps its staging): blocking %.3f s\n", t_first);
  for (int r = 0; r < rounds; r++) {
    for (int s = 0; s < steps; s++)
      step(es);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    DIE(zs_engine_save(es, ds));
    MPI_Barrier(MPI_COMM_WORLD);
    sync_s[r] = bench_now() - t0;
    for (int s = 0; s < steps; s++)
      base[nbase++] = step(ea);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = bench_now();
    DIE(zs_engine_save(ea, da));
    MPI_Barrier(MPI_COMM_WORLD);
    async_s[r] = bench_now() - t0;
    int n = 0;
    double written = 0;
    while (zs_engine_save_pending(ea) && n < 24) {
      const double st = step(ea);
      written += st;
      if (zs_engine_save_pending(ea)) during[nduring++] = st; /* steps the write overlapped */
      n++;
    }
    t0 = bench_now();
    DIE(zs_engine_save_wait(ea)); /* after 24 steps: what is left of the write */
    const double left = bench_now() - t0;
    if (rank == 0)
      printf("round %d: save sync %.3f s, async blocking %.3f s (%.3f); %d steps (%.3f s) "
             "overlapped the write, then %.3f s waiting for the rest\n",
             r, sync_s[r], async_s[r], async_s[r] / sync_s[r], n, written, left);
  }
  const double ms = median(sync_s, rounds), ma = median(async_s, rounds);
  double sum = 0;
  for (int i = 0; i < nduring; i++)
    sum += during[i];
  const double mean_d = nduring ? sum / nduring : 0;
  const double mb = median(base, nbase), md = nduring ? median(during, nduring) : mb;
  if (rank == 0)
    printf("ckpt_async: ranks %d sync_save %.3f s async_blocking %.3f s ratio %.3f step %.3f s "
           "step_while_writing %.3f s ratio %.3f (mean %.3f s, %.3f; %d steps overlapped)\n",
           world, ms, ma, ma / ms, mb, md, md / mb, mean_d, mean_d / mb, nduring);
  free(sync_s);
  free(async_s);
  free(base);
  free(during);
  zs_engine_destroy(ea);
  zs_engine_destroy(es);
  zs_comm_destroy(comm);
  return 0;
}
