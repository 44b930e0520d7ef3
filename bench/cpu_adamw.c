/* CPU AdamW throughput: parameters/s and GB/s of zs_cpu_adamw_ex on the host arena, for several
 * sizes and thread counts, beside the memory bandwidth of a STREAM triad run in the same process
 * with the same pool, and beside torch.optim.AdamW(foreach=True) (bench/peers/torch_adamw.py,
 * read from --torch-csv).
 *
 * Bytes counted per element: read master, m, v (4 B each) and the gradient (4 B fp32 / 2 B bf16),
 * write master, m, v, plus the param copy if any (2 B bf16). Triad a = b + s*c counts 12 B per
 * element (STREAM's convention: the write-allocate read of `a` is not counted), so an in-place
 * kernel such as AdamW, whose writes hit lines it has just read, can reach above 100% of it.
 * Row rmw_4r3w is AdamW's access pattern without its arithmetic (a, b, c += d in place, 28 B per
 * element): the bound for AdamW on this machine, printed beside the triad.
 * Times are the best of --reps steps after one warm-up step; the bandwidths are measured before
 * and after the AdamW runs and the better pass is kept (a shared machine's load drifts).
 *
 * Usage: cpu_adamw [--sizes 1e6,1e7,1e8] [--big] [--threads 1,2] [--reps 5] [--csv FILE]
 *                  [--torch-csv FILE] [--list-threads]
 * The last line is: cpu_adamw: <GB/s> GB/s = <P>% of measured memory bandwidth, <S>x torch AdamW
 * for the largest size at the most threads, fp32 gradients (torch's setting). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/cpu/adamw.h"
#include "offload/cpu_adamw.h"
#include "offload/host_arena.h"
#include "offload/worker_pool.h"

#define MAXN 16
#define TRIAD_N ((size_t)100000000) /* 1.2 GB of floats: far beyond any cache */

typedef struct {
  double sizes[MAXN];
  int nsizes;
  int threads[MAXN];
  int nthreads;
  int reps;
  const char *csv, *torch_csv;
} opts;

