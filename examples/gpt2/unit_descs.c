/* The GPT-2 example's units as tensor descriptors (unit_descs.h). */
#include "unit_descs.h"

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
