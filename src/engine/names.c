/* Looking units and tensors up by name, for programs that keep their own parameter layout (one
 * array per parameter type, as llm.c) instead of tensor indices. */
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "base/error.h"

/* Lists u's tensor names into buf ("'w', 'b'"), cut short when long. */
static void list_tensors(const zs_unit *u, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (int t = 0; t < u->ntensors && used + 1 < n; t++) {
    int k = snprintf(buf + used, n - used, "%s'%s'", t ? ", " : "", u->tnames[t]);
    if (k < 0) break;
    used += (size_t)k;
  }
}

zs_status zs_unit_tensor_index(const zs_unit *u, const char *name, int *idx) {
  if (!u || !name || !idx)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_unit_tensor_index: unit, name or idx is NULL");
  for (int t = 0; t < u->ntensors; t++)
    if (strcmp(u->tnames[t], name) == 0) {
      *idx = t;
      return ZS_OK;
    }
  char names[512];
  list_tensors(u, names, sizeof names);
  return zs_err(ZS_ERR_INVALID_ARG, "unit '%s' has no tensor named '%s': its tensors are %s",
                u->name, name, names);
}

const char *zs_unit_tensor_name(const zs_unit *u, int t) {
  return (u && t >= 0 && t < u->ntensors) ? u->tnames[t] : NULL;
}

int zs_unit_num_tensors(const zs_unit *u) {
  return u ? u->ntensors : -1;
}

zs_status zs_engine_find_unit(zs_engine *e, const char *name, zs_unit **out) {
  if (!e || !name || !out)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_find_unit: engine, name or out is NULL");
  for (int i = 0; i < e->nunits; i++)
    if (strcmp(e->units[i]->name, name) == 0) {
      *out = e->units[i];
      return ZS_OK;
    }
  return zs_err(ZS_ERR_INVALID_ARG,
                "the engine has no unit named '%s' (%d units, added with zs_engine_add_unit)", name,
                e->nunits);
}
