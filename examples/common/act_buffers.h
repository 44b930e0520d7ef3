/* The activation buffers of a training example's model on its device: allocations counted into
 * the bytes the memory table prints, the residual stream, the frozen units' throw-away gradient,
 * and their release. Errors go to gpt2_error() (common/util.h). */
#ifndef COMMON_ACT_BUFFERS_H
#define COMMON_ACT_BUFFERS_H

#include <stddef.h>

#include "device.h"
#include "zshard.h"

/* A model's allocations so far: bytes asked for, and whether any failed. */
typedef struct {
  const gpt2_dev *dev;
  size_t total;
  int bad;
} ex_act_count;

/* A zero-filled device buffer of `bytes`, counted into c->total; NULL (and c->bad set) when it
   could not be had. */
void *ex_act_buf(ex_act_count *c, size_t bytes);
/* res[0..L] = L+1 residual-stream buffers of `bytes` each (counted); res itself from calloc. 0,
   or -1 when the host array could not be had (device failures: c->bad). */
int ex_residuals_alloc(ex_act_count *c, void ***res, int L, size_t bytes);
/* Frees res[0..L] and the array (NULL: nothing). */
void ex_residuals_free(const gpt2_dev *dev, void **res, int L);
/* max(largest, elements of unit) when unit is frozen, else largest: fold it over the units to
   size the buffer a frozen unit's kernels write their unused gradients into. */
size_t ex_largest_frozen(zs_unit *unit, size_t largest);
/* Frees n device buffers (NULL entries are skipped). */
void ex_dev_free_all(const gpt2_dev *dev, void *const *ps, size_t n);

#endif
