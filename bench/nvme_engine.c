/* The engine's step with the optimizer state on the NVMe tier beside the same step with it in the
 * host arena (host offload): one rank, CPU device, stage 1, fp32, --units units of --gib GiB of
 * optimizer state in all (12 bytes per parameter). Each run: commit, --steps steps (the gradient
 * a constant written by the "backward"), the median step time over the steps after the first;
 * the tier's run also its step I/O rate (bytes read + written by the step's passes / their
 * seconds, from zs_engine_info). The tier's run puts every unit on the tier (offload_host_bytes
 * just over the staging and the host arena's own reserve). Last line:
 *   nvme_engine: step I/O <GB/s> (<bytes> in <s> s); step <t> s vs host offload <t> s
 * bench/nvme.sh prints it beside the disk's O_DIRECT rate.
 * Usage: nvme_engine --dir DIR [--gib 4] [--units 8] [--steps 4] [--chunk-mib 8] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zshard.h"

#define DIE(call)                                                                                  \
  do {                                                                                             \
    zs_status rc_ = (call);                                                                        \
    if (rc_ != ZS_OK) {                                                                            \
      fprintf(stderr, "nvme_engine: %s: %s: %s\n", #call, zs_status_str(rc_), zs_last_error());    \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One run; returns the median step time (after the first), info copied into info. */
static double run(zs_comm *comm, const char *dir, int units, int64_t per_unit, int steps,
                  size_t chunk, char *info, size_t info_len) {
  zs_config c;
  zs_config_default(&c);
  c.stage = 1;
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.offload_allow_unpinned = 1;
  c.offload_chunk = chunk;
  if (dir) {
    c.nvme_path = dir;
    c.offload_host_bytes = 36 * chunk + ((size_t)16 << 20); /* staging + the arena's reserve */
  }
  zs_engine *e = NULL;
  DIE(zs_engine_create(&c, comm, &e));
  zs_unit **u = calloc((size_t)units, sizeof *u);
  for (int i = 0; i < units; i++) {
    char name[16];
    snprintf(name, sizeof name, "u%d", i);
    const zs_tensor_desc t = {"w", 1, {per_unit, 0, 0, 0}, 0};
    DIE(zs_engine_add_unit(e, name, 1, &t, &u[i]));
  }
  DIE(zs_engine_commit(e));
  double *dt = calloc((size_t)steps, sizeof *dt);
  for (int s = 0; s < steps; s++) {
    const double t0 = now();
    DIE(zs_engine_begin_step(e, 1));
    for (int i = units - 1; i >= 0; i--) {
      DIE(zs_unit_gather(u[i]));
      float *g = zs_unit_grad(u[i], 0);
      for (int64_t k = 0; k < per_unit; k++)
        g[k] += 1e-3f;
      DIE(zs_unit_grads_ready(u[i]));
      DIE(zs_unit_release(u[i]));
    }
    DIE(zs_engine_step(e, NULL));
    dt[s] = now() - t0;
    printf("  %s step %d: %.3f s\n", dir ? "nvme" : "host offload", s, dt[s]);
    fflush(stdout);
  }
  snprintf(info, info_len, "%s", zs_engine_info(e));
  zs_engine_destroy(e);
  qsort(dt + 1, (size_t)(steps - 1), sizeof *dt, cmp_d);
  const double med = dt[1 + (steps - 1) / 2];
  free(dt);
  free(u);
  return med;
}

int main(int argc, char **argv) {
  const char *dir = NULL;
  double gib = 4;
  int units = 8, steps = 4;
  size_t chunk_mib = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
    else if (!strcmp(argv[i], "--gib"))
      gib = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--units"))
      units = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps"))
      steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--chunk-mib"))
      chunk_mib = (size_t)atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: nvme_engine --dir DIR [--gib 4] [--units 8] [--steps 4] "
                      "[--chunk-mib 8]\n");
      return 2;
    }
  }
  if (!dir || units < 1 || steps < 2 || gib <= 0 || !chunk_mib) {
    fprintf(stderr, "nvme_engine: --dir is required; units >= 1, steps >= 2, gib > 0\n");
    return 2;
  }
  zs_comm *comm = NULL;
  DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int64_t per_unit = (int64_t)(gib * (double)(1u << 30) / 12.0 / units);
  const size_t chunk = chunk_mib << 20 >> 2; /* fp32 elements per array per chunk */
  static char info_h[2048], info_n[2048];
  printf("nvme_engine: %d units x %lld parameters (%.2f GiB of optimizer state), chunk %zu "
         "elements, %d steps\n",
         units, (long long)per_unit, 12.0 * (double)per_unit * units / (double)(1u << 30), chunk,
         steps);
  const double th = run(comm, NULL, units, per_unit, steps, chunk, info_h, sizeof info_h);
  const double tn = run(comm, dir, units, per_unit, steps, chunk, info_n, sizeof info_n);
  unsigned long long rd = 0, wr = 0;
  double sec = 0, gbs = 0;
  const char *io = strstr(info_n, "step I/O ");
  if (!io || sscanf(io, "step I/O %llu bytes read, %llu written in %lf s (%lf GB/s)", &rd, &wr,
                    &sec, &gbs) != 4) {
    fprintf(stderr, "nvme_engine: no step I/O in zs_engine_info: %s\n", info_n);
    return 1;
  }
  const char *nv = strstr(info_n, "; nvme: ");
  printf("  %s\n", nv ? nv + 2 : info_n);
  printf("nvme_engine: step I/O %.3f GB/s (%llu bytes in %.3f s); step %.3f s vs host offload "
         "%.3f s\n",
         gbs, rd + wr, sec, tn, th);
  zs_comm_destroy(comm);
  return 0;
}
