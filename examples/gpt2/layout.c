/* GPT-2 unit layout: tensor descriptors and registration with the engine. */
#include "layout.h"

#include "../common/freeze.h"
#include "../common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const emb_names[EMB_NT] = {"wte", "wpe"};
static const char *const blk_names[BLK_NT] = {"ln1_w",  "ln1_b",  "qkv_w",    "qkv_b",
                                              "proj_w", "proj_b", "ln2_w",    "ln2_b",
                                              "fc_w",   "fc_b",   "fcproj_w", "fcproj_b"};
static const char *const lnf_names[LNF_NT] = {"lnf_w", "lnf_b"};

/* A 1-D or 2-D descriptor. */
static zs_tensor_desc desc(const char *name, int64_t d0, int64_t d1, int nowd) {
  zs_tensor_desc t = {name, d1 > 0 ? 2 : 1, {d0, d1 > 0 ? d1 : 0, 0, 0}, nowd};
  return t;
}

int gpt2_num_units(const gpt2_config *c) {
  return c->layers + 2;
}

const char *gpt2_tensor_name(const gpt2_config *c, int u, int t) {
  if (u == 0) return emb_names[t];
  if (u == c->layers + 1) return lnf_names[t];
  return blk_names[t];
}

int gpt2_unit_descs(const gpt2_config *c, int u, zs_tensor_desc *d) {
  int64_t C = c->channels;
  if (u == 0) {
    d[EMB_WTE] = desc("wte", c->padded_vocab, C, 0);
    d[EMB_WPE] = desc("wpe", c->max_seq, C, 0);
    return EMB_NT;
  }
  if (u == c->layers + 1) {
    d[LNF_W] = desc("lnf_w", C, 0, 1);
    d[LNF_B] = desc("lnf_b", C, 0, 1);
    return LNF_NT;
  }
  d[BLK_LN1_W] = desc("ln1_w", C, 0, 1);
  d[BLK_LN1_B] = desc("ln1_b", C, 0, 1);
  d[BLK_QKV_W] = desc("qkv_w", 3 * C, C, 0);
  d[BLK_QKV_B] = desc("qkv_b", 3 * C, 0, 1);
  d[BLK_PROJ_W] = desc("proj_w", C, C, 0);
  d[BLK_PROJ_B] = desc("proj_b", C, 0, 1);
  d[BLK_LN2_W] = desc("ln2_w", C, 0, 1);
  d[BLK_LN2_B] = desc("ln2_b", C, 0, 1);
  d[BLK_FC_W] = desc("fc_w", 4 * C, C, 0);
  d[BLK_FC_B] = desc("fc_b", 4 * C, 0, 1);
  d[BLK_FCPROJ_W] = desc("fcproj_w", C, 4 * C, 0);
  d[BLK_FCPROJ_B] = desc("fcproj_b", C, 0, 1);
  return BLK_NT;
}

zs_unit *gpt2_unit(const gpt2_units *m, int u) {
  if (u == 0) return m->emb;
  if (u == m->cfg.layers + 1) return m->lnf;
  return m->blocks[u - 1];
}

int gpt2_units_register(gpt2_units *m, const gpt2_config *c, zs_engine *e) {
  m->cfg = *c;
  m->eng = e;
  m->blocks = calloc((size_t)c->layers, sizeof *m->blocks);
  if (!m->blocks) return gpt2_fail("out of host memory for %d blocks", c->layers);
  for (int u = 0; u < gpt2_num_units(c); u++) {
    zs_tensor_desc d[GPT2_MAX_UNIT_TENSORS];
    int nt = gpt2_unit_descs(c, u, d);
    char name[32];
    if (u == 0)
      snprintf(name, sizeof name, "embedding");
    else if (u == c->layers + 1)
      snprintf(name, sizeof name, "ln_f");
    else
      snprintf(name, sizeof name, "block.%d", u - 1);
    zs_unit *unit = NULL;
    ZS_TRY(zs_engine_add_unit(e, name, nt, d, &unit));
    if (u == 0)
      m->emb = unit;
    else if (u == c->layers + 1)
      m->lnf = unit;
    else
      m->blocks[u - 1] = unit;
  }
  return 0;
}

void gpt2_units_free(gpt2_units *m) {
  free(m->blocks);
  m->blocks = NULL;
}

int gpt2_freeze_mask(const char *spec, int layers, int *mask) {
  return gpt2_freeze_spec(spec, layers, "ln_f", mask);
}

int gpt2_units_freeze(gpt2_units *m, const int *mask) {
  for (int u = 0; u < gpt2_num_units(&m->cfg); u++)
    ZS_TRY(zs_unit_freeze(gpt2_unit(m, u), mask[u]));
  return 0;
}
