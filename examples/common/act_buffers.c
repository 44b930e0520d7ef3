/* Counted activation buffers of the training examples (see act_buffers.h). */
#include "act_buffers.h"

#include <stdlib.h>

#include "unit_pointers.h"
#include "util.h"

void *ex_act_buf(ex_act_count *c, size_t bytes) {
  void *p = gpt2_dev_alloc(c->dev, bytes);
  if (!p) c->bad = 1;
  c->total += bytes;
  return p;
}

int ex_residuals_alloc(ex_act_count *c, void ***res, int L, size_t bytes) {
  *res = calloc((size_t)L + 1, sizeof **res);
  if (!*res) return gpt2_fail("out of host memory");
  for (int l = 0; l <= L; l++)
    (*res)[l] = ex_act_buf(c, bytes);
  return 0;
}

void ex_residuals_free(const gpt2_dev *dev, void **res, int L) {
  if (!res) return;
  for (int l = 0; l <= L; l++)
    gpt2_dev_free(dev, res[l]);
  free(res);
}

size_t ex_largest_frozen(zs_unit *unit, size_t largest) {
  if (!zs_unit_is_frozen(unit)) return largest;
  size_t n = ex_unit_numel(unit);
  return n > largest ? n : largest;
}

void ex_dev_free_all(const gpt2_dev *dev, void *const *ps, size_t n) {
  for (size_t i = 0; i < n; i++)
    gpt2_dev_free(dev, ps[i]);
}
