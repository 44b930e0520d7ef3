/* The units' tensors of a GPT-2 or Llama shape (the examples' own descriptors), and the plan that
 * uses them (tool.h: zp_plan, zp_placement). */
#include <stdlib.h>
#include <string.h>

#include "common/llama_layout.h"
#include "common/muon_rule.h"
#include "gpt2/unit_descs.h"
#include "tool.h"

_Static_assert(GPT2_MAX_UNIT_TENSORS <= ZP_MAX_UNIT_TENSORS, "room for a GPT-2 block");
_Static_assert(LLAMA_MAX_UNIT_TENSORS <= ZP_MAX_UNIT_TENSORS, "room for a Llama layer");

/* Unit u's tensors into d; their count, or -1 where the shape is not known. */
static int unit_descs(const zp_model *m, int u, zs_tensor_desc *d) {
  if (m->is_llama) return llama_unit_descs(&m->llama, u, d);
  return m->is_gpt ? zp_gpt_unit_descs(&m->gpt, u, d) : -1;
}

int64_t zp_desc_numel(const zs_tensor_desc *d, int nt) {
  int64_t s = 0;
  for (int k = 0; k < nt; k++) {
    int64_t e = 1;
    for (int j = 0; j < d[k].ndim; j++)
      e *= d[k].shape[j];
    s += e;
  }
  return s;
}

int zp_model_tensors(zp_model *m) {
  const size_t n = (size_t)m->n, room = n * ZP_MAX_UNIT_TENSORS;
  if (!m->is_gpt && !m->is_llama) return 0;
  m->units = calloc(n, sizeof *m->units);
  m->descs = calloc(room, sizeof *m->descs);
  if (!m->units || !m->descs) return -1;
  for (int u = 0; u < m->n; u++) {
    zs_tensor_desc *d = m->descs + (size_t)u * ZP_MAX_UNIT_TENSORS;
    const int nt = unit_descs(m, u, d);
    if (nt < 0 || zp_desc_numel(d, nt) !=
                      m->numel[u]) { /* units of a file that are not the example's: sizes */
      free(m->units), free(m->descs);
      m->units = NULL, m->descs = NULL;
      m->bare = 1;
      return 0;
    }
    m->units[u] = (zs_plan_unit){nt, d, NULL, 0, NULL};
  }
  return 0;
}

/* The plan's units: m's, with its frozen flags and each tensor's optimizer under cfg (--optimizer
   muon: the examples' group, the configuration's optimizer AdamW), into *c, *us and *opt, and
   with cfg's tp_size train_llama's tensor-parallel layouts into *lay (per unit, into *opt's
   second half; else NULL); the caller frees *us, *opt and *lay (NULL on ZS_ERR_OUT_OF_MEMORY). */
static zs_status with_groups(const zp_model *m, const zs_config *cfg, int sp, zs_config *c,
                             zs_plan_unit **us, int **opt, const int ***lay) {
  *c = *cfg;
  int muon = -1;
  zs_optimizer_id("muon", &muon);
  const int group = cfg->optimizer == muon, tp = cfg->tp_size > 1 && m->is_llama;
  if (group) c->optimizer = ZS_OPT_ADAMW;
  const size_t room = (size_t)m->n * ZP_MAX_UNIT_TENSORS;
  *us = calloc((size_t)m->n, sizeof **us);
  *opt = calloc(2 * room, sizeof **opt);
  *lay = tp ? calloc((size_t)m->n, sizeof **lay) : NULL;
  if (!*us || !*opt || (tp && !*lay)) {
    free(*us), free(*opt), free(*lay);
    *us = NULL, *opt = NULL, *lay = NULL;
    return ZS_ERR_OUT_OF_MEMORY;
  }
  for (int u = 0; u < m->n; u++) {
    zs_plan_unit *pu = &(*us)[u];
    *pu = m->units[u];
    pu->frozen = m->frozen && m->frozen[u];
    int *o = *opt + (size_t)u * ZP_MAX_UNIT_TENSORS, *l = o + room;
    for (int k = 0; k < pu->ntensors; k++) {
      o[k] = group && ex_muon_takes(u, m->n, &pu->tensors[k]) ? muon : -1;
      if (tp) l[k] = (int)llama_tp_layout(&m->llama, sp, u, k);
    }
    pu->optimizer = o;
    if (tp) (*lay)[u] = l;
  }
  return ZS_OK;
}

zs_status zp_plan(const zp_args *a, const zp_model *m, const zs_config *cfg, size_t act, size_t dev,
                  size_t host, zs_plan_report *r) {
  if (!m->units)
    return zs_plan_model_frozen(cfg, a->world, m->numel, m->frozen, m->n, act, dev, host, r);
  zs_config c;
  zs_plan_unit *us = NULL;
  int *opt = NULL;
  const int **lay = NULL;
  zs_status rc = with_groups(m, cfg, a->sp, &c, &us, &opt, &lay);
  if (rc == ZS_OK) rc = zs_plan_model_units_tp(&c, a->world, us, lay, m->n, act, dev, host, r);
  free(us);
  free(opt);
  free(lay);
  return rc;
}

zs_status zp_placement(const zp_args *a, const zp_model *m, const zs_config *cfg,
                       unsigned char *host) {
  if (!m->units) return zs_plan_placement_frozen(cfg, a->world, m->numel, m->frozen, m->n, host);
  zs_config c;
  zs_plan_unit *us = NULL;
  int *opt = NULL;
  const int **lay = NULL;
  zs_status rc = with_groups(m, cfg, a->sp, &c, &us, &opt, &lay);
  if (rc == ZS_OK) rc = zs_plan_placement_units_tp(&c, a->world, us, lay, m->n, host);
  free(us);
  free(opt);
  free(lay);
  return rc;
}
