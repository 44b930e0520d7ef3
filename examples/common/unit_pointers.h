/* The pointers a training example's kernels read and write for one unit: its gathered params and,
 * inside a step, its gradients (zs_unit_param / zs_unit_grad, or the fp32 scratch of common/widen.h
 * when bf16 params meet the fp32-only CPU kernels, or a throw-away buffer for a frozen unit).
 * Errors go to gpt2_error() (common/util.h). */
#ifndef COMMON_UNIT_POINTERS_H
#define COMMON_UNIT_POINTERS_H

#include <stddef.h>

#include "device.h"
#include "widen.h"
#include "zshard.h"

/* p[t] = the gathered params of every tensor of unit (call between zs_unit_gather and
   zs_unit_release): fp32 copies in widen slot `slot` when w->on, else zs_unit_param. 0, or -1
   when one is NULL (the unit is not gathered). */
int ex_unit_params(zs_unit *unit, gpt2_widen *w, int slot, void **p);
/* g[t] = where the kernels add unit's gradient of tensor t during a step. A frozen unit has none
   (zs_unit_grad refuses it): its tensors are laid out back to back in `frozen` (at least
   ex_unit_numel(unit) elements of dev's dtype), which is zeroed here and thrown away. Otherwise
   widen slot `slot` when w->on, else zs_unit_grad. 0, or -1 (outside a step). */
int ex_unit_grads(zs_unit *unit, const gpt2_dev *dev, void *frozen, gpt2_widen *w, int slot,
                  void **g);
/* Elements of all of unit's tensors together. */
size_t ex_unit_numel(zs_unit *unit);

#endif
