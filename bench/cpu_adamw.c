/* CPU AdamW throughput per optimizer-state mode: parameters/s and GB/s of the offload
 * optimizer's CPU AdamW (zs_cpu_adamw_ex, zs_cpu_adamw_m16_ex) on the host arena, for several
 * sizes and thread counts, beside the memory bandwidth of a STREAM triad run in the same process
 * with the same pool, and paired with peers on arrays of the same sizes and dtypes, read from
 * CSV files (--peer-csv, repeatable): DeepSpeed's CPUAdam (bench/peers/deepspeed_cpu_adam.py,
 * kinds ds_fp32 and ds_bf16) and torch.optim.AdamW(foreach=True) (bench/peers/torch_adamw.py,
 * kind torch; --torch-csv is the same option).
 *
 * The modes are the rows of one table (modes[] below: name, bytes moved per element, the peer
 * row it is paired with, the call): fp32 states (fp32 master or the fp32 params as the master,
 * ZS_MASTER_PARAMS, which is the same kernel on the same arrays), the mixed-precision row (bf16
 * gradient in, bf16 param copy out), bf16 moments, the remainder master and lean mode (both with
 * bf16 moments). A new mode is one row there.
 *
 * Bytes counted per element: what the kernel reads and writes (fp32 states: read master, m, v,
 * gradient, write master, m, v = 28 B; bf16 moments: 4 + 2 + 2 + 4 read, 4 + 2 + 2 written =
 * 20 B). Triad a = b + s*c counts 12 B per element (STREAM's convention: the write-allocate read
 * of `a` is not counted), so an in-place kernel such as AdamW, whose writes hit lines it has just
 * read, can reach above 100% of it. Row rmw_4r3w is AdamW's access pattern without its
 * arithmetic (a, b, c += d in place, 28 B per element): the bound for fp32 AdamW on this machine.
 * Times are the best of --reps steps after one warm-up step; the bandwidths are measured before
 * and after the AdamW runs and the better pass is kept (a shared machine's load drifts).
 *
 * Usage: cpu_adamw [--sizes 1e6,1e7,1e8] [--big] [--threads 1,2] [--reps 5] [--csv FILE]
 *                  [--peer-csv FILE]... [--torch-csv FILE] [--bw-n N (triad elements, 1e8)]
 *                  [--list-threads]
 * Per mode, for the largest size at the most threads:
 *   cpu_adamw mode <name>: <GB/s> GB/s, <G> Gparam/s, <P>% of triad, <S>x <peer> params/s;
 *     best thread counts: <G> vs <Gpeer> Gparam/s, <B>x  (each side at its fastest thread count)
 * The last line is: cpu_adamw: <GB/s> GB/s = <P>% of measured memory bandwidth, <S>x torch AdamW
 * for the largest size at the most threads, fp32 states and gradients (torch's setting). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "optim/adamw/cpu/adamw.h"
#include "optim/adamw/adamw_mt.h"
#include "optim/adamw/adamw_lean_mt.h"
#include "optim/adamw/adamw_rem_mt.h"
#include "offload/host_arena.h"
#include "offload/worker_pool.h"

#define MAXN 16
#define MAXPEER 4

static size_t triad_n = 100000000; /* --bw-n: 1.2 GB of floats by default, beyond any cache */

typedef struct {
  double sizes[MAXN];
  int nsizes;
  int threads[MAXN];
  int nthreads;
  int reps;
  const char *csv;
  const char *peer_csv[MAXPEER]; /* --peer-csv / --torch-csv files */
  int npeer;
} opts;

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

#include "bench_util.h"
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
  size_t n = triad_n;
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
      double t0 = bench_now();
      zs_pool_run(pool, items, fns[k], &t);
      double dt = bench_now() - t0;
      if (r > 0 && dt < best) best = dt;
    }
    *res[k] = bytes[k] * (double)n / best / 1e9;
  }
  zs_host_arena_free(ar, t.a);
  zs_host_arena_free(ar, t.b);
  zs_host_arena_free(ar, t.c);
  zs_host_arena_free(ar, t.d);
}

/* The arrays of one size; every mode uses the ones it needs, filled with the same values. */
typedef struct {
  float *p, *m, *v, *g; /* fp32 master (or params), Adam m and v, gradient */
  uint16_t *m16, *v16;  /* bf16 m and v */
  uint16_t *gb, *out;   /* bf16 gradient, bf16 param copy (the mixed-precision row); out is the
                           bf16 params (the master's upper half, or the master) of the remainder
                           and lean rows */
  uint16_t *rem;        /* the remainder master's 16-bit remainder */
  size_t n;
} arrays;

