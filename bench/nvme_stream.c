/* The NVMe tier's stream at the disk's rate: a rank's optimizer state (fp32 master, m, v: 12
 * bytes per parameter, --gib GiB in all) in O_DIRECT files under --dir, filled by one WRITE pass,
 * then --reps UPDATE passes that run the CPU AdamW (zs_cpu_adamw_mt over --threads workers) on
 * each chunk while the next chunk's read and the previous chunk's write are in flight (--ahead
 * chunks each side, --chunk-mib MiB per array per chunk). The gradient and the published params
 * are one chunk's worth, reused (only the state is streamed, as in the engine). Prints one line
 * per pass and a final "nvme_stream:" line: the fill's write rate, the update passes' median
 * I/O rate (bytes read + written / time), and the AdamW's own in-memory rate on one chunk for
 * context. bench/nvme.sh runs it beside dd's O_DIRECT rates of the same directory.
 * Usage: nvme_stream --dir DIR [--gib 1] [--chunk-mib 8] [--ahead 2] [--threads 2] [--reps 3] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "optim/adamw/adamw_mt.h"
#include "offload/nvme_dir.h"
#include "offload/nvme_file.h"
#include "offload/nvme_ring.h"
#include "offload/nvme_staging.h"
#include "offload/nvme_stream.h"
#include "offload/worker_pool.h"

#include "bench_util.h"

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One pass in mode; WRITE fills each chunk with a deterministic state, UPDATE runs AdamW step t.
   Returns the seconds it took; *bytes = bytes read + written. */
static double pass(zs_nvme_stream_desc *d, zs_nvme_ring *ring, zs_nvme_staging *st, zs_pool *pool,
                   zs_nvme_mode mode, long long t, const float *grad, float *out, uint64_t *bytes) {
  zs_adamw_coef c;
  zs_adamw_coef_make(&c, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, t, 1.0);
  d->mode = mode;
  zs_nvme_stream *s = NULL;
  const double t0 = bench_now();
  DIE(zs_nvme_stream_open(d, ring, st, &s));
  for (zs_nvme_chunk ck;;) {
    DIE(zs_nvme_stream_next(s, &ck));
    if (!ck.count) break;
    float *p = ck.span[0], *m = ck.span[1], *v = ck.span[2];
    if (mode == ZS_NVME_WRITE) {
      for (size_t i = 0; i < ck.count; i++) {
        p[i] = (float)((ck.first + i) % 1000) * 1e-3f - 0.5f;
        m[i] = 0.0f;
        v[i] = 0.0f;
      }
    } else {
      zs_cpu_adamw_mt(pool, &c, p, m, v, grad, ZS_F32, out, ZS_F32, ck.count);
    }
    DIE(zs_nvme_stream_commit(s));
  }
  DIE(zs_nvme_stream_finish(s));
  const double sec = bench_now() - t0;
  uint64_t rd = 0, wr = 0;
  zs_nvme_stream_bytes(s, &rd, &wr);
  *bytes = rd + wr;
  zs_nvme_stream_close(s);
  return sec;
}

