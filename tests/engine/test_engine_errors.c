/* Bad input and bad call order: every case returns the documented status with a non-empty
 * sentence, and a refused call changes nothing (the engine keeps working, params keep values). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_test.h"

static const zs_tensor_desc good[2] = {{"w", 2, {5, 3, 0, 0}, 0}, {"b", 1, {3, 0, 0, 0}, 1}};

static void config_cases(zs_comm *comm) {
  zs_engine *e = (zs_engine *)0x1;
  zs_config c;
  zs_config_default(&c);
  ZS_EXPECT_STATUS(zs_engine_create(NULL, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(e == NULL, "out is cleared on failure");
  ZS_EXPECT_STATUS(zs_engine_create(&c, NULL, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, NULL), ZS_ERR_INVALID_ARG);
  c.stage = 4;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "0..3") != NULL, "message names the range: %s",
            zs_last_error());
  c.stage = -1;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.device = (zs_device)7;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.param_dtype = (zs_dtype)9;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.stage = 2;
  c.offload = ZS_OFFLOAD_PARAMS;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "stage 3") != NULL, "explains why: %s", zs_last_error());
  zs_config_default(&c);
  c.offload = 0x80;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.comm_timeout_s = 0;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.adamw.lr = NAN;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.adamw.beta2 = 1.0f;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.adamw.eps = 0;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.prefetch_units = -2;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.shard_group_size = zs_comm_size(comm) + 1;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
}

/* Optimizer-state precision: impossible combinations are refused with what to change, and
   zs_plan_model refuses them as zs_engine_create does. */
static void precision_cases(zs_comm *comm) {
  zs_engine *e = NULL;
  zs_config c;
  zs_config_default(&c);
  c.master = 7;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.master = ZS_MASTER_PARAMS;
  c.param_dtype = ZS_BF16;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "param_dtype = ZS_F32") != NULL, "says what to change: %s",
            zs_last_error());
  const int64_t numel[1] = {100};
  zs_plan_report r;
  ZS_EXPECT_STATUS(zs_plan_model(&c, 1, numel, 1, 0, SIZE_MAX, SIZE_MAX, &r), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.moment_dtype = (zs_dtype)5;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "use ZS_F32 or ZS_BF16") != NULL, "says what to use: %s",
            zs_last_error());
  ZS_EXPECT(e == NULL, "nothing created");
  /* The host tier runs every mode: with offload bits (optimizer, optimizer and params, params
     alone) and with a budget, the params-as-master, bf16-moment, remainder and lean modes are
     plans and engines (their bits: the engine_hostmodes tests). */
  const unsigned offs[4] = {ZS_OFFLOAD_OPTIMIZER, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS,
                            ZS_OFFLOAD_PARAMS, 0};
  for (int k = 0; k < 7; k++)
    for (int f = 0; f < 4; f++) {
      zs_config_default(&c);
      c.stage = 3;
      c.master = k < 3   ? (k ? ZS_MASTER_PARAMS : ZS_MASTER_FP32)
                 : k < 5 ? ZS_MASTER_REMAINDER
                         : ZS_MASTER_LEAN;
      c.moment_dtype = k != 1 && k != 3 && k != 5 ? ZS_BF16 : ZS_F32;
      if (k >= 3) c.param_dtype = c.reduce_dtype = ZS_BF16;
      c.offload = offs[f];
      if (!offs[f]) c.offload_budget_bytes = 1 << 20;
      ZS_EXPECT(zs_plan_model(&c, 1, numel, 1, 0, SIZE_MAX, SIZE_MAX, &r) == ZS_OK,
                "master %d moments %d offload %u budget %zu: %s", c.master, (int)c.moment_dtype,
                c.offload, c.offload_budget_bytes, zs_last_error());
      ZS_EXPECT(zs_engine_create(&c, comm, &e) == ZS_OK, "master %d offload %u: %s", c.master,
                c.offload, zs_last_error());
      zs_engine_destroy(e);
      e = NULL;
    }
  /* Lean mode: bf16 params only (the refusal says what to change, creates nothing, and the
     planner refuses the same); with offload it is accepted above. */
  {
    zs_config_default(&c);
    c.stage = 2;
    c.master = ZS_MASTER_LEAN;
    c.param_dtype = ZS_F32;
    e = NULL;
    ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
    ZS_EXPECT(strstr(zs_last_error(), "ZS_MASTER_LEAN") != NULL &&
                  strstr(zs_last_error(), "set param_dtype = ZS_BF16") != NULL,
              "lean with fp32 params: says what to change: %s", zs_last_error());
    ZS_EXPECT(e == NULL, "nothing created");
    ZS_EXPECT_STATUS(zs_plan_model(&c, 1, numel, 1, 0, SIZE_MAX, SIZE_MAX, &r), ZS_ERR_INVALID_ARG);
  }
  /* ... and with bf16 params and nothing offloaded it is accepted (bf16 moments too). */
  zs_config_default(&c);
  c.master = ZS_MASTER_LEAN;
  c.param_dtype = ZS_BF16;
  c.moment_dtype = ZS_BF16;
  ZS_OK_OR_DIE(zs_plan_model(&c, 1, numel, 1, 0, SIZE_MAX, SIZE_MAX, &r));
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  zs_engine_destroy(e);
}

