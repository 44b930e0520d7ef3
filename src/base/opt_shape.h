/* The shape of each optimizer's state, as pure data: its name and the arrays it keeps, each one
 * value per element of the optimizer range in zs_config.moment_dtype. The layers below the
 * optimizer (the state table, the planner, the checkpoint's names) size and name the state from
 * this alone; the arithmetic is the optimizer module's (src/optim/optimizer.h). */
#ifndef ZS_BASE_OPT_SHAPE_H
#define ZS_BASE_OPT_SHAPE_H

#include "zshard.h"

/* The most state arrays one optimizer keeps. */
#define ZS_OPT_MAX_STATE 2

typedef struct {
  const char *name; /* "adamw" */
  int betas;        /* reads zs_config.optim.beta1, beta2 (validated in [0, 1)) */
  int cuda;         /* runs on the CUDA device (its module has CUDA kernels) */
  int nstate;       /* 0 .. ZS_OPT_MAX_STATE */
  const char *state_name[ZS_OPT_MAX_STATE];  /* torch.optim's names: "exp_avg", "exp_avg_sq" */
  const char *state_short[ZS_OPT_MAX_STATE]; /* in file names and messages: "m", "v" */
} zs_opt_shape;

/* The shape of the optimizer c selects; NULL for an unknown c->optimizer (zs_config_validate
   refuses it). */
const zs_opt_shape *zs_opt_shape_of(const zs_config *c);

#endif
