/* Lookups in the optimizer registry (opt_shape.h) and the public name <-> id calls. */
#include "base/opt_shape.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

const zs_opt_entry *zs_opt_entry_of(const zs_config *c) {
  return c->optimizer >= 0 && c->optimizer < zs_opt_registry_n ? zs_opt_registry[c->optimizer]
                                                               : NULL;
}

const zs_opt_shape *zs_opt_shape_of(const zs_config *c) {
  const zs_opt_entry *o = zs_opt_entry_of(c);
  return o ? o->shape(c) : NULL;
}

const char *zs_opt_name_of(const zs_config *c) {
  const zs_opt_entry *o = zs_opt_entry_of(c);
  return o ? o->name : "?";
}

void zs_opt_names(char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < zs_opt_registry_n && used < n; i++) {
    if (!zs_opt_registry[i]) continue;
    int k = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", zs_opt_registry[i]->name);
    used = k > 0 ? used + (size_t)k : used;
  }
}

const char *zs_optimizer_name(int id) {
  return id >= 0 && id < zs_opt_registry_n && zs_opt_registry[id] ? zs_opt_registry[id]->name
                                                                  : NULL;
}

zs_status zs_optimizer_id(const char *name, int *id) {
  if (!name || !id) return zs_err(ZS_ERR_INVALID_ARG, "zs_optimizer_id: name and id must be set");
  for (int i = 0; i < zs_opt_registry_n; i++)
    if (zs_opt_registry[i] && !strcmp(zs_opt_registry[i]->name, name)) return *id = i, ZS_OK;
  char names[256];
  zs_opt_names(names, sizeof names);
  return zs_err(ZS_ERR_INVALID_ARG, "no optimizer is named '%s': use one of %s", name, names);
}