/* The remainder master: bf16 params only (with offload or a budget it runs: the host-tier loop
   above), refused with what to change by zs_engine_create and zs_plan_model alike; offloading
   unsharded params is refused as in every mode. */
static void remainder_cases(zs_comm *comm) {
  zs_engine *e = NULL;
  zs_config c;
  const int64_t numel[1] = {100};
  zs_plan_report r;
  zs_config_default(&c);
  c.master = ZS_MASTER_REMAINDER; /* fp32 params: nothing to complete */
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "param_dtype = ZS_BF16") != NULL, "says what to change: %s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_plan_model(&c, 1, numel, 1, 0, SIZE_MAX, SIZE_MAX, &r), ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.stage = 2;
  c.master = ZS_MASTER_REMAINDER;
  c.param_dtype = c.reduce_dtype = ZS_BF16;
  c.offload = ZS_OFFLOAD_PARAMS;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "ZS_OFFLOAD_PARAMS needs sharded params") != NULL,
            "says what to change: %s", zs_last_error());
  ZS_EXPECT(e == NULL, "nothing created");
  ZS_EXPECT_STATUS(zs_plan_model(&c, 1, numel, 1, 0, SIZE_MAX, SIZE_MAX, &r), ZS_ERR_INVALID_ARG);
  /* The legal one is created. */
  zs_config_default(&c);
  c.master = ZS_MASTER_REMAINDER;
  c.param_dtype = c.reduce_dtype = ZS_BF16;
  c.moment_dtype = ZS_BF16;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->master == ZS_MASTER_REMAINDER &&
                zs_engine_config(e)->moment_dtype == ZS_BF16,
            "the engine runs the remainder master, bf16 moments: %s", zs_engine_info(e));
  zs_engine_destroy(e);
}

static void unit_cases(zs_engine *e) {
  zs_unit *u = (zs_unit *)0x1;
  ZS_EXPECT_STATUS(zs_engine_add_unit(NULL, "x", 2, good, &u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(u == NULL, "out cleared");
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, NULL, 2, good, &u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "", 2, good, &u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 0, good, &u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 2, NULL, &u), ZS_ERR_INVALID_ARG);
  zs_tensor_desc bad[1] = {{"t", 2, {4, -1, 0, 0}, 0}}; /* 0 is a dimension (an empty tensor) */
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 1, bad, &u), ZS_ERR_INVALID_ARG);
  bad[0].shape[0] = -3;
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 1, bad, &u), ZS_ERR_INVALID_ARG);
  bad[0].ndim = 0;
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 1, bad, &u), ZS_ERR_INVALID_ARG);
  bad[0].ndim = 5;
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 1, bad, &u), ZS_ERR_INVALID_ARG);
  /* Tensor names: set, non-empty, unique in the unit (checkpoints and messages use them). */
  zs_tensor_desc named[2] = {{NULL, 1, {4, 0, 0, 0}, 0}, {"b", 1, {2, 0, 0, 0}, 0}};
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 2, named, &u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "NULL") != NULL, "names the NULL name: %s", zs_last_error());
  named[0].name = "";
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 2, named, &u), ZS_ERR_INVALID_ARG);
  named[0].name = "b";
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 2, named, &u), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(zs_engine_num_units(e) == 0, "no unit added by a refused call");
  char longname[200];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, longname, 2, good, &u), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "x", 2, good, &u));
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "x", 2, good, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "unique") != NULL, "duplicate named: %s", zs_last_error());
  ZS_EXPECT(zs_engine_num_units(e) == 1, "refused units were not added (%d)",
            zs_engine_num_units(e));
  /* The whole-tensor calls name themselves when they refuse, also where they hand a tensor that
     is not split (here: no tp) to the slice call. */
  float w[8];
