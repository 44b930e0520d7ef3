/* GPT-2 random initialisation through zs_unit_set_param. */
#include "init.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util.h"

/* Standard deviation of a 2-D tensor of unit u (1-D tensors are constants, see fill). */
static float init_std(const gpt2_config *c, int u, int t) {
  int block = u >= 1 && u <= c->layers;
  if (block && (t == BLK_PROJ_W || t == BLK_FCPROJ_W)) return 0.02f / sqrtf(2.0f * c->layers);
  return 0.02f;
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
  float std = init_std(c, u, t);
  uint64_t stream = (uint64_t)u * 64 + (uint64_t)t;
  size_t live = n;
  if (u == 0 && t == EMB_WTE) live = (size_t)c->vocab * (size_t)c->channels; /* padded rows: 0 */
  for (size_t i = 0; i < n; i++)
    h[i] = i < live ? std * rng_normal(seed, stream, i) : 0.0f;
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