/* Monotonic seconds. */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Parses "a,b,c" of doubles into out; returns the count. */
static int parse_list(const char *s, double *out) {
  int n = 0;
  while (*s && n < MAXN) {
    char *end;
    out[n++] = strtod(s, &end);
    if (end == s) break;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* ---- work items for the pool ---- */

typedef struct {
  float *a, *b, *c, *d;
  size_t n;
  float s;
} bw_ctx;

#define CHUNK ((size_t)1 << 16)

#if defined(__x86_64__)
#include <immintrin.h>
#define ZS_BENCH_AVX2 __attribute__((target("avx2")))
#else
#define ZS_BENCH_AVX2
#endif

/* STREAM triad a = b + s*c on one chunk (AVX2 when present: the loop must be memory-bound). */
ZS_BENCH_AVX2 static void triad_range(bw_ctx *t, size_t i0, size_t i1) {
  size_t i = i0;
#if defined(__x86_64__)
  __m256 s = _mm256_set1_ps(t->s);
  for (; i + 8 <= i1; i += 8)
    _mm256_storeu_ps(t->a + i, _mm256_add_ps(_mm256_loadu_ps(t->b + i),
                                             _mm256_mul_ps(s, _mm256_loadu_ps(t->c + i))));
#endif
  for (; i < i1; i++)
    t->a[i] = t->b[i] + t->s * t->c[i];
}

/* AdamW's access pattern without its arithmetic: a, b, c += d in place (read 4, write 3). */
ZS_BENCH_AVX2 static void rmw_range(bw_ctx *t, size_t i0, size_t i1) {
  size_t i = i0;
#if defined(__x86_64__)
  for (; i + 8 <= i1; i += 8) {
    __m256 d = _mm256_loadu_ps(t->d + i);
    _mm256_storeu_ps(t->a + i, _mm256_add_ps(_mm256_loadu_ps(t->a + i), d));
    _mm256_storeu_ps(t->b + i, _mm256_add_ps(_mm256_loadu_ps(t->b + i), d));
    _mm256_storeu_ps(t->c + i, _mm256_add_ps(_mm256_loadu_ps(t->c + i), d));
  }
#endif
  for (; i < i1; i++) {
    t->a[i] += t->d[i];
    t->b[i] += t->d[i];
    t->c[i] += t->d[i];
  }
}

static int have_avx2;

/* Pool item: one chunk of the triad. */
static void triad_item(void *ctx, size_t item, int worker) {
  bw_ctx *t = ctx;
  size_t i0 = item * CHUNK, i1 = i0 + CHUNK < t->n ? i0 + CHUNK : t->n;
  if (have_avx2)
    triad_range(t, i0, i1);
  else
    for (size_t i = i0; i < i1; i++)
      t->a[i] = t->b[i] + t->s * t->c[i];
}

/* Pool item: one chunk of the in-place read-4/write-3 pattern. */
static void rmw_item(void *ctx, size_t item, int worker) {
  bw_ctx *t = ctx;
  size_t i0 = item * CHUNK, i1 = i0 + CHUNK < t->n ? i0 + CHUNK : t->n;
  if (have_avx2)
    rmw_range(t, i0, i1);
  else
    for (size_t i = i0; i < i1; i++)
      t->a[i] += t->d[i], t->b[i] += t->d[i], t->c[i] += t->d[i];
}

typedef struct {
  float *arr[4];
  uint16_t *half[2];
  size_t n;
} fill_ctx;

/* First touch by the pool's workers (on the arena's node) with small non-trivial values. */
static void fill_item(void *ctx, size_t item, int worker) {
  fill_ctx *f = ctx;
  size_t i0 = item * CHUNK, i1 = i0 + CHUNK < f->n ? i0 + CHUNK : f->n;
  for (int k = 0; k < 4; k++)
    if (f->arr[k])
      for (size_t i = i0; i < i1; i++)
        f->arr[k][i] = (float)((i * 2654435761u + (unsigned)k) % 1000) * 1e-3f;
  for (int k = 0; k < 2; k++)
    if (f->half[k])
      for (size_t i = i0; i < i1; i++)
        f->half[k][i] = (uint16_t)(0x3c00 + i % 128);
}

/* Allocates from the arena or exits with the reason. */
static void *arena_get(zs_host_arena *a, size_t bytes) {
  void *p;
  if (zs_host_arena_alloc(a, bytes, &p) != ZS_OK) {
    fprintf(stderr, "cpu_adamw: %s\n", zs_last_error());
    exit(1);
  }
  return p;
}

/* Bandwidth in GB/s of the triad (12 B per element) and of the in-place pattern (28 B per
   element) with this pool, best of reps each. */
static void bandwidth(zs_host_arena *ar, zs_pool *pool, int reps, double *triad, double *rmw) {
  size_t n = TRIAD_N;
  bw_ctx t = {arena_get(ar, n * 4),
              arena_get(ar, n * 4),
              arena_get(ar, n * 4),
              arena_get(ar, n * 4),
              n,
              3.0f};
  fill_ctx f = {{t.a, t.b, t.c, t.d}, {NULL, NULL}, n};
  size_t items = (n + CHUNK - 1) / CHUNK;
  zs_pool_run(pool, items, fill_item, &f);
  zs_pool_fn fns[2] = {triad_item, rmw_item};
  double bytes[2] = {12.0, 28.0}, *res[2] = {triad, rmw};
  for (int k = 0; k < 2; k++) {
    double best = 1e30;
    for (int r = 0; r <= reps; r++) {
      double t0 = now();
      zs_pool_run(pool, items, fns[k], &t);
      double dt = now() - t0;
      if (r > 0 && dt < best) best = dt;
    }
    *res[k] = bytes[k] * (double)n / best / 1e9;
  }
  zs_host_arena_free(ar, t.a);
  zs_host_arena_free(ar, t.b);
  zs_host_arena_free(ar, t.c);
  zs_host_arena_free(ar, t.d);
}

/* One AdamW configuration: best seconds per step. */
static double adamw_time(zs_pool *pool, zs_adamw_isa isa, float *p, float *m, float *v,
                         const void *g, zs_dtype gdt, void *out, size_t n, int reps) {
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, r + 1, 1.0);
    double t0 = now();
    zs_cpu_adamw_ex(pool, isa, &c, p, m, v, g, gdt, out, ZS_BF16, n);
    double dt = now() - t0;
    if (r > 0 && dt < best) best = dt;
  }
  return best;
}

/* torch's GB/s for (n, threads) from its CSV (columns
   kind,isa,n,threads,seconds,params_per_s,GBps), or 0 if absent. */