#define WHOLE_REFUSED(call, name)                                                                  \
  do {                                                                                             \
    ZS_EXPECT_STATUS(call, ZS_ERR_INVALID_ARG);                                                    \
    ZS_EXPECT(!strncmp(zs_last_error(), name ":", strlen(name) + 1), "not named %s: %s", name,     \
              zs_last_error());                                                                    \
  } while (0)
  WHOLE_REFUSED(zs_unit_get_param_whole(NULL, 0, w), "zs_unit_get_param_whole");
  WHOLE_REFUSED(zs_unit_set_param_whole(u, 5, w), "zs_unit_set_param_whole");
  WHOLE_REFUSED(zs_unit_get_state_whole(u, 0, "exp_avg", NULL), "zs_unit_get_state_whole");
  WHOLE_REFUSED(zs_unit_set_state_whole(NULL, 0, "exp_avg", w), "zs_unit_set_state_whole");
  WHOLE_REFUSED(zs_unit_get_grad_whole(u, -1, w), "zs_unit_get_grad_whole");
  WHOLE_REFUSED(zs_unit_set_grad_whole(NULL, 0, w), "zs_unit_set_grad_whole");
#undef WHOLE_REFUSED
}

/* Parameter groups: refused values name the field and add nothing; ids and tensors are checked;
   an SGD group may not change the optimizer's state (a momentum where the config has none). */
static void group_cases(zs_engine *e, zs_unit *u, zs_comm *comm) {
  zs_param_group g;
  int id = 7;
  ZS_EXPECT_STATUS(zs_engine_group_default(NULL, &g), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  ZS_EXPECT(g.lr_scale == 1.0f && g.beta1 == zs_engine_config(e)->optim.beta1,
            "the default group is not the configuration's");
  ZS_EXPECT_STATUS(zs_engine_add_group(e, NULL, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(id == -1, "a refused group's id is -1 (%d)", id);
  zs_param_group z;
  memset(&z, 0, sizeof z); /* not from zs_engine_group_default */
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &z, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "struct_size is 0"), "%s", zs_last_error());
  z = g;
  z.struct_size = sizeof z + 8; /* a newer header's */
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &z, &id), ZS_ERR_INVALID_ARG);
  g.beta1 = 1.5f;
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &g, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "betas") && strstr(zs_last_error(), "group 1"),
            "names the betas and the group: %s", zs_last_error());
  g.beta1 = 0.9f;
  g.momentum = NAN; /* a field AdamW does not read: still a number, checkpoints record it */
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &g, &id), ZS_ERR_INVALID_ARG);
  g.momentum = 0;
  g.lr_scale = -1;
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &g, &id), ZS_ERR_INVALID_ARG);
  g.lr_scale = 0.5f;
  ZS_EXPECT_STATUS(zs_unit_set_group(u, 0, 1), ZS_ERR_INVALID_ARG); /* refused: no group 1 */
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
  ZS_EXPECT(id == 1, "the first group is 1 (%d)", id);
  ZS_EXPECT_STATUS(zs_unit_set_group(u, 2, id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_group(u, -2, id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_group(NULL, 0, id), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_unit_set_group(u, 1, id));
  /* Plain SGD keeps no buffer: a group with a momentum is refused, one without is not. */
  zs_config c;
  zs_config_default(&c);
  c.optimizer = ZS_OPT_SGD;
  c.sgd.momentum = 0;
  zs_engine *s = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &s));
  ZS_OK_OR_DIE(zs_engine_group_default(s, &g));
  g.momentum = 0.9f;
  ZS_EXPECT_STATUS(zs_engine_add_group(s, &g, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "state"), "says the state would change: %s", zs_last_error());
  g.momentum = 0;
  /* A group's own optimizer: not one with more state than the configuration's, nor an unknown
     one. */
  g.optimizer = "adamw";
  ZS_EXPECT_STATUS(zs_engine_add_group(s, &g, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'adamw'") && strstr(zs_last_error(), "'sgd'"),
            "names both optimizers: %s", zs_last_error());
  g.optimizer = "adam";
  ZS_EXPECT_STATUS(zs_engine_add_group(s, &g, &id), ZS_ERR_INVALID_ARG);
  /* A group from an older header (struct_size before `optimizer`): the field it lacks is the
     default's, whatever lies beyond its size. */
  g.struct_size = offsetof(zs_param_group, optimizer);
  ZS_OK_OR_DIE(zs_engine_add_group(s, &g, &id));
  g.struct_size = sizeof g;
  g.optimizer = "sgd";
  ZS_OK_OR_DIE(zs_engine_add_group(s, &g, &id));
  for (int i = 3; i < ZS_MAX_PARAM_GROUPS; i++) /* groups 1 and 2 above */
    ZS_OK_OR_DIE(zs_engine_add_group(s, &g, &id));
  ZS_EXPECT_STATUS(zs_engine_add_group(s, &g, &id), ZS_ERR_INVALID_ARG); /* 65th */
  zs_engine_destroy(s);
}