/* One AdamW step of a mode on the arrays (pool NULL: the calling thread). */
typedef void (*mode_fn)(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, arrays *a);

static void run_fp32(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, arrays *a) {
  zs_cpu_adamw_ex(pool, isa, c, a->p, a->m, a->v, a->g, ZS_F32, NULL, ZS_BF16, a->n);
}
static void run_mixed(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, arrays *a) {
  zs_cpu_adamw_ex(pool, isa, c, a->p, a->m, a->v, a->gb, ZS_BF16, a->out, ZS_BF16, a->n);
}
static void run_m16(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, arrays *a) {
  zs_cpu_adamw_m16_ex(pool, isa, c, a->p, a->m16, a->v16, a->g, ZS_F32, NULL, ZS_BF16, a->n);
}
/* The remainder master with bf16 moments and bf16 gradients (the engine's setting of the mode). */
static void run_rem(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, arrays *a) {
  zs_cpu_adamw_rem_ex(pool, isa, c, a->out, a->rem, a->m16, a->v16, ZS_BF16, a->gb, a->n);
}
/* Lean mode (bf16 params are the master, stochastic rounding) with bf16 moments and gradients. */
static void run_lean(zs_pool *pool, zs_adamw_isa isa, const zs_adamw_coef *c, arrays *a) {
  const zs_lean_key k = zs_lean_key_make(0, 1, 0, 0);
  zs_cpu_adamw_lean_ex(pool, isa, c, &k, a->out, a->m16, a->v16, 1, a->gb, a->n);
}

/* The optimizer-state modes timed, one row each (docs/OPTIMIZER.md §4). bytes: moved per
   element (read + write); state: optimizer-state bytes per parameter (master + m + v, the params
   themselves not counted); peer: the peer CSV kind the mode is paired with, DeepSpeed CPUAdam in
   its ZeRO-Offload setting (fp32 params and state, fp32 gradients): the same work for fp32
   states, the engine that the compact modes are meant to beat. ZS_MASTER_PARAMS runs run_fp32 on
   the same arrays (the fp32 params are the master), so fp32_states stands for it too. The
   remainder master (bf16 params + a 16-bit remainder, bf16 m and v, bf16 gradients: read 2 + 2 +
   2 + 2 + 2, write 2 + 2 + 2 + 2 = 18 B) and lean with bf16 moments (read 2 + 2 + 2 + 2, write
   2 + 2 + 2 = 14 B) are paired with DeepSpeed's fp32 setting too: the work it does for the
   same training step. */
static const struct {
  const char *kind, *what;
  double bytes;
  int state;
  const char *peer;
  mode_fn run;
} modes[] = {
    {"fp32_states", "fp32 master/params, fp32 m v, fp32 grads", 28.0, 12, "ds_fp32", run_fp32},
    {"fp32_mixed", "fp32 master, fp32 m v, bf16 grads, bf16 param copy", 28.0, 12, "ds_fp32",
     run_mixed},
    {"bf16_moments", "fp32 master/params, bf16 m v, fp32 grads", 20.0, 8, "ds_fp32", run_m16},
    {"remainder_m16", "bf16 params + 16-bit remainder, bf16 m v, bf16 grads", 18.0, 6, "ds_fp32",
     run_rem},
    {"lean_m16", "bf16 params as master (stochastic rounding), bf16 m v, bf16 grads", 14.0, 4,
     "ds_fp32", run_lean},
};
#define NMODES (sizeof modes / sizeof modes[0])

/* One mode's best seconds per step on the arrays. */
static double adamw_time(zs_pool *pool, zs_adamw_isa isa, mode_fn run, arrays *a, int reps) {
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    zs_adamw_coef c;
    zs_adamw_coef_make(&c, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, r + 1, 1.0);
    double t0 = bench_now();
    run(pool, isa, &c, a);
    double dt = bench_now() - t0;
    if (r > 0 && dt < best) best = dt;
  }
  return best;
}

/* A peer's params/s and GB/s for (kind, n, threads) from its CSV (columns
   kind,isa,n,threads,seconds,params_per_s,GBps); 0 when absent. The last matching row wins. */
static int peer_lookup(const char *path, const char *want, size_t n, int threads, double *pps_out,
                       double *gbps_out) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return 0;
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    char kind[64], isa[64];
    double nn, sec, pps, gbps;
    int th;
    if (sscanf(line, "%63[^,],%63[^,],%lf,%d,%lf,%lf,%lf", kind, isa, &nn, &th, &sec, &pps,
               &gbps) == 7 &&
        !strcmp(kind, want) && (size_t)nn == n && th == threads)
      *pps_out = pps, *gbps_out = gbps, found = 1;
  }
  fclose(f);
  return found;
}