static double torch_gbps(const char *path, size_t n, int threads) {
  if (!path) return 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  double found = 0;
  while (fgets(line, sizeof line, f)) {
    char kind[64], isa[64];
    double nn, sec, pps, gbps;
    int th;
    if (sscanf(line, "%63[^,],%63[^,],%lf,%d,%lf,%lf,%lf", kind, isa, &nn, &th, &sec, &pps,
               &gbps) == 7 &&
        (size_t)nn == n && th == threads)
      found = gbps;
  }
  fclose(f);
  return found;
}

/* Prints and appends one result row. */
static void row(FILE *csv, const char *kind, const char *isa, size_t n, int threads, double sec,
                double bytes_per_elem) {
  double pps = (double)n / sec, gbps = bytes_per_elem * (double)n / sec / 1e9;
  printf("%-12s %-7s %11zu %3d  %10.4f ms  %8.3f Gparam/s  %7.2f GB/s\n", kind, isa, n, threads,
         sec * 1e3, pps / 1e9, gbps);
  if (csv) fprintf(csv, "%s,%s,%zu,%d,%.9f,%.6e,%.4f\n", kind, isa, n, threads, sec, pps, gbps);
}

/* Default thread counts: 1 .. the cores of the calling thread's node. */
static int default_threads(int *out) {
  zs_pool *p;
  int cores = 1;
  if (zs_pool_create(0, ZS_POOL_CALLER_NODE, &p) == ZS_OK) {
    cores = zs_pool_size(p);
    zs_pool_destroy(p);
  }
  int n = 0;
  for (int t = 1; t <= cores && n < MAXN; t = t < 4 ? t + 1 : t * 2)
    out[n++] = t;
  if (out[n - 1] != cores && n < MAXN) out[n++] = cores;
  return n;
}

static void parse_opts(int argc, char **argv, opts *o) {
  double d[MAXN];
  o->nsizes = parse_list("1e6,1e7,1e8", o->sizes);
  o->nthreads = default_threads(o->threads);
  o->reps = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--sizes"))
      o->nsizes = parse_list(v, o->sizes), i++;
    else if (!strcmp(a, "--big") && o->nsizes < MAXN)
      o->sizes[o->nsizes++] = 1e9;
    else if (!strcmp(a, "--threads")) {
      o->nthreads = parse_list(v, d);
      for (int k = 0; k < o->nthreads; k++)
        o->threads[k] = (int)d[k];
      i++;
    } else if (!strcmp(a, "--reps"))
      o->reps = atoi(v), i++;
    else if (!strcmp(a, "--csv"))
      o->csv = v, i++;
    else if (!strcmp(a, "--torch-csv"))
      o->torch_csv = v, i++;
    else if (!strcmp(a, "--list-threads")) {
      for (int k = 0; k < o->nthreads; k++)
        printf("%s%d", k ? "," : "", o->threads[k]);
      printf("\n");
      exit(0);
    } else {
      fprintf(stderr, "cpu_adamw: unknown option %s (see the header of bench/cpu_adamw.c)\n", a);
      exit(2);
    }
  }
  if (o->reps < 1) o->reps = 1;
}

