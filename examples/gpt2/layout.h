/* How GPT-2 is cut into engine units, and the tensors of each unit:
 *   unit 0        "embedding"  wte [Vp, C] (also the tied LM head), wpe [maxT, C]
 *   unit 1 + l    "block.l"    the 12 tensors of transformer block l (unit_descs.h)
 *   unit 1 + L    "ln_f"       final layernorm weight and bias
 * Linear weights are [out, in] (zs_k_matmul's w[OC, C]). Layernorm params and biases are exempt
 * from weight decay. */
#ifndef GPT2_LAYOUT_H
#define GPT2_LAYOUT_H

#include "config.h"
#include "unit_descs.h"
#include "zshard_kernels.h"

/* The units of one model, in forward order. */
typedef struct {
  gpt2_config cfg;
  zs_engine *eng;
  zs_unit *emb;
  zs_unit **blocks; /* [L] */
  zs_unit *lnf;
} gpt2_units;

/* The engine unit with index u (0 = embedding, 1..L = blocks, L+1 = ln_f). */
zs_unit *gpt2_unit(const gpt2_units *m, int u);
/* Registers every unit with the engine (before zs_engine_commit); 0 or -1 (gpt2_error() says
   why). m->blocks is allocated: free with gpt2_units_free. */
int gpt2_units_register(gpt2_units *m, const gpt2_config *c, zs_engine *e);
/* --freeze SPEC into mask (room for L + 2 units, 1 = frozen): comma-separated items, each
   "embedding", "blocks", "ln_f", a unit index N or a range N-M (0 = embedding, 1..L = blocks,
   L+1 = ln_f). NULL spec: nothing frozen. 0, or -1 for a bad item (gpt2_error() says which). */
int gpt2_freeze_mask(const char *spec, int layers, int *mask);
/* Freezes the units of mask (before zs_engine_commit); 0 or -1. */
int gpt2_units_freeze(gpt2_units *m, const int *mask);
void gpt2_units_free(gpt2_units *m);

#endif
