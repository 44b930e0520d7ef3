/* zs_plan_model_units and zs_plan_placement_units: the planner for units given by their tensors
 * and each tensor's group's optimizer (zshard.h), through plan_api.c's report and placement. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/config.h"
#include "base/error.h"
#include "engine/engine_internal.h"
#include "shard/tp_slice.h"

/* The units as the plan sees them: element counts, frozen flags, each unit's whole-step needs
   (zs_engine_whole_tensor) and its state arrays (the most its tensors' optimizers keep), owned. */
typedef struct {
  int64_t *numel;
  int *frozen, *chans, *nstate;
  size_t *work;
  zs_pack_unit *tensors; /* each unit's tensors' counts and kept arrays (packing), owned */
  int n;
} units_figures;

static void figures_free(units_figures *f) {
  for (int i = 0; f->tensors && i < f->n; i++) {
    free((void *)f->tensors[i].numel);
    free((void *)f->tensors[i].keeps);
    free((void *)f->tensors[i].part);
  }
  free(f->tensors);
  free(f->numel);
  free(f->frozen);
  free(f->nstate);
  free(f->chans);
  free(f->work);
}

static size_t whole_of(const void *arg, int i, size_t numel, size_t padded) {
  const units_figures *f = arg;
  (void)numel;
  return zs_engine_whole_floats(f->chans[i], f->work[i], padded);
}

/* Unit i's element count from its tensors into *numel, checked as zs_engine_add_unit checks them
   (zs_engine_check_desc, named by index: the planner reads no names; and a count under 2^63),
   each tensor's optimizer as a group would run it, its whole-step needs into *chans and *work,
   the most state arrays its tensors' optimizers keep into *nstate, and each tensor's count, kept
   arrays and kept elements of each into *pk. */
static zs_status plan_unit(const char *fn, const zs_config *c, const zs_plan_unit *u,
                           const int *tp_layout, int i, int64_t *numel, int *chans, size_t *work,
                           int *nstate, zs_pack_unit *pk) {
  if (u->ntensors < 0 || (u->ntensors > 0 && !u->tensors))
    return zs_err(ZS_ERR_INVALID_ARG, "%s: unit %d has %d tensors and tensors %s: give its tensors",
                  fn, i, u->ntensors, u->tensors ? "set" : "NULL");
  size_t *tn = calloc((size_t)u->ntensors + 1, sizeof *tn);
  int *tk = calloc((size_t)u->ntensors + 1, sizeof *tk);
  size_t *tp = calloc((size_t)u->ntensors + 1, sizeof *tp);
  *pk = (zs_pack_unit){u->ntensors, tn, tk, tp};
  if (!tn || !tk || !tp)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: no host memory for unit %d's tensors", fn, i);
  char uname[24], tname[24];
  snprintf(uname, sizeof uname, "%d", i);
  *numel = 0;
  for (int k = 0; k < u->ntensors; k++) {
    zs_tensor_desc named = u->tensors[k]; /* the sentences name it "unit.tensor" by index */
    snprintf(tname, sizeof tname, "%d", k);
    named.name = tname;
    zs_status rc = zs_engine_check_desc(uname, k, &named);
    if (rc != ZS_OK) return zs_err_wrap(rc, "%s", fn);
    int64_t n = 1;
    for (int d = 0; d < named.ndim; d++) {
      if (named.shape[d] && n > INT64_MAX / named.shape[d])
        return zs_err(ZS_ERR_INVALID_ARG, "%s: unit %d tensor %d is over 2^63 elements", fn, i, k);
      n *= named.shape[d];
    }
    if (n > INT64_MAX - *numel)
      return zs_err(ZS_ERR_INVALID_ARG, "%s: unit %d is over 2^63 elements", fn, i);
    *numel += n;
    tn[k] = (size_t)n;
    zs_config g = *c;
    if ((u->optimizer && u->optimizer[k] >= 0) || u->momentum) {
      if (u->optimizer && u->optimizer[k] >= 0) g.optimizer = u->optimizer[k];
      if (u->momentum) g.sgd.momentum = u->momentum[k];
      rc = zs_engine_group_check(c, &g);
      if (rc != ZS_OK) return zs_err_wrap(rc, "%s: unit %d tensor %d's optimizer", fn, i, k);
    }
    const int lay = tp_layout ? tp_layout[k] : ZS_TP_REPLICATED;
    const int need = zs_tp_layout_dims(lay);
    if (need < 0 || named.ndim < need)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "%s: unit %d tensor %d: tp layout %d is not a zs_tp_layout for a tensor of %d "
                    "dimension(s) (zs_unit_set_tp refuses it)",
                    fn, i, k, lay, named.ndim);
    ZS_CHECK(
        zs_engine_whole_tensor(fn, uname, &named, lay, c->tp_size, &g, u->frozen, chans, work));
    tk[k] = zs_opt_shape_of(&g)->nstate;
    tp[k] = zs_engine_state_part(&g, &named, lay, c->tp_size, 0); /* tp rank 0 keeps the most */
    if (tk[k] > *nstate) *nstate = tk[k];
  }
  return ZS_OK;
}

