/* Each optimizer's state shape (opt_shape.h): the selector's table. */
#include "base/opt_shape.h"

static const zs_opt_shape adamw = {"adamw", 1, 1, 2, {"exp_avg", "exp_avg_sq"}, {"m", "v"}};
/* SGD keeps torch's momentum_buffer only with momentum. */
static const zs_opt_shape sgd_momentum = {"sgd", 0, 0, 1, {"momentum_buffer"}, {"buf"}};
static const zs_opt_shape sgd_plain = {"sgd", 0, 0, 0, {NULL}, {NULL}};
static const zs_opt_shape lion = {"lion", 1, 0, 1, {"exp_avg"}, {"m"}};

const zs_opt_shape *zs_opt_shape_of(const zs_config *c) {
  switch (c->optimizer) {
  case ZS_OPT_ADAMW:
    return &adamw;
  case ZS_OPT_SGD:
    return c->sgd.momentum != 0 ? &sgd_momentum : &sgd_plain;
  case ZS_OPT_LION:
    return &lion;
  default:
    return NULL;
  }
}
