/* The optimizer selector (optimizer.h): the module of each name in base/opt_shape.c's table. */
#include <string.h>

#include "optim/adamw/adamw.h"
#include "optim/optimizer.h"
#include "optim/lion/lion.h"
#include "optim/sgd/sgd.h"

const zs_optimizer *zs_optimizer_for(const zs_config *c) {
  const char *name = zs_opt_shape_of(c)->name;
  if (strcmp(name, "sgd") == 0) return zs_optimizer_sgd();
  if (strcmp(name, "lion") == 0) return zs_optimizer_lion();
  return zs_optimizer_adamw();
}
