/* A tensor's optimizer state by name (zs_unit_get_state, zs_unit_set_state): the names
 * checkpoints use, read and written in canonical fp32 through the master codec (tier/master_io.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "engine/engine_internal.h"
#include "engine/fail.h"
#include "tier/master_io.h"

/* The refusals both calls share; *a gets the array `name` names. */
static zs_status check_state_call(zs_unit *u, int t, const char *name, const void *host,
                                  const char *fn, int in_step, zs_arr *a) {
  if (!u || !name || !host) return zs_err(ZS_ERR_INVALID_ARG, "%s: NULL unit, name or buffer", fn);
  const zs_engine *e = u->e;
  if (t < 0 || t >= u->ntensors)
    return zs_err(ZS_ERR_INVALID_ARG, "%s('%s', %d): tensor index out of range 0..%d", fn, u->name,
                  t, u->ntensors - 1);
  if (e->state == ZS_ENGINE_BUILDING)
    return zs_err(ZS_ERR_STATE, "%s('%s') before zs_engine_commit: commit first", fn, u->name);
  if (e->state == ZS_ENGINE_FAILED)
    return zs_err(ZS_ERR_STATE, "%s('%s'): the engine failed earlier; destroy it", fn, u->name);
  if (e->state == ZS_ENGINE_IN_STEP && !in_step)
    return zs_err(ZS_ERR_STATE, "%s('%s') inside a step: call it between steps", fn, u->name);
  const int na = zs_state_narrays(&e->cfg);
  for (int i = 0; i < na; i++)
    if (!strcmp(name, zs_arr_ckpt_name(&e->cfg, (zs_arr)i))) {
      *a = (zs_arr)i;
      return ZS_OK;
    }
  char names[256] = "";
  for (int i = 0; i < na; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%s'", i ? ", " : "",
             zs_arr_ckpt_name(&e->cfg, (zs_arr)i));
  return zs_err(ZS_ERR_INVALID_ARG,
                "%s('%s', %d): no state '%s' under optimizer %s: its arrays "
                "are %s",
                fn, u->name, t, name, zs_opt_name_of(&e->cfg), names);
}

zs_status zs_unit_get_state(zs_unit *u, int t, const char *name, float *host_full) {
  zs_arr a = ZS_ARR_MASTER;
  ZS_CHECK(check_state_call(u, t, name, host_full, "zs_unit_get_state", 1, &a));
  if (a == ZS_ARR_MASTER) return zs_unit_get_param(u, t, host_full);
  zs_engine *e = u->e;
  zs_engine_call(e, ZS_CALL_GET_STATE, u);
  e->call_arr = (int)a + 1; /* ranks that gather different arrays diverge */
  const size_t P = u->lay.padded, off = u->lay.off[t], n = u->lay.numel[t];
  /* An array its optimizer does not keep is zeros (on every rank: no gather). */
  if ((int)a - ZS_ARR_OPT0 >= zs_engine_tensor_nstate(u, t, NULL)) {
    memset(host_full, 0, n * sizeof *host_full);
    return ZS_OK;
  }
  if (!u->st.s[ZS_ST_MASTER].sharded) /* this rank holds the whole range: no gather */
    return zs_engine_fail(e, zs_state_read(&e->tiers, u, a, off, n, host_full, NULL));
  float *full = NULL;
  zs_status rc = zs_mem_alloc(&e->mem, ZS_MEM_BUFFERS, P * 4, (void **)&full, NULL);
  if (rc != ZS_OK) /* its shard group is entering the gather: failing here fails them too */
    return zs_engine_fail_hard(e, zs_err_wrap(rc, "zs_unit_get_state: the gather's buffer"));
  rc = zs_array_gather(&e->tiers, u, a, full);
  if (rc == ZS_OK) rc = zs_dev_to_host(&e->dev, host_full, full + off, n * 4);
  zs_mem_free_after(&e->mem, rc, ZS_MEM_BUFFERS, full, P * 4, NULL);
  return rc == ZS_OK ? rc : zs_engine_fail(e, rc);
}

zs_status zs_unit_set_state(zs_unit *u, int t, const char *name, const float *host_full) {
  zs_arr a = ZS_ARR_MASTER;
  ZS_CHECK(check_state_call(u, t, name, host_full, "zs_unit_set_state", 0, &a));
  if (a == ZS_ARR_MASTER)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_unit_set_state('%s', %d, \"master\"): set the master with zs_unit_set_param "
                  "(it keeps the params that compute with it)",
                  u->name, t);
  if (u->frozen)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_unit_set_state('%s'): the unit is frozen: it has no optimizer state",
                  u->name);
  zs_engine *e = u->e;
  zs_config gc; /* the tensor's group's optimizer keeps the first of the configuration's arrays */
  const int keeps = zs_engine_tensor_nstate(u, t, &gc);
  if ((int)a - ZS_ARR_OPT0 >= keeps)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_unit_set_state('%s', %d, \"%s\"): tensor '%s' is in group %d on '%s', "
                  "which keeps %d of the configuration's state arrays: it has no '%s' to set",
                  u->name, t, name, u->t[t].name, u->group[t], zs_opt_name_of(&gc), keeps, name);
  const size_t off = u->lay.off[t], n = u->lay.numel[t];
  size_t x, y; /* this rank's part of the tensor's kept elements (an Adafactor matrix: its
                  factors; every tier drops the rest alike): its optimizer range */
  zs_status rc = ZS_OK;
  if (zs_unit_kept_overlap(u, t, (int)a - ZS_ARR_OPT0, u->opt_off, u->opt_off + u->opt_n, &x, &y))
    rc =
        zs_state_write(&e->tiers, u, a, x, y - x, host_full + (x - off), NULL, "zs_unit_set_state");
  /* The ranks compare what they wrote at the next step, as for zs_unit_set_param. */
  if (rc == ZS_OK) zs_engine_set_record(u, t, (int)a, host_full, n);  /* slot 1 + i: state i */
  if (rc == ZS_ERR_IO && u->nv[a]) return zs_engine_fail_hard(e, rc); /* its file half written */
  return rc == ZS_OK ? rc : zs_engine_fail(e, rc);
}