/* The first peer file holding (kind, n, threads). */
static int peer_find(const opts *o, const char *kind, size_t n, int threads, double *pps,
                     double *gbps) {
  for (int i = 0; i < o->npeer; i++)
    if (peer_lookup(o->peer_csv[i], kind, n, threads, pps, gbps)) return 1;
  return 0;
}

/* Prints and appends one result row. */
static void row(FILE *csv, const char *kind, const char *isa, size_t n, int threads, double sec,
                double bytes_per_elem) {
  double pps = (double)n / sec, gbps = bytes_per_elem * (double)n / sec / 1e9;
  printf("%-13s %-7s %11zu %3d  %10.4f ms  %8.3f Gparam/s  %7.2f GB/s", kind, isa, n, threads,
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
    else if ((!strcmp(a, "--torch-csv") || !strcmp(a, "--peer-csv")) && o->npeer < MAXPEER)
      o->peer_csv[o->npeer++] = v, i++;
    else if (!strcmp(a, "--bw-n"))
      triad_n = (size_t)strtod(v, NULL), i++;
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
  if (triad_n < CHUNK) triad_n = CHUNK;
}

/* The arrays of n elements from the arena, first touched by the pool. */
static arrays arrays_get(zs_host_arena *ar, zs_pool *pool, size_t n) {
  arrays a = {arena_get(ar, n * 4), arena_get(ar, n * 4),
              arena_get(ar, n * 4), arena_get(ar, n * 4),
              arena_get(ar, n * 2), arena_get(ar, n * 2),
              arena_get(ar, n * 2), arena_get(ar, n * 2),
              arena_get(ar, n * 2), n};
  fill_ctx f = {{a.p, a.m, a.v, a.g}, {a.gb, a.out}, n};
  zs_pool_run(pool, (n + CHUNK - 1) / CHUNK, fill_item, &f);
  fill_ctx h = {{NULL, NULL, NULL, NULL}, {a.m16, a.v16}, n};
  zs_pool_run(pool, (n + CHUNK - 1) / CHUNK, fill_item, &h);
  fill_ctx r = {{NULL, NULL, NULL, NULL}, {a.rem, NULL}, n};
  zs_pool_run(pool, (n + CHUNK - 1) / CHUNK, fill_item, &r);
  return a;
}

static void arrays_free(zs_host_arena *ar, arrays *a) {
  void *all[] = {a->p, a->m, a->v, a->g, a->m16, a->v16, a->gb, a->out, a->rem};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    zs_host_arena_free(ar, all[k]);
}

/* The peers' rows at (n, threads): DeepSpeed CPUAdam fp32 and bf16 state, torch AdamW. */
static void peer_rows(const opts *o, size_t n, int threads) {
  static const char *const kinds[] = {"ds_fp32", "ds_bf16", "torch"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    double pps, gbps;
    if (peer_find(o, kinds[i], n, threads, &pps, &gbps))
      printf("%-13s %-7s %11zu %3d  %10.4f ms  %8.3f Gparam/s  %7.2f GB/s  (peer)\n", kinds[i],
             "peer", n, threads, (double)n / pps * 1e3, pps / 1e9, gbps);
  }
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
  printf("host arena: %s\nactive AdamW path: %s\nmodes:", zs_host_arena_info(ar),
         zs_adamw_isa_name(zs_adamw_isa_active()));
  for (size_t i = 0; i < NMODES; i++)
    printf(" %s (%s; %d B/param of optimizer state, %.0f B moved/element)%s", modes[i].kind,
           modes[i].what, modes[i].state, modes[i].bytes, i + 1 < NMODES ? ";" : "\n");
  double triad[MAXN] = {0}, rmw[MAXN] = {0};
  printf("%-13s %-7s %11s %3s  %13s  %17s  %12s\n", "kind", "isa", "n", "thr", "time/step", "rate",
         "bandwidth");
  zs_pool *pools[MAXN] = {0};
  for (int k = 0; k < o.nthreads; k++) {
    if (zs_pool_create(o.threads[k], zs_host_arena_node(ar), &pools[k]) != ZS_OK) {
      fprintf(stderr, "cpu_adamw: %s\n", zs_last_error());
      return 1;
    }
    bandwidth(ar, pools[k], o.reps, &triad[k], &rmw[k]);
  }
  /* The largest size at the most threads, per mode: seconds and its peer's params/s. */
  double last_sec[NMODES] = {0}, last_peer[NMODES] = {0}, last_torch = 0;
  /* and each side at its best thread count at the largest size (a peer that runs slower on more
     threads is paired with its faster run) */
  double best_pps[NMODES] = {0}, best_peer[NMODES] = {0};
  size_t last_n = 0;
  int last_k = 0;
  for (int s = 0; s < o.nsizes; s++) {
    size_t n = (size_t)o.sizes[s];
    arrays a = arrays_get(ar, pools[o.nthreads - 1], n);
    for (size_t md = 0; md < NMODES; md++)
      best_pps[md] = best_peer[md] = 0;
    if (n == 10000000) /* every path at one size, one thread: the vector speed-up */
      for (size_t md = 0; md < NMODES; md++)
        for (int isa = ZS_ADAMW_ISA_SCALAR; isa <= ZS_ADAMW_ISA_AVX512; isa++)
          if (zs_adamw_isa_supported((zs_adamw_isa)isa)) {
            row(csv, modes[md].kind, zs_adamw_isa_name((zs_adamw_isa)isa), n, 1,
                adamw_time(NULL, (zs_adamw_isa)isa, modes[md].run, &a, o.reps), modes[md].bytes);
            printf("\n");
          }
    for (int k = 0; k < o.nthreads; k++) {
      const char *isa = zs_adamw_isa_name(zs_adamw_isa_active());
      for (size_t md = 0; md < NMODES; md++) {
        double t = adamw_time(pools[k], ZS_ADAMW_ISA_AUTO, modes[md].run, &a, o.reps);
        row(csv, modes[md].kind, isa, n, o.threads[k], t, modes[md].bytes);
        double pps = 0, gbps = 0;
        if (peer_find(&o, modes[md].peer, n, o.threads[k], &pps, &gbps))
          printf("  %.2fx %s", (double)n / t / pps, modes[md].peer);
        printf("\n");
        last_sec[md] = t;
        last_peer[md] = pps;
        if ((double)n / t > best_pps[md]) best_pps[md] = (double)n / t;
        if (pps > best_peer[md]) best_peer[md] = pps;
      }
      peer_rows(&o, n, o.threads[k]);
      double pps = 0, tg = 0;
      peer_find(&o, "torch", n, o.threads[k], &pps, &tg);
      last_torch = tg;
      last_k = k;
      last_n = n;
    }
    arrays_free(ar, &a);
  }
  /* Bandwidth again after the AdamW runs, keeping the better pass: on a shared machine the load
     drifts during the run, and every figure here is a best-of. */
  for (int k = 0; k < o.nthreads; k++) {
    double t2, r2;
    bandwidth(ar, pools[k], o.reps, &t2, &r2);
    triad[k] = t2 > triad[k] ? t2 : triad[k];
    rmw[k] = r2 > rmw[k] ? r2 : rmw[k];
    row(csv, "triad", "-", triad_n, o.threads[k], 12.0 * (double)triad_n / triad[k] / 1e9, 12.0);
    printf("\n");
    row(csv, "rmw_4r3w", "-", triad_n, o.threads[k], 28.0 * (double)triad_n / rmw[k] / 1e9, 28.0);
    printf("\n");
  }
  double last_gbps = 28.0 * (double)last_n / last_sec[0] / 1e9, last_triad = triad[last_k];
  printf("AdamW (largest n, %d threads, fp32 states and grads) runs at %.0f%% of its own access "
         "pattern's bandwidth (rmw_4r3w)\n",
         o.threads[last_k], 100.0 * last_gbps / rmw[last_k]);
  for (size_t md = 0; md < NMODES; md++) {
    double gbps = modes[md].bytes * (double)last_n / last_sec[md] / 1e9;
    double pps = (double)last_n / last_sec[md];
    printf("cpu_adamw mode %s: %.2f GB/s, %.3f Gparam/s, %.0f%% of triad", modes[md].kind, gbps,
           pps / 1e9, 100.0 * gbps / last_triad);
    if (last_peer[md] > 0)
      printf(", %.2fx %s params/s; best thread counts: %.3f vs %.3f Gparam/s, %.2fx\n",
             pps / last_peer[md], modes[md].peer, best_pps[md] / 1e9, best_peer[md] / 1e9,
             best_pps[md] / best_peer[md]);
    else
      printf(", n/a x %s params/s (no peer CSV row)\n", modes[md].peer);
  }
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
