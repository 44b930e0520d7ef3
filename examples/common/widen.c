/* fp32 compute on bf16 params (see widen.h). */
#include "widen.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "util.h"

/* Elements of all tensors of u. */
static size_t unit_numel(zs_unit *u) {
  size_t n = 0;
  for (int t = 0; t < zs_unit_num_tensors(u); t++)
    n += (size_t)zs_unit_numel(u, t);
  return n;
}

int gpt2_widen_init(gpt2_widen *w, int on, int slots, zs_engine *e) {
  memset(w, 0, sizeof *w);
  if (!on) return 0;
  if (slots < 1 || slots > GPT2_WIDEN_SLOTS) return gpt2_fail("gpt2_widen_init: 1 or 2 slots");
  w->on = 1;
  w->slots = slots;
  for (int i = 0; i < zs_engine_num_units(e); i++) {
    size_t n = unit_numel(zs_engine_unit(e, i));
    if (n > w->cap) w->cap = n;
  }
  for (int s = 0; s < slots; s++) {
    w->p[s] = malloc(w->cap * sizeof(float));
    w->g[s] = malloc(w->cap * sizeof(float));
    if (!w->p[s] || !w->g[s])
      return gpt2_fail("out of host memory for the fp32 scratch of bf16 params (%zu bytes)",
                       gpt2_widen_bytes(w));
  }
  return 0;
}

size_t gpt2_widen_bytes(const gpt2_widen *w) {
  return w->on ? (size_t)w->slots * 2 * w->cap * sizeof(float) : 0;
}

void gpt2_widen_free(gpt2_widen *w) {
  for (int s = 0; s < GPT2_WIDEN_SLOTS; s++) {
    free(w->p[s]);
    free(w->g[s]);
  }
  memset(w, 0, sizeof *w);
}

int gpt2_widen_params(gpt2_widen *w, int s, zs_unit *u, void **p) {
  size_t off = 0;
  for (int t = 0; t < zs_unit_num_tensors(u); t++) {
    const void *src = zs_unit_param(u, t);
    if (!src) return gpt2_fail("zs_unit_param(%s, %d) is NULL after gather", zs_unit_name(u), t);
    const size_t n = (size_t)zs_unit_numel(u, t);
    gpt2_to_f32(ZS_BF16, w->p[s] + off, src, n);
    p[t] = w->p[s] + off;
    off += n;
  }
  return 0;
}

int gpt2_widen_grads(gpt2_widen *w, int s, zs_unit *u, void **g) {
  if (w->gunit[s] != u) TRY(gpt2_widen_fold(w, s));
  size_t off = 0;
  for (int t = 0; t < zs_unit_num_tensors(u); t++) {
    g[t] = w->g[s] + off;
    off += (size_t)zs_unit_numel(u, t);
  }
  if (w->gunit[s] != u) memset(w->g[s], 0, off * sizeof(float));
  w->gunit[s] = u;
  return 0;
}

int gpt2_widen_fold(gpt2_widen *w, int s) {
  zs_unit *u = w->gunit[s];
  if (!u) return 0;
  w->gunit[s] = NULL;
  size_t off = 0;
  for (int t = 0; t < zs_unit_num_tensors(u); t++) {
    uint16_t *dst = zs_unit_grad(u, t);
    if (!dst) return gpt2_fail("zs_unit_grad(%s, %d) is NULL inside a step", zs_unit_name(u), t);
    const size_t n = (size_t)zs_unit_numel(u, t);
    const float *src = w->g[s] + off;
    for (size_t i = 0; i < n; i++) {
      float acc;
      gpt2_to_f32(ZS_BF16, &acc, &dst[i], 1);
      acc += src[i];
      gpt2_from_f32(ZS_BF16, &dst[i], &acc, 1);
    }
    off += n;
  }
  return 0;
}
