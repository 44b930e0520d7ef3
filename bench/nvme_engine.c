/* The engine's step with the optimizer state on the NVMe tier beside the same step with it in host
 * memory (host offload), on one rank of the CPU device: `units` units of `per_unit` fp32 params,
 * AdamW with fp32 master, m and v (12 bytes of optimizer state per parameter). The "backward"
 * writes a fixed pseudo-random gradient, so the time is the engine's step (the tier's read |
 * AdamW | write stream, or the host update), not a model's. Step 0 of each mode warms up (its
 * first pass also fills the page cache of a virtual disk: the numbers after it are steady state).
 *
 * Per mode it prints the mean step seconds; for the tier also the step's I/O rate: the bytes every
 * step reads and writes (2 x 12 bytes x params on the tier, the O_DIRECT padding aside) over the
 * step time. Last it checks that both modes left bit-identical params (the tier's promise), and
 * prints one line `nvme_engine: tier step <t> s (<GB/s> GB/s I/O), host offload step <t> s,
 * params identical: yes|NO` (exit status 1 when they differ).
 *
 * Usage: nvme_engine --dir DIR [--units 24] [--per-unit 16777216] [--steps 3]
 *                    [--host-bytes 268435456 (offload_host_bytes of the tier run)] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zshard_facts.h"

#include "bench_util.h"

/* A fixed gradient of unit i at step s: small values of both signs, the same in both modes. */
static void fill_grad(float *g, long n, int i, int s) {
  uint32_t x = 2654435761u * (uint32_t)(i + 1) + 40503u * (uint32_t)(s + 1);
  for (long k = 0; k < n; k++) {
    x = x * 1664525u + 1013904223u;
    g[k] = ((float)(x >> 8) * (1.0f / 16777216.0f) - 0.5f) * 1e-2f;
  }
}

/* Initial params of unit i (the same in both modes). */
static void fill_param(float *p, long n, int i) {
  uint32_t x = 97u * (uint32_t)(i + 1);
  for (long k = 0; k < n; k++) {
    x = x * 1103515245u + 12345u;
    p[k] = ((float)(x >> 8) * (1.0f / 16777216.0f) - 0.5f) * 0.1f;
  }
}

/* Runs `steps` timed steps (after one warm-up) in one mode; returns the mean step seconds and
   leaves the final params in out (units x per_unit floats). */
static double run(zs_comm *comm, const char *nvme_dir, size_t host_bytes, int units, long per_unit,
                  int steps, float *out, zs_engine_facts *facts) {
  zs_config c;
  zs_config_default(&c);
  c.stage = 1; /* offload needs sharded optimizer state (one rank: the whole shard) */
  c.device = ZS_DEVICE_CPU;
  c.param_dtype = c.reduce_dtype = ZS_F32;
  c.offload = ZS_OFFLOAD_OPTIMIZER;
  c.nvme_path = nvme_dir;
  c.offload_host_bytes = nvme_dir ? host_bytes : 0;
  c.adamw.lr = 1e-3f;
  c.adamw.weight_decay = 0.01f;
  zs_engine *e = NULL;
  DIE(zs_engine_create(&c, comm, &e));
  zs_tensor_desc t[1] = {{"w", 1, {per_unit, 0, 0, 0}, 0}};
  zs_unit **u = calloc((size_t)units, sizeof *u);
  if (!u) exit(2);
  for (int i = 0; i < units; i++) {
    char name[32];
    snprintf(name, sizeof name, "block%d", i);
    DIE(zs_engine_add_unit(e, name, 1, t, &u[i]));
  }
  DIE(zs_engine_commit(e));
  for (int i = 0; i < units; i++) {
    fill_param(out + (size_t)i * (size_t)per_unit, per_unit, i);
    DIE(zs_unit_set_param(u[i], 0, out + (size_t)i * (size_t)per_unit));
  }
  double t0 = 0;
  for (int s = 0; s <= steps; s++) {
    if (s == 1) t0 = bench_now();
    DIE(zs_engine_begin_step(e, 1));
    for (int i = units - 1; i >= 0; i--) {
      DIE(zs_unit_gather(u[i]));
      float *g = zs_unit_grad(u[i], 0);
      if (!g) DIE(ZS_ERR_STATE);
      fill_grad(g, per_unit, i, s);
      DIE(zs_unit_grads_ready(u[i]));
      DIE(zs_unit_release(u[i]));
    }
    DIE(zs_engine_step(e, NULL));
  }
  const double dt = (bench_now() - t0) / (steps > 0 ? steps : 1);
  facts->struct_size = sizeof *facts;
  DIE(zs_engine_facts_get(e, facts));
  facts->nvme_dir = NULL; /* the engine's: gone with it */
  for (int i = 0; i < units; i++)
    DIE(zs_unit_get_param(u[i], 0, out + (size_t)i * (size_t)per_unit));
  zs_engine_destroy(e);
  free(u);
  return dt;
}

int main(int argc, char **argv) {
  int units = 24, steps = 3;
  long per_unit = 1L << 24;
  size_t host_bytes = (size_t)256 << 20;
  const char *dir = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--units"))
      units = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--per-unit"))
      per_unit = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps"))
      steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--host-bytes"))
      host_bytes = (size_t)atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
  }
  if (!dir || units < 1 || per_unit < 1 || steps < 1) {
    fprintf(stderr, "usage: nvme_engine --dir DIR [--units U] [--per-unit P] [--steps S] "
                    "[--host-bytes B]\n");
    return 2;
  }
  zs_comm *comm = NULL;
  DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const size_t n = (size_t)units * (size_t)per_unit;
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  if (!a || !b) {
    fprintf(stderr, "nvme_engine: %zu params do not fit in this process\n", n);
    return 2;
  }
  zs_engine_facts fh, fn;
  const double state_gib = (double)n * 12.0 / 1073741824.0;
  printf("nvme_engine: %d units x %ld params = %.1f M params, %.2f GiB of optimizer state, %d "
         "steps after a warm-up, dir %s\n",
         units, per_unit, (double)n / 1e6, state_gib, steps, dir);
  fflush(stdout);
  const double th = run(comm, NULL, 0, units, per_unit, steps, a, &fh);
  printf("host offload: %.3f s/step\n", th);
  fflush(stdout);
  const double tn = run(comm, dir, host_bytes, units, per_unit, steps, b, &fn);
  /* Units on the tier and their bytes, from the engine's own placement (zs_engine_facts_get). */
  const int on = fn.nvme_units, of = fn.units;
  const size_t disk = fn.nvme_disk_bytes;
  const double rate = 2.0 * (double)disk / tn / 1e9;
  printf("nvme tier: %.3f s/step, %d of %d units on the tier (%.2f GiB), step I/O %.3f GB/s\n", tn,
         on, of, (double)disk / 1073741824.0, rate);
  const int same = memcmp(a, b, n * sizeof *a) == 0;
  printf("nvme_engine: tier step %.3f s (%.3f GB/s I/O), host offload step %.3f s, params "
         "identical: %s\n",
         tn, rate, th, same ? "yes" : "NO");
  free(a);
  free(b);
  zs_comm_destroy(comm);
  return same ? 0 : 1;
}
