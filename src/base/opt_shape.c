/* Each optimizer's state shape (opt_shape.h): the selector's table. */
#include "base/opt_shape.h"

static const zs_opt_shape adamw = {"adamw", 2, {"exp_avg", "exp_avg_sq"}, {"m", "v"}};

const zs_opt_shape *zs_opt_shape_of(const zs_config *c) {
  (void)c;
  return &adamw;
}
