/* GPT-2 random initialisation through zs_unit_set_param. */
#include "init.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/rng.h"
#include "../common/util.h"

/* Standard deviation of a 2-D tensor of unit u (1-D tensors are constants, see fill). */
static float init_std(const gpt2_config *c, int u, int t) {
  int block = u >= 1 && u <= c->layers;
  if (block && (t == BLK_PROJ_W || t == BLK_FCPROJ_W)) return 0.02f / sqrtf(2.0f * c->layers);
  return 0.02f;
}

/* Normal draws std * N(0, 1) of (seed, stream) for elements [begin, end) of h; 0 from live on. */
typedef struct {
  float *h;
  size_t begin, end, live;
  float std;
  uint64_t seed, stream;
} normal_fill;

static void *normal_run(void *arg) {
  const normal_fill *f = arg;
  for (size_t i = f->begin; i < f->end; i++)
    f->h[i] = i < f->live ? f->std * rng_normal(f->seed, f->stream, i) : 0.0f;
  return NULL;
}

/* Values of tensor t of unit u into h (numel n, rows x cols for matrices). */
static void fill(const gpt2_config *c, int u, int t, const zs_tensor_desc *d, float *h,
                 uint64_t seed) {
  size_t n = (size_t)(d->ndim == 2 ? d->shape[0] * d->shape[1] : d->shape[0]);
  if (d->ndim == 1) {
    int is_ln_w = (u == c->layers + 1 && t == LNF_W) ||
                  (u >= 1 && u <= c->layers && (t == BLK_LN1_W || t == BLK_LN2_W));
    for (size_t i = 0; i < n; i++)
      h[i] = is_ln_w ? 1.0f : 0.0f;
    return;
  }
  size_t live = n;
  if (u == 0 && t == EMB_WTE) live = (size_t)c->vocab * (size_t)c->channels; /* padded rows: 0 */
  normal_fill all = {h, 0, n, live, init_std(c, u, t), seed, (uint64_t)u * 64 + (uint64_t)t};
  /* The draws are counter-based, so threads give the same values: at 1.5B parameters one thread
     took about a minute (log and cos per value), longer than a measured step sequence. */
  enum { MAX_THREADS = 16, PER_THREAD = 1 << 20 };
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nt = n / PER_THREAD;
  if (nt > (size_t)(cores > 1 ? cores : 1)) nt = (size_t)(cores > 1 ? cores : 1);
  if (nt > MAX_THREADS) nt = MAX_THREADS;
  pthread_t th[MAX_THREADS];
  normal_fill part[MAX_THREADS];
  size_t started = 0;
  for (size_t k = 0; nt > 1 && k < nt; k++) {
    part[k] = all;
    part[k].begin = n / nt * k;
    part[k].end = k + 1 == nt ? n : n / nt * (k + 1);
    if (pthread_create(&th[k], NULL, normal_run, &part[k]) != 0) break;
    started++;
  }
  all.begin = started ? part[started - 1].end : 0; /* what no thread took: here */
  normal_run(&all);
  for (size_t k = 0; k < started; k++)
    pthread_join(th[k], NULL);
}

int gpt2_init_random(const gpt2_units *m, uint64_t seed) {
  const gpt2_config *c = &m->cfg;
  size_t maxn = (size_t)c->padded_vocab * c->channels;
  size_t blk = 4 * (size_t)c->channels * c->channels;
  if (blk > maxn) maxn = blk;
  if ((size_t)c->max_seq * c->channels > maxn) maxn = (size_t)c->max_seq * c->channels;
  float *h = malloc(maxn * sizeof(float));
  if (!h) return gpt2_fail("out of host memory for the initial weights");
  for (int u = 0; u < gpt2_num_units(c); u++) {
    zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
    int nt = gpt2_unit_descs(c, u, d);
    for (int t = 0; t < nt; t++) {
      fill(c, u, t, &d[t], h, seed);
      zs_status rc = zs_unit_set_param(gpt2_unit(m, u), t, h);
      if (rc != ZS_OK) {
        free(h);
        return gpt2_fail_zs("zs_unit_set_param", rc);
      }
    }
  }
  free(h);
  return 0;
}