/* Muon in a group: its own configuration fields are checked when a group takes it (the engine's
   AdamW never reads them), and commit refuses a tensor that is not a matrix, naming it, with
   nothing allocated (the engine then commits once the tensor leaves the group). */
static void muon_cases(zs_comm *comm) {
  zs_config c;
  zs_config_default(&c);
  c.muon.ns_steps = 0;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  const zs_tensor_desc t[2] = {{"w", 2, {4, 3, 0, 0}, 0}, {"b", 1, {4, 0, 0, 0}, 1}};
  zs_unit *u = NULL;
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "lin", 2, t, &u));
  zs_param_group g;
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  g.optimizer = "muon";
  int id = -1;
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &g, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "muon.ns_steps"), "Muon's check ran: %s", zs_last_error());
  zs_engine_destroy(e);
  c.muon.ns_steps = 5;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "lin", 2, t, &u));
  ZS_OK_OR_DIE(zs_engine_add_group(e, &g, &id));
  ZS_OK_OR_DIE(zs_unit_set_group(u, -1, id));
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'lin.b'") && strstr(zs_last_error(), "matrices"),
            "names the vector: %s", zs_last_error());
  ZS_OK_OR_DIE(zs_unit_set_group(u, 1, 0));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  zs_engine_destroy(e);
  /* Adafactor's relative step reads an fp32 master: a group on it in lean mode is refused. */
  c.param_dtype = c.reduce_dtype = ZS_BF16;
  c.master = ZS_MASTER_LEAN;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g));
  g.optimizer = "adafactor";
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &g, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "fp32 master"), "says why: %s", zs_last_error());
  zs_engine_destroy(e);
}

/* The optimizers by name: each name gives the id whose name it is, the public ids are the names
   the header gives them, an unknown name or id is refused naming the known ones, and an unknown id
   in a config is refused at create. */
static void optimizer_name_cases(zs_comm *comm) {
  static const struct {
    const char *name;
    int id;
  } known[] = {{"adamw", ZS_OPT_ADAMW},
               {"sgd", ZS_OPT_SGD},
               {"lion", ZS_OPT_LION},
               {"muon", 3},
               {"adafactor", 4}};
  int n = 0, id = -7;
  for (; zs_optimizer_name(n); n++) {
    ZS_OK_OR_DIE(zs_optimizer_id(zs_optimizer_name(n), &id));
    ZS_EXPECT(id == n, "'%s' gives id %d, not %d", zs_optimizer_name(n), id, n);
  }
  ZS_EXPECT(n >= 3, "%d optimizers listed", n);
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
    ZS_OK_OR_DIE(zs_optimizer_id(known[k].name, &id));
    ZS_EXPECT(id == known[k].id, "%s: id %d, header %d", known[k].name, id, known[k].id);
  }
  id = 5;
  ZS_EXPECT_STATUS(zs_optimizer_id("adam", &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(id == 5 && strstr(zs_last_error(), "'adam'") && strstr(zs_last_error(), "lion"),
            "an unknown name leaves id and lists the names: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_optimizer_id(NULL, &id), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_optimizer_id("sgd", NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(!zs_optimizer_name(-1) && !zs_optimizer_name(n), "ids out of range have no name");
  zs_config c;
  zs_config_default(&c);
  c.optimizer = n;
  zs_engine *e = NULL;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(!e && strstr(zs_last_error(), "adamw, sgd"), "names the optimizers: %s",
            zs_last_error());
  c.optimizer = ZS_OPT_SGD;
  c.sgd.nesterov = 1; /* without momentum: the module's own check */
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "nesterov"), "SGD's check ran: %s", zs_last_error());
  /* fp32 gradient accumulation: 0 or 1; AdamW's fused remainder and lean kernels read bf16
     gradients (refused), SGD's through the codec read either. */
  zs_config_default(&c);
  c.param_dtype = c.reduce_dtype = ZS_BF16;
  c.grad_accum_fp32 = 2;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  c.grad_accum_fp32 = 1;
  c.master = ZS_MASTER_LEAN;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(strstr(zs_last_error(), "grad_accum_fp32") && strstr(zs_last_error(), "lean"),
            "names the field and the mode: %s", zs_last_error());
  c.master = ZS_MASTER_REMAINDER;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_UNSUPPORTED);
  c.optimizer = ZS_OPT_SGD;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  zs_engine_destroy(e);
}

