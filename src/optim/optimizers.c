/* The optimizer selector (optimizer.h): the module of each name in base/opt_shape.c's table. */
#include <string.h>

#include "optim/adamw/adamw.h"
#include "optim/optimizer.h"

const zs_optimizer *zs_optimizer_for(const zs_config *c) {
  const char *name = zs_opt_shape_of(c)->name;
  (void)name; /* one module so far */
  return zs_optimizer_adamw();
}
