/* GPT-2 unit layout: registration of the units (unit_descs.h) with the engine. */
#include "layout.h"

#include "../common/freeze.h"
#include "../common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