/* The checks both calls share, the completed config into c, the data-parallel ranks into
   *world_size and the units' figures into f (freed by the caller, also on error); fn names the
   call. */
static zs_status prepare(const char *fn, const zs_config *cfg, int *world_size,
                         const zs_plan_unit *units, const int *const *tp, int nunits,
                         const void *out, zs_config *c, units_figures *f) {
  if (!cfg || !units || !out)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: cfg, units or out is NULL", fn);
  if (nunits < 1 || *world_size < 1)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: %d units on %d ranks: both must be at least 1", fn,
                  nunits, *world_size);
  ZS_CHECK(zs_config_complete(cfg, c));
  ZS_CHECK(zs_config_validate(c));
  ZS_CHECK(zs_plan_dp_ranks(fn, c, *world_size, world_size));
  const size_t n = (size_t)nunits;
  f->numel = malloc(n * sizeof *f->numel);
  f->frozen = malloc(n * sizeof *f->frozen);
  f->chans = calloc(n, sizeof *f->chans);
  f->work = calloc(n, sizeof *f->work);
  f->nstate = calloc(n, sizeof *f->nstate);
  f->tensors = calloc(n, sizeof *f->tensors);
  f->n = nunits;
  if (!f->numel || !f->frozen || !f->chans || !f->work || !f->nstate || !f->tensors)
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s: no host memory for %d units' figures", fn, nunits);
  for (int i = 0; i < nunits; i++) {
    f->frozen[i] = units[i].frozen != 0;
    ZS_CHECK(plan_unit(fn, c, &units[i], tp ? tp[i] : NULL, i, &f->numel[i], &f->chans[i],
                       &f->work[i], &f->nstate[i], &f->tensors[i]));
  }
  return ZS_OK;
}

static zs_status model_units(const char *fn, const zs_config *cfg, int world_size,
                             const zs_plan_unit *units, const int *const *tp, int nunits,
                             size_t activation_bytes, size_t device_bytes, size_t host_bytes,
                             zs_plan_report *out) {
  zs_config c;
  units_figures f = {NULL, NULL, NULL, NULL, NULL, NULL, 0};
  zs_status rc = prepare(fn, cfg, &world_size, units, tp, nunits, out, &c, &f);
  if (rc == ZS_OK) {
    const zs_plan_units us = {NULL, f.numel, nunits, f.frozen, whole_of, &f, f.nstate, f.tensors};
    rc = zs_plan_report_of(&c, world_size, &us, activation_bytes, device_bytes, host_bytes, out);
  }
  figures_free(&f);
  return rc;
}

static zs_status placement_units(const char *fn, const zs_config *cfg, int world_size,
                                 const zs_plan_unit *units, const int *const *tp, int nunits,
                                 unsigned char *host) {
  zs_config c;
  units_figures f = {NULL, NULL, NULL, NULL, NULL, NULL, 0};
  zs_status rc = prepare(fn, cfg, &world_size, units, tp, nunits, host, &c, &f);
  if (rc == ZS_OK) {
    const zs_plan_units us = {NULL, f.numel, nunits, f.frozen, whole_of, &f, f.nstate, f.tensors};
    rc = zs_plan_placement_of(&c, world_size, &us, host);
  }
  figures_free(&f);
  return rc;
}

zs_status zs_plan_model_units(const zs_config *cfg, int world_size, const zs_plan_unit *units,
                              int nunits, size_t activation_bytes, size_t device_bytes,
                              size_t host_bytes, zs_plan_report *out) {
  return model_units("zs_plan_model_units", cfg, world_size, units, NULL, nunits, activation_bytes,
                     device_bytes, host_bytes, out);
}

zs_status zs_plan_model_units_tp(const zs_config *cfg, int world_size, const zs_plan_unit *units,
                                 const int *const *tp, int nunits, size_t activation_bytes,
                                 size_t device_bytes, size_t host_bytes, zs_plan_report *out) {
  return model_units("zs_plan_model_units_tp", cfg, world_size, units, tp, nunits, activation_bytes,
                     device_bytes, host_bytes, out);
}

zs_status zs_plan_placement_units(const zs_config *cfg, int world_size, const zs_plan_unit *units,
                                  int nunits, unsigned char *host) {
  return placement_units("zs_plan_placement_units", cfg, world_size, units, NULL, nunits, host);
}

zs_status zs_plan_placement_units_tp(const zs_config *cfg, int world_size,
                                     const zs_plan_unit *units, const int *const *tp, int nunits,
                                     unsigned char *host) {
  return placement_units("zs_plan_placement_units_tp", cfg, world_size, units, tp, nunits, host);
}