int main(int argc, char **argv) {
  opts o = {0};
#if defined(__x86_64__)
  __builtin_cpu_init();
  have_avx2 = __builtin_cpu_supports("avx2");
#endif
  parse_opts(argc, argv, &o);
  FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
  if (csv) fprintf(csv, "kind,isa,n,threads,seconds,params_per_s,GBps\n");
  zs_host_arena *ar;
  if (zs_host_arena_create(-1, 0, 0, &ar) != ZS_OK) {
    fprintf(stderr, "cpu_adamw: %s\n", zs_last_error());
    return 1;
  }
  printf("host arena: %s\nactive AdamW path: %s\n", zs_host_arena_info(ar),
         zs_adamw_isa_name(zs_adamw_isa_active()));
  double triad[MAXN] = {0}, rmw[MAXN] = {0};
  printf("%-12s %-7s %11s %3s  %13s  %17s  %12s\n", "kind", "isa", "n", "thr", "time/step", "rate",
         "bandwidth");
  zs_pool *pools[MAXN] = {0};
  for (int k = 0; k < o.nthreads; k++) {
    if (zs_pool_create(o.threads[k], zs_host_arena_node(ar), &pools[k]) != ZS_OK) {
      fprintf(stderr, "cpu_adamw: %s\n", zs_last_error());
      return 1;
    }
    bandwidth(ar, pools[k], o.reps, &triad[k], &rmw[k]);
  }
  double last_gbps = 0, last_torch = 0;
  int last_k = 0;
  for (int s = 0; s < o.nsizes; s++) {
    size_t n = (size_t)o.sizes[s];
    float *p = arena_get(ar, n * 4), *m = arena_get(ar, n * 4), *v = arena_get(ar, n * 4);
    float *g = arena_get(ar, n * 4);
    uint16_t *gb = arena_get(ar, n * 2), *out = arena_get(ar, n * 2);
    fill_ctx f = {{p, m, v, g}, {gb, out}, n};
    zs_pool_run(pools[o.nthreads - 1], (n + CHUNK - 1) / CHUNK, fill_item, &f);
    if (n == 10000000) /* every path at one size, one thread: the vector speed-up */
      for (int isa = ZS_ADAMW_ISA_SCALAR; isa <= ZS_ADAMW_ISA_AVX512; isa++)
        if (zs_adamw_isa_supported((zs_adamw_isa)isa))
          row(csv, "adamw_f32", zs_adamw_isa_name((zs_adamw_isa)isa), n, 1,
              adamw_time(NULL, (zs_adamw_isa)isa, p, m, v, g, ZS_F32, NULL, n, o.reps), 28.0);
    for (int k = 0; k < o.nthreads; k++) {
      const char *isa = zs_adamw_isa_name(zs_adamw_isa_active());
      double t32 = adamw_time(pools[k], ZS_ADAMW_ISA_AUTO, p, m, v, g, ZS_F32, NULL, n, o.reps);
      row(csv, "adamw_f32", isa, n, o.threads[k], t32, 28.0);
      double t16 = adamw_time(pools[k], ZS_ADAMW_ISA_AUTO, p, m, v, gb, ZS_BF16, out, n, o.reps);
      row(csv, "adamw_bf16", isa, n, o.threads[k], t16, 28.0);
      double tg = torch_gbps(o.torch_csv, n, o.threads[k]);
      if (tg > 0)
        printf("%-12s %-7s %11zu %3d  %35s  %7.2f GB/s\n", "torch", "foreach", n, o.threads[k], "",
               tg);
      last_gbps = 28.0 * (double)n / t32 / 1e9;
      last_k = k;
      last_torch = tg;
    }
    void *all[] = {p, m, v, g, gb, out};
    for (int k = 0; k < 6; k++)
      zs_host_arena_free(ar, all[k]);
  }
  /* Bandwidth again after the AdamW runs, keeping the better pass: on a shared machine the load
     drifts during the run, and every figure here is a best-of. */
  for (int k = 0; k < o.nthreads; k++) {
    double t2, r2;
    bandwidth(ar, pools[k], o.reps, &t2, &r2);
    triad[k] = t2 > triad[k] ? t2 : triad[k];
    rmw[k] = r2 > rmw[k] ? r2 : rmw[k];
    row(csv, "triad", "-", TRIAD_N, o.threads[k], 12.0 * (double)TRIAD_N / triad[k] / 1e9, 12.0);
    row(csv, "rmw_4r3w", "-", TRIAD_N, o.threads[k], 28.0 * (double)TRIAD_N / rmw[k] / 1e9, 28.0);
  }
  double last_triad = triad[last_k];
  printf("AdamW (largest n, %d threads, fp32 grads) runs at %.0f%% of its own access pattern's "
         "bandwidth (rmw_4r3w)\n",
         o.threads[last_k], 100.0 * last_gbps / rmw[last_k]);
  for (int k = 0; k < o.nthreads; k++)
    zs_pool_destroy(pools[k]);
  zs_host_arena_destroy(ar);
  if (csv) fclose(csv);
  if (last_torch > 0)
    printf("cpu_adamw: %.2f GB/s = %.0f%% of measured memory bandwidth, %.2fx torch AdamW\n",
           last_gbps, 100.0 * last_gbps / last_triad, last_gbps / last_torch);
  else
    printf("cpu_adamw: %.2f GB/s = %.0f%% of measured memory bandwidth, n/a x torch AdamW\n",
           last_gbps, 100.0 * last_gbps / last_triad);
  return 0;
}
