/* The optimizer registry (base/opt_shape.h): the one list of optimizers. Entry i is
 * zs_config.optimizer i (the header names the first ones ZS_OPT_*; a new optimizer takes the next
 * id and is found by name, zs_optimizer_id); a new optimizer is its folder and one entry here. The
 * layers below read the list through base/opt_shape.h (a link-time reference, not an include). */
#include "optim/adafactor/adafactor.h"
#include "optim/adamw/adamw.h"
#include "optim/lion/lion.h"
#include "optim/muon/muon.h"
#include "optim/sgd/sgd.h"

const zs_opt_entry *const zs_opt_registry[] = {[ZS_OPT_ADAMW] = &zs_opt_adamw,
                                               [ZS_OPT_SGD] = &zs_opt_sgd,
                                               [ZS_OPT_LION] = &zs_opt_lion,
                                               &zs_opt_muon, /* the next ids, in order */
                                               &zs_opt_adafactor};
const int zs_opt_registry_n = (int)(sizeof zs_opt_registry / sizeof zs_opt_registry[0]);
