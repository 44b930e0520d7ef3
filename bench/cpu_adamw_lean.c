/* Lean-mode CPU AdamW throughput (zs_config.master = ZS_MASTER_LEAN) beside the fp32-master
 * update of the same bf16 params, on each path and thread count: parameters/s and GB/s.
 *
 * Bytes counted per element: fp32 master mode reads master, m, v (4 B each) and the bf16 gradient
 * (2 B) and writes master, m, v and the bf16 params (2 B): 28 B. Lean reads the bf16 params (the
 * master), m, v and the gradient and writes params, m, v: 20 B with fp32 moments, 12 B with bf16
 * moments. Times are the best of --reps steps after one warm-up (a shared machine's load drifts).
 * Usage: cpu_adamw_lean [--n 1e7] [--threads 1,2] [--reps 5] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "optim/adamw/cpu/adamw_lean.h"
#include "optim/adamw/adamw_mt.h"
#include "optim/adamw/adamw_lean_mt.h"
#include "offload/worker_pool.h"

#include "bench_util.h"

/* The arrays of one run (all modes share them; values are plausible, not zeros). */
typedef struct {
  float *master, *m, *v;
  uint16_t *p, *g, *m16, *v16;
} arrays;

/* Best seconds of one mode: 0 fp32 master, 1 lean fp32 moments, 2 lean bf16 moments. */
static double run(zs_pool *pool, zs_adamw_isa isa, int mode, arrays *a, size_t n, int reps) {
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, r + 1, 1.0);
    const zs_lean_key k = zs_lean_key_make(0, r + 1, 3, 0);
    const double t0 = bench_now();
    if (mode == 0)
      zs_cpu_adamw_ex(pool, isa, &c, a->master, a->m, a->v, a->g, ZS_BF16, a->p, ZS_BF16, n);
    else if (mode == 1)
      zs_cpu_adamw_lean_ex(pool, isa, &c, &k, a->p, a->m, a->v, 0, a->g, n);
    else
      zs_cpu_adamw_lean_ex(pool, isa, &c, &k, a->p, a->m16, a->v16, 1, a->g, n);
    const double dt = bench_now() - t0;
    if (r > 0 && dt < best) best = dt;
  }
  return best;
}

int main(int argc, char **argv) {
  size_t n = 10000000;
  int threads[8] = {1, 2}, nth = 2, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--n")) n = (size_t)strtod(argv[i + 1], NULL);
    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--threads")) {
      nth = 0;
      for (char *s = argv[i + 1]; *s && nth < 8;) {
        char *end;
        threads[nth++] = (int)strtol(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s) break;
      }
    }
  }
  arrays a = {malloc(n * 4), malloc(n * 4), malloc(n * 4), malloc(n * 2),
              malloc(n * 2), malloc(n * 2), malloc(n * 2)};
  if (!a.master || !a.m || !a.v || !a.p || !a.g || !a.m16 || !a.v16) {
    fprintf(stderr, "cpu_adamw_lean: out of memory for n = %zu\n", n);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    a.master[i] = (float)((double)(i % 1000) * 1e-3 - 0.5);
    a.p[i] = zs_f32_to_bf16(a.master[i]);
    a.g[i] = zs_f32_to_bf16((float)((double)(i % 777) * 1e-5 - 3e-3));
    a.m[i] = a.v[i] = 0.0f;
    a.m16[i] = a.v16[i] = 0;
  }
  static const char *names[3] = {"fp32-master", "lean", "lean-m16"};
  static const double bytes[3] = {28, 20, 12};
  printf("%-12s %-7s %11s %3s  %12s  %14s  %9s\n", "mode", "isa", "n", "thr", "ms", "Gparam/s",
         "GB/s");
  for (int t = 0; t < nth; t++) {
    zs_pool *pool = NULL;
    if (threads[t] > 1 && zs_pool_create(threads[t], ZS_POOL_UNBOUND, &pool) != ZS_OK) pool = NULL;
    for (int isa = ZS_ADAMW_ISA_SCALAR; isa <= ZS_ADAMW_ISA_AVX512; isa++) {
      if (!zs_adamw_isa_supported((zs_adamw_isa)isa)) continue;
      for (int mode = 0; mode < 3; mode++) {
        const double s = run(pool, (zs_adamw_isa)isa, mode, &a, n, reps);
        printf("%-12s %-7s %11zu %3d  %9.3f ms  %8.3f Gp/s  %7.2f GB/s\n", names[mode],
               zs_adamw_isa_name((zs_adamw_isa)isa), n, threads[t], s * 1e3, (double)n / s / 1e9,
               bytes[mode] * (double)n / s / 1e9);
      }
    }
    zs_pool_destroy(pool);
  }
  free(a.master);
  free(a.m);
  free(a.v);
  free(a.p);
  free(a.g);
  free(a.m16);
  free(a.v16);
  return 0;
}
