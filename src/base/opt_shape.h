/* The optimizers as data: the registry (one entry per optimizer, listed once in
 * src/optim/registry.c) and the shape of each one's state, its name and the arrays it keeps, each
 * one value per element of the optimizer range in zs_config.moment_dtype. The layers below the
 * optimizer (the state table, the planner, the checkpoint's names) size and name the state from
 * the shape alone; the arithmetic is the optimizer module's (src/optim/optimizer.h), which the
 * layers below only carry as an opaque pointer. */
#ifndef ZS_BASE_OPT_SHAPE_H
#define ZS_BASE_OPT_SHAPE_H

#include "zshard.h"

/* The most state arrays one optimizer keeps. */
#define ZS_OPT_MAX_STATE 2

typedef struct {
  int betas;                                 /* reads optim.beta1, beta2 (validated in [0, 1)) */
  int cuda;                                  /* runs on the CUDA device (has CUDA kernels) */
  int nstate;                                /* 0 .. ZS_OPT_MAX_STATE */
  const char *state_name[ZS_OPT_MAX_STATE];  /* torch.optim's names: "exp_avg", "exp_avg_sq" */
  const char *state_short[ZS_OPT_MAX_STATE]; /* in file names and messages: "m", "v" */
} zs_opt_shape;

typedef struct zs_optimizer zs_optimizer; /* optim/optimizer.h */

/* One optimizer, defined in its own folder (src/optim/NAME/). */
typedef struct {
  const char *name;                                 /* "adamw": zs_optimizer_id's key */
  const zs_opt_shape *(*shape)(const zs_config *c); /* the state it keeps under c */
  zs_status (*check)(const zs_config *c);           /* its own fields of c (NULL: none) */
  const zs_optimizer *module;                       /* the arithmetic (optim/optimizer.h) */
} zs_opt_entry;

/* The registry (src/optim/registry.c: the one list of optimizers) and its length. Its ids are
   dense: entry i is zs_config.optimizer i. */
extern const zs_opt_entry *const zs_opt_registry[];
extern const int zs_opt_registry_n;

/* The registry's names, "adamw, sgd, ..." (for messages), in buf of n bytes. */
void zs_opt_names(char *buf, size_t n);

/* The entry of c->optimizer; NULL for an unknown id (zs_config_validate refuses it). */
const zs_opt_entry *zs_opt_entry_of(const zs_config *c);

/* The shape of the state the optimizer of c keeps; NULL for an unknown c->optimizer. */
const zs_opt_shape *zs_opt_shape_of(const zs_config *c);

/* The name of c's optimizer ("adamw"); "?" for an unknown id. */
const char *zs_opt_name_of(const zs_config *c);

#endif