/* Environment variables are resolved at create for fields left unset; a value the program sets
   wins, even one equal to the default; garbage is refused naming the variable; a config
   zs_config_default did not fill is refused; an older (smaller) config struct is completed with
   defaults. */
static void env_cases(zs_comm *comm) {
  zs_config c;
  zs_config_default(&c);
  zs_engine *e = NULL;
  setenv("ZS_PREFETCH_UNITS", "2", 1);
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->prefetch_units == 2, "the variable applies to a default field");
  ZS_EXPECT(zs_test_origin(e, "prefetch_units") == ZS_ORIGIN_ENV, "the origin is the variable: %s",
            zs_engine_info(e));
  ZS_EXPECT(zs_engine_config(e)->stage == 3 && zs_test_origin(e, "stage") == ZS_ORIGIN_DEFAULT,
            "default origin: %s", zs_engine_info(e));
  zs_engine_destroy(e);
  c.prefetch_units = 3;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->prefetch_units == 3 &&
                zs_test_origin(e, "prefetch_units") == ZS_ORIGIN_PROGRAM,
            "a value the program set wins: %s", zs_engine_info(e));
  zs_engine_destroy(e);
  c.prefetch_units = ZS_UNSET; /* unset again: the variable is read */
  setenv("ZS_PREFETCH_UNITS", "two", 1);
  e = (zs_engine *)0x1;
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(e == NULL && strstr(zs_last_error(), "ZS_PREFETCH_UNITS") != NULL,
            "garbage is refused naming the variable: %s", zs_last_error());
  setenv("ZS_PREFETCH_UNITS", "-1", 1);
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG); /* out of range */
  unsetenv("ZS_PREFETCH_UNITS");
  setenv("ZS_COMM_TIMEOUT_S", "12.5", 1);
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->comm_timeout_s == 12.5, "a double tunable");
  zs_engine_destroy(e);
  unsetenv("ZS_COMM_TIMEOUT_S");
  setenv("ZS_STAGE", "", 1); /* set but empty: unset, as before */
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->stage == 3, "an empty variable is ignored");
  zs_engine_destroy(e);
  unsetenv("ZS_STAGE");
  /* A value the program writes wins even when it equals the default (stage 3 and prefetch 1 are
     the defaults), for every kind of field; a field left alone still takes its variable. */
  setenv("ZS_STAGE", "0", 1);
  setenv("ZS_PREFETCH_UNITS", "4", 1);
  setenv("ZS_COMM_TIMEOUT_S", "7", 1);
  setenv("ZS_OFFLOAD_CHUNK", "1024", 1);
  setenv("ZS_BUCKET_BYTES", "4096", 1);
  zs_config_default(&c);
  c.stage = 3;
  c.comm_timeout_s = 300.0;
  c.offload_chunk = (size_t)1 << 22;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  const zs_config *r = zs_engine_config(e);
  ZS_EXPECT(r->stage == 3 && zs_test_origin(e, "stage") == ZS_ORIGIN_PROGRAM,
            "an explicit stage equal to the default survives ZS_STAGE=0: %s", zs_engine_info(e));
  ZS_EXPECT(r->comm_timeout_s == 300.0 && r->offload_chunk == ((size_t)1 << 22),
            "explicit double / size_t values equal to the default survive (%g, %zu)",
            r->comm_timeout_s, r->offload_chunk);
  ZS_EXPECT(r->prefetch_units == 4 && r->bucket_bytes == 4096 &&
                zs_test_origin(e, "prefetch_units") == ZS_ORIGIN_ENV &&
                zs_test_origin(e, "bucket_bytes") == ZS_ORIGIN_ENV,
            "fields left alone take their variables: %s", zs_engine_info(e));
  zs_engine_destroy(e);
  c.stage = ZS_UNSET; /* unset again: the variable applies */
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->stage == 0, "ZS_UNSET takes the variable: %s", zs_engine_info(e));
  zs_engine_destroy(e);
  unsetenv("ZS_STAGE");
  unsetenv("ZS_PREFETCH_UNITS");
  unsetenv("ZS_COMM_TIMEOUT_S");
  unsetenv("ZS_OFFLOAD_CHUNK");
  unsetenv("ZS_BUCKET_BYTES");
  /* A config not filled by zs_config_default (memset 0, then fields set by hand) is refused: it
     cannot say how large the caller's struct is, so nothing past it may be read. */
  zs_config h;
  memset(&h, 0, sizeof h);
  h.stage = 3;
  h.comm_timeout_s = 60;
  h.adamw.lr = 1e-3f;
  e = (zs_engine *)0x1;
  ZS_EXPECT_STATUS(zs_engine_create(&h, comm, &e), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(e == NULL && strstr(zs_last_error(), "zs_config_default") != NULL,
            "a memset config is refused naming the fix: %s", zs_last_error());
  h.struct_size = sizeof h; /* a size but no version: still not filled by zs_config_default */
  ZS_EXPECT_STATUS(zs_engine_create(&h, comm, &e), ZS_ERR_INVALID_ARG);
  int64_t numel = 100;
  zs_plan_report rep;
  ZS_EXPECT_STATUS(zs_plan_model(&h, 1, &numel, 1, 0, SIZE_MAX, SIZE_MAX, &rep),
                   ZS_ERR_INVALID_ARG);
  zs_config_default(&c);
  c.struct_size = 8; /* smaller than any zs_config */
  ZS_EXPECT_STATUS(zs_engine_create(&c, comm, &e), ZS_ERR_INVALID_ARG);
  /* zs_plan_model gives unset fields their defaults, without the environment. */
  zs_config_default(&c);
  setenv("ZS_STAGE", "0", 1);
  ZS_OK_OR_DIE(zs_plan_model(&c, 4, &numel, 1, 0, SIZE_MAX, SIZE_MAX, &rep));
  ZS_EXPECT(strstr(rep.verdict, "stage 3") != NULL, "plan: unset stage is the default 3: %s",
            rep.verdict);
  unsetenv("ZS_STAGE");
  /* A program built against an older header: its struct ends before the offload fields. */
  zs_config_default(&c);
  c.struct_size = offsetof(zs_config, offload_host_bytes);
  c.offload_chunk = 0; /* beyond the old struct: must not be read */
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->offload_chunk == ((size_t)1 << 22),
            "fields beyond an older struct take their defaults (%zu)",
            zs_engine_config(e)->offload_chunk);
  zs_engine_destroy(e);
  /* A version-2 program: its struct ended in padding where version 3 put `optimizer`; whatever
     those bytes hold, the fields it did not know take their defaults. */
  zs_config_default(&c);
  c.struct_version = 2;
  c.struct_size = offsetof(zs_config, optimizer) + sizeof(int);
  c.optimizer = ZS_OPT_SGD; /* the old struct's padding */
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT(zs_engine_config(e)->optimizer == ZS_OPT_ADAMW,
            "a version-2 struct's padding became optimizer %d", zs_engine_config(e)->optimizer);
  zs_engine_destroy(e);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  ZS_EXPECT(zs_last_error() != NULL, "never NULL");
  for (int s = ZS_OK; s <= ZS_ERR_UNSUPPORTED; s++)
    ZS_EXPECT(zs_status_str((zs_status)s) && zs_status_str((zs_status)s)[0] == 'Z', "name of %d",
              s);
  config_cases(comm);
  optimizer_name_cases(comm);
  muon_cases(comm);
  precision_cases(comm);
  remainder_cases(comm);
  env_cases(comm);

  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.prefetch_units = 0;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_STATE); /* no units */
  unit_cases(e);
  zs_unit *u = zs_engine_unit(e, 0);
  float vals[15];
  for (int i = 0; i < 15; i++)
    vals[i] = (float)i * 0.25f;
  ZS_EXPECT_STATUS(zs_unit_gather(u), ZS_ERR_STATE);             /* before commit */
  ZS_EXPECT_STATUS(zs_unit_set_param(u, 0, vals), ZS_ERR_STATE); /* before commit */
  ZS_EXPECT_STATUS(zs_engine_begin_step(e, 1), ZS_ERR_STATE);    /* before commit */
  group_cases(e, u, comm);
  ZS_OK_OR_DIE(zs_engine_commit(e));
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_STATE);
  zs_param_group g0;
  int gid = 0;
  ZS_OK_OR_DIE(zs_engine_group_default(e, &g0));
  ZS_EXPECT_STATUS(zs_engine_add_group(e, &g0, &gid), ZS_ERR_STATE); /* after commit */
  /* The user blob: copied, bounded, cleared by NULL, 0; refused calls keep the old one. */
  const void *meta = (void *)1;
  size_t meta_n = 9;
  ZS_OK_OR_DIE(zs_engine_user_meta(e, &meta, &meta_n));
  ZS_EXPECT(!meta && !meta_n, "a new engine has no user meta");
  char blob[8] = "abcdefg";
  ZS_OK_OR_DIE(zs_engine_set_user_meta(e, blob, 8));
  blob[0] = 'X';
  ZS_EXPECT_STATUS(zs_engine_set_user_meta(e, NULL, 3), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_set_user_meta(e, blob, ZS_USER_META_MAX + 1), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_user_meta(e, NULL, &meta_n), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_engine_user_meta(e, &meta, &meta_n));
  ZS_EXPECT(meta_n == 8 && !memcmp(meta, "abcdefg", 8), "the user meta is not the copy set");
  ZS_OK_OR_DIE(zs_engine_set_user_meta(e, NULL, 0));
  ZS_OK_OR_DIE(zs_engine_user_meta(e, &meta, &meta_n));
  ZS_EXPECT(!meta && !meta_n, "NULL, 0 clears the user meta");
  ZS_EXPECT_STATUS(zs_unit_set_group(u, 0, 0), ZS_ERR_STATE);
  ZS_EXPECT_STATUS(zs_engine_add_unit(e, "late", 2, good, NULL), ZS_ERR_STATE);

  /* Params: wrong sizes and indices are refused and write nothing. */
  ZS_OK_OR_DIE(zs_unit_set_param(u, 0, vals));
  float junk[16];
  for (int i = 0; i < 16; i++)
    junk[i] = 99.0f;
  ZS_EXPECT_STATUS(zs_unit_set_param_n(u, 0, junk, 16), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_param_n(u, 0, junk, 14), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_param(u, 2, junk), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_param(u, -1, junk), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_param(u, 0, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_set_param(NULL, 0, junk), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_get_param(u, 0, NULL), ZS_ERR_INVALID_ARG);
  float back[15];
  ZS_OK_OR_DIE(zs_unit_get_param(u, 0, back));
  ZS_EXPECT(memcmp(back, vals, sizeof back) == 0, "refused set_param calls lost no data");

  /* Call order inside a step. */
  ZS_EXPECT_STATUS(zs_engine_step(e, NULL), ZS_ERR_STATE); /* no begin_step */
  ZS_EXPECT(zs_unit_grad(u, 0) == NULL && zs_last_error()[0], "grad outside a step is NULL");
  ZS_EXPECT(zs_unit_param(u, 0) == NULL && zs_last_error()[0], "param before gather is NULL");
  ZS_EXPECT_STATUS(zs_unit_release(u), ZS_ERR_STATE);     /* release without gather */
  ZS_EXPECT_STATUS(zs_unit_grads_ready(u), ZS_ERR_STATE); /* outside a step */
  ZS_EXPECT_STATUS(zs_unit_grads_flush(u), ZS_ERR_STATE); /* outside a step */
  ZS_EXPECT_STATUS(zs_engine_begin_step(e, 0), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_begin_step(NULL, 1), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  ZS_EXPECT_STATUS(zs_engine_begin_step(e, 1), ZS_ERR_STATE);
  ZS_EXPECT_STATUS(zs_unit_set_param(u, 0, vals), ZS_ERR_STATE); /* inside a step */
  ZS_EXPECT_STATUS(zs_unit_gather(NULL), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_unit_gather(u));
  ZS_OK_OR_DIE(zs_unit_gather(u)); /* a second gather of a gathered unit is a no-op */
  ZS_EXPECT(zs_unit_param(u, 5) == NULL, "bad tensor index gives NULL");
  ZS_EXPECT(zs_unit_grad(u, -1) == NULL, "bad tensor index gives NULL");
  ZS_EXPECT_STATUS(zs_engine_step(e, NULL), ZS_ERR_STATE); /* grads not ready */
  ZS_EXPECT(strstr(zs_last_error(), "'x'") != NULL, "names the unit: %s", zs_last_error());
  float *g = zs_unit_grad(u, 0);
  ZS_EXPECT(g != NULL, "grad pointer in a step");
  if (g) g[0] += 1.0f;
  float gg[15];
  ZS_EXPECT_STATUS(zs_unit_get_grad(u, 0, gg), ZS_ERR_STATE); /* before the last grads_ready */
  ZS_OK_OR_DIE(zs_unit_grads_ready(u));
  ZS_EXPECT_STATUS(zs_unit_get_grad(u, 0, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_unit_get_grad(u, 9, gg), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_unit_get_grad(u, 0, gg));
  ZS_EXPECT(gg[0] == 1.0f && gg[1] == 0.0f, "the reduced gradient: %g %g", (double)gg[0],
            (double)gg[1]);
  ZS_EXPECT_STATUS(zs_unit_grads_ready(u), ZS_ERR_STATE); /* more than micro_steps */
  ZS_EXPECT_STATUS(zs_unit_grads_flush(u), ZS_ERR_STATE); /* after the last grads_ready */
  ZS_EXPECT_STATUS(zs_unit_grads_flush(NULL), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_unit_release(u));
  zs_step_stats st;
  ZS_OK_OR_DIE(zs_engine_step(e, &st)); /* the refused calls left the step intact */
  ZS_EXPECT(st.grad_norm > 0.99f && st.grad_norm < 1.01f, "grad norm %g", (double)st.grad_norm);
  ZS_EXPECT_STATUS(zs_engine_memory(NULL, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_set_lr(e, -1.0f), ZS_ERR_INVALID_ARG);
  /* zs_unit_no_grad: inside a step, before the unit's first grads_ready; then no zs_unit_grad, its
     grads_ready a no-op; said twice is a no-op; the step leaves the unit exactly as it was. */
  ZS_EXPECT_STATUS(zs_unit_no_grad(u), ZS_ERR_STATE); /* outside a step */
  ZS_EXPECT_STATUS(zs_unit_get_grad(u, 0, gg), ZS_ERR_STATE);
  ZS_EXPECT_STATUS(zs_unit_no_grad(NULL), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_unit_get_param(u, 0, back));
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 2));
  g = zs_unit_grad(u, 0); /* handed out, written, then taken back by zs_unit_no_grad */
  if (g) g[1] += 5.0f;
  ZS_OK_OR_DIE(zs_unit_no_grad(u));
  ZS_OK_OR_DIE(zs_unit_no_grad(u));
  ZS_EXPECT(zs_unit_grad(u, 0) == NULL && strstr(zs_last_error(), "zs_unit_no_grad"),
            "grad after no_grad: %s", zs_last_error());
  ZS_OK_OR_DIE(zs_unit_grads_ready(u)); /* a no-op, as for a frozen unit */
  ZS_OK_OR_DIE(zs_unit_grads_flush(u));
  ZS_OK_OR_DIE(zs_engine_step(e, &st));
  ZS_EXPECT(st.grad_norm == 0.0f, "a step without gradients has norm 0, not %g",
            (double)st.grad_norm);
  float same[15];
  ZS_OK_OR_DIE(zs_unit_get_param(u, 0, same));
  ZS_EXPECT(!memcmp(same, back, sizeof same), "a unit without a gradient moved");
  ZS_OK_OR_DIE(
      zs_engine_begin_step(e, 2)); /* the next step: gradients again, not zs_unit_no_grad */
  g = zs_unit_grad(u, 0);
  ZS_EXPECT(g != NULL, "no_grad lasts one step");
  if (g) ZS_EXPECT(g[1] == 0.0f, "the dropped buffer's 5 came back: %g", (double)g[1]);
  ZS_OK_OR_DIE(zs_unit_grads_ready(u));
  ZS_EXPECT_STATUS(zs_unit_no_grad(u), ZS_ERR_STATE); /* after a grads_ready */
  ZS_OK_OR_DIE(zs_unit_grads_ready(u));
  ZS_OK_OR_DIE(zs_engine_step(e, &st));
  zs_engine_destroy(e);
  zs_engine_destroy(NULL);

  /* Offload: host memory exhausted is ZS_ERR_OUT_OF_MEMORY naming the bytes. */
  setenv("ZS_OFFLOAD_HOST_BYTES", "8388608", 1); /* 8 MiB; the unit needs 16 */
  zs_config_default(&c);
  c.offload = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  zs_tensor_desc big[1] = {{"w", 1, {1 << 20, 0, 0, 0}, 0}};
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "big", 1, big, NULL));
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_OUT_OF_MEMORY);
  ZS_EXPECT(strstr(zs_last_error(), "bytes") != NULL, "names bytes: %s", zs_last_error());
  zs_memory mem;
  ZS_OK_OR_DIE(zs_engine_memory(e, &mem));
  ZS_EXPECT(mem.total.cur == 0, "a failed commit releases everything (%zu bytes left)",
            mem.total.cur);
  ZS_EXPECT_STATUS(zs_engine_commit(e), ZS_ERR_OUT_OF_MEMORY); /* still building: retry fails */
  zs_engine_destroy(e);
  unsetenv("ZS_OFFLOAD_HOST_BYTES");
  if (zs_comm_rank(comm) == 0) printf("test_engine_errors: done\n");
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_errors");
}
