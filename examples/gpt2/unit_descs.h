/* The GPT-2 example's units as tensor descriptors (layout.h says how GPT-2 is cut into units):
 * what the example registers and what zshard-plan plans, one definition. Needs no engine and no
 * kernels. */
#ifndef GPT2_UNIT_DESCS_H
#define GPT2_UNIT_DESCS_H

#include "config.h"
#include "zshard.h"

enum { EMB_WTE, EMB_WPE, EMB_NT };
enum {
  BLK_LN1_W,
  BLK_LN1_B,
  BLK_QKV_W,
  BLK_QKV_B,
  BLK_PROJ_W,
  BLK_PROJ_B,
  BLK_LN2_W,
  BLK_LN2_B,
  BLK_FC_W,
  BLK_FC_B,
  BLK_FCPROJ_W,
  BLK_FCPROJ_B,
  BLK_NT
};
enum { LNF_W, LNF_B, LNF_NT };

#define GPT2_MAX_UNIT_TENSORS BLK_NT

/* Number of units: L + 2. */
int gpt2_num_units(const gpt2_config *c);
/* Fills descs (room for GPT2_MAX_UNIT_TENSORS) for unit index u (0 .. L+1); returns the count. */
int gpt2_unit_descs(const gpt2_config *c, int u, zs_tensor_desc *descs);
/* The tensor name of unit u, tensor t ("wte", "ln1_w", ...). */
const char *gpt2_tensor_name(const gpt2_config *c, int u, int t);

#endif