int main(int argc, char **argv) {
  const char *dir = NULL;
  double gib = 1.0;
  int chunk_mib = 8, ahead = 2, threads = 2, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    if (!strcmp(argv[i], "--gib")) gib = atof(argv[i + 1]);
    if (!strcmp(argv[i], "--chunk-mib")) chunk_mib = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--ahead")) ahead = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
  }
  if (!dir || gib <= 0 || gib > 4096 || chunk_mib < 1 || chunk_mib > 256 || ahead < 1 ||
      ahead > 16 || threads < 1 || reps < 1 || reps > 50) {
    fprintf(stderr, "usage: nvme_stream --dir DIR [--gib 1] [--chunk-mib 8] [--ahead 2] "
                    "[--threads 2] [--reps 3]\n");
    return 2;
  }
  zs_nvme_dir *nd = NULL;
  DIE(zs_nvme_dir_open(dir, 0, &nd));
  const size_t n = (size_t)(gib * 1073741824.0 / 12.0);
  const size_t chunk = (size_t)chunk_mib << 18; /* fp32 elements: chunk_mib MiB per array */
  zs_nvme_stream_desc d = {.narrays = 3, .n = n, .chunk = chunk, .ahead = (unsigned)ahead};
  zs_nvme_file *f[3] = {NULL, NULL, NULL};
  DIE(zs_nvme_dir_check_space(nd, (uint64_t)n * 12));
  for (int i = 0; i < 3; i++) {
    const char *names[3] = {"master", "m", "v"};
    d.elem_bytes[i] = 4;
    DIE(zs_nvme_file_create(nd, names[i], (uint64_t)n * 4, &f[i]));
    d.files[i] = f[i];
  }
  zs_nvme_ring *ring = NULL;
  zs_nvme_staging *st = NULL;
  zs_pool *pool = NULL;
  DIE(zs_nvme_ring_create(zs_nvme_stream_ring_entries(&d), &ring));
  DIE(zs_nvme_staging_create(zs_nvme_stream_slot_bytes(&d), zs_nvme_stream_slots(d.ahead),
                             zs_nvme_dir_align(nd), 0, &st));
  if (threads > 1) DIE(zs_pool_create(threads, ZS_POOL_UNBOUND, &pool));
  float *grad = malloc(chunk * 4), *out = malloc(chunk * 4);
  if (!grad || !out) return 1;
  for (size_t i = 0; i < chunk; i++)
    grad[i] = (float)(i % 97) * 1e-3f - 0.05f;
  printf("nvme_stream: %s, %.3f GiB of state (3 x %zu fp32), chunks of %d MiB per array, ahead "
         "%d, %d AdamW thread(s), staging %.1f MiB\n",
         zs_nvme_dir_path(nd), (double)n * 12 / 1073741824.0, n, chunk_mib, ahead, threads,
         (double)zs_nvme_stream_slots(d.ahead) * (double)zs_nvme_stream_slot_bytes(&d) / 1048576.0);
  uint64_t bytes = 0;
  const double fill_s = pass(&d, ring, st, pool, ZS_NVME_WRITE, 1, grad, out, &bytes);
  const double fill_gbs = (double)bytes / fill_s / 1e9;
  printf("fill (WRITE pass): %.3f s, %.3f GB/s\n", fill_s, fill_gbs);
  double *rate = calloc((size_t)reps, sizeof *rate);
  for (int r = 0; r < reps; r++) {
    const double sec = pass(&d, ring, st, pool, ZS_NVME_UPDATE, r + 1, grad, out, &bytes);
    rate[r] = (double)bytes / sec / 1e9;
    printf("update pass %d: %.3f s, %.3f GB/s read + write (%.3f GB/s of state)\n", r + 1, sec,
           rate[r], (double)n * 12 / sec / 1e9);
  }
  qsort(rate, (size_t)reps, sizeof *rate, cmp_d);
  /* The AdamW alone on one chunk in memory (what the stream hides the I/O behind). */
  float *p = malloc(chunk * 4), *m = calloc(chunk, 4), *v = calloc(chunk, 4);
  if (!p || !m || !v) return 1;
  memcpy(p, grad, chunk * 4);
  zs_adamw_coef c;
  zs_adamw_coef_make(&c, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1.0);
  zs_cpu_adamw_mt(pool, &c, p, m, v, grad, ZS_F32, out, ZS_F32, chunk); /* pages touched */
  const double c0 = bench_now();
  for (int r = 0; r < 5; r++)
    zs_cpu_adamw_mt(pool, &c, p, m, v, grad, ZS_F32, out, ZS_F32, chunk);
  const double adamw_gbs = 5.0 * (double)chunk * 12 / (bench_now() - c0) / 1e9;
  printf("nvme_stream: fill %.3f GB/s, update I/O %.3f GB/s (median of %d), AdamW in memory %.2f "
         "GB/s of state\n",
         fill_gbs, rate[reps / 2], reps, adamw_gbs);
  free(p), free(m), free(v), free(rate), free(grad), free(out);
  zs_pool_destroy(pool);
  zs_nvme_staging_destroy(st);
  zs_nvme_ring_destroy(ring);
  for (int i = 0; i < 3; i++)
    zs_nvme_file_close(f[i]);
  zs_nvme_dir_close(nd);
  return 0;
}
