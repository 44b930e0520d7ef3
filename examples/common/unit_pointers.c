/* A unit's param and gradient pointers for the examples' kernels (see unit_pointers.h). */
#include "unit_pointers.h"

#include "util.h"

int ex_unit_params(zs_unit *unit, gpt2_widen *w, int slot, void **p) {
  if (w->on) return gpt2_widen_params(w, slot, unit, p);
  for (int t = 0; t < zs_unit_num_tensors(unit); t++) {
    p[t] = zs_unit_param(unit, t);
    if (!p[t])
      return gpt2_fail("zs_unit_param(%s, %d) is NULL after gather", zs_unit_name(unit), t);
  }
  return 0;
}

int ex_unit_grads(zs_unit *unit, const gpt2_dev *dev, void *frozen, gpt2_widen *w, int slot,
                  void **g) {
  if (zs_unit_is_frozen(unit)) {
    size_t off = 0;
    for (int t = 0; t < zs_unit_num_tensors(unit); t++) {
      g[t] = (char *)frozen + off * dev->esz;
      off += (size_t)zs_unit_numel(unit, t);
    }
    return gpt2_dev_zero(dev, frozen, off * dev->esz);
  }
  if (w->on) return gpt2_widen_grads(w, slot, unit, g);
  for (int t = 0; t < zs_unit_num_tensors(unit); t++) {
    g[t] = zs_unit_grad(unit, t);
    if (!g[t])
      return gpt2_fail("zs_unit_grad(%s, %d) is NULL inside a step", zs_unit_name(unit), t);
  }
  return 0;
}

size_t ex_unit_numel(zs_unit *unit) {
  size_t n = 0;
  for (int t = 0; t < zs_unit_num_tensors(unit); t++)
    n += (size_t)zs_unit_numel(unit, t);
  return n;
}
