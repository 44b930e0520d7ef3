/* Budgeted partial offload (placement.h): the largest units to the host until the rest fits. */
#include "shard/placement.h"

#include <stdint.h>
#include <string.h>

#include "shard/frozen.h"

static size_t sat_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

void zs_placement_table(const zs_plan *p, int host, zs_state_table *t) {
  *t = p->table;
  if (!host) return;
  for (int k = ZS_ST_MASTER; k <= ZS_ST_MASTER_REM; k++) { /* the optimizer's states */
    t->s[k].tier = ZS_TIER_HOST;
    t->s[k].cat = ZS_MEM_HOST_PINNED;
  }
  if (zs_state_is(t, ZS_ST_PARAM_SHARD, ZS_LIFE_PERSISTENT)) {
    t->s[ZS_ST_PARAM_SHARD].tier = ZS_TIER_HOST;
    t->s[ZS_ST_PARAM_SHARD].cat = ZS_MEM_HOST_PINNED;
  }
  zs_state_table_place_master(t); /* ZS_MASTER_PARAMS: an fp32 master on the host, or none */
}

void zs_placement_unit_table(const zs_plan *p, const zs_plan_units *u, int i, int host,
                             zs_state_table *t) {
  zs_placement_table(p, host, t);
  if (zs_plan_unit_frozen(u, i)) zs_state_table_freeze(t); /* params only */
}

/* Device bytes (every category but host_pinned) of b. */
static size_t device_sum(const size_t b[ZS_MEM_NCAT]) {
  size_t s = 0;
  for (int k = 0; k < ZS_MEM_NCAT; k++)
    if (k != ZS_MEM_HOST_PINNED) s = sat_add(s, b[k]);
  return s;
}

size_t zs_placement_moved(const zs_plan *p, const zs_plan_units *u, int i) {
  zs_state_table t;
  size_t dev[ZS_MEM_NCAT] = {0}, host[ZS_MEM_NCAT] = {0};
  zs_placement_unit_table(p, u, i, 0, &t);
  zs_plan_unit_bytes_of(p, &t, zs_plan_unit_numel(u, i), dev);
  zs_placement_unit_table(p, u, i, 1, &t);
  zs_plan_unit_bytes_of(p, &t, zs_plan_unit_numel(u, i), host);
  const size_t a = device_sum(dev), b = device_sum(host);
  return a == SIZE_MAX ? SIZE_MAX : a - b; /* the host table's device bytes are a part */
}

size_t zs_placement_host_bytes(const zs_plan *p, const zs_plan_units *u, int i) {
  zs_state_table h;
  zs_placement_unit_table(p, u, i, 1, &h);
  size_t b[ZS_MEM_NCAT] = {0};
  zs_plan_unit_bytes_of(p, &h, zs_plan_unit_numel(u, i), b);
  return b[ZS_MEM_HOST_PINNED];
}

/* Moved bytes of the units whose moved bytes are >= t. */
static size_t moved_at_least(const zs_plan *p, const zs_plan_units *u, size_t t) {
  size_t s = 0;
  for (int i = 0; i < u->n; i++) {
    const size_t m = zs_placement_moved(p, u, i);
    if (m >= t) s = sat_add(s, m);
  }
  return s;
}

void zs_placement_make(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u,
                       zs_placement *out) {
  memset(out, 0, sizeof *out);
  out->cut = SIZE_MAX;
  out->tie_last = -1;
  if (!c->offload_budget_bytes || c->offload_budget_bytes == ZS_UNSET_SIZE) return;
  out->active = 1;
  out->budget = c->offload_budget_bytes;
  out->with_params = zs_state_is(&p->table, ZS_ST_PARAM_SHARD, ZS_LIFE_PERSISTENT);
  size_t all[ZS_MEM_NCAT] = {0}, maxm = 0;
  for (int i = 0; i < u->n; i++) {
    zs_state_table t; /* on the device: a frozen unit's params alone */
    zs_placement_unit_table(p, u, i, 0, &t);
    zs_plan_unit_bytes_of(p, &t, zs_plan_unit_numel(u, i), all);
    const size_t m = zs_placement_moved(p, u, i);
    if (m > maxm) maxm = m;
  }
  size_t dev = zs_plan_buffers(p, c, world, u);
  for (int k = ZS_MEM_PARAMS; k <= ZS_MEM_BUFFERS; k++)
    if (k != ZS_MEM_BUFFERS) dev = sat_add(dev, all[k]);
  out->ceil_bytes = dev;
  const size_t total = moved_at_least(p, u, 0);
  out->floor_bytes = dev - (total < dev ? total : dev);
  if (dev <= out->budget) {
    out->device_bytes = dev;
    out->fits = 1;
    return;
  }
  const size_t need = dev - out->budget; /* bytes that must leave the device */
  if (total < need) {                    /* all on the host and still over: does not fit */
    out->cut = 0;
    out->tie_last = u->n - 1;
  } else {
    /* The largest cut with moved_at_least(cut) >= need: every unit above it moves, and of the
       units exactly at it the first ones in unit order until need is met. */
    size_t lo = 1, hi = maxm; /* moved_at_least(1) = total >= need */
    while (lo < hi) {
      const size_t mid = lo + (hi - lo + 1) / 2;
      if (moved_at_least(p, u, mid) >= need)
        lo = mid;
      else
        hi = mid - 1;
    }
    out->cut = lo;
    size_t got = lo == SIZE_MAX ? 0 : moved_at_least(p, u, lo + 1);
    for (int i = 0; i < u->n && got < need; i++)
      if (zs_placement_moved(p, u, i) == lo) {
        got = sat_add(got, lo);
        out->tie_last = i;
      }
  }
  size_t freed = 0;
  for (int i = 0; i < u->n; i++)
    if (zs_placement_host(out, p, u, i)) {
      out->nhost++;
      freed = sat_add(freed, zs_placement_moved(p, u, i));
      out->host_moved = sat_add(out->host_moved, zs_placement_host_bytes(p, u, i));
    }
  out->device_bytes = dev - (freed < dev ? freed : dev);
  out->fits = out->device_bytes <= out->budget;
}

int zs_placement_host(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i) {
  if (!pl->active || pl->cut == SIZE_MAX) return 0;
  const size_t m = zs_placement_moved(p, u, i);
  return m > pl->cut || (m == pl->cut && i <= pl->tie_last);
}
