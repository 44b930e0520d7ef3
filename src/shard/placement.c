/* Budgeted partial offload (placement.h): the largest units to the host until the rest fits. */
#include "shard/placement.h"

#include <stdint.h>
#include <string.h>

#include "base/host_charge.h"
#include "base/master_mode.h"
#include "offload/pipeline.h"
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
  zs_state_table_keep_state(t, zs_plan_unit_nstate(u, i));
  zs_plan_unit_pack(p, u, i, t);
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

static size_t nvme_sum(const zs_plan *p, const zs_plan_units *u, int i, int host, int charged);

/* The weight the two placements rank units by: the budget's moved bytes, or the NVMe tier's
   bytes under the budget's placement pl. */
typedef size_t (*weight_fn)(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u,
                            int i);

static size_t moved_w(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i) {
  (void)pl;
  return zs_placement_moved(p, u, i);
}

static size_t nvme_w(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i) {
  return zs_placement_nvme_bytes(p, u, i, zs_placement_host(pl, p, u, i));
}

/* Weights of the units whose weight is >= t. */
static size_t weight_at_least(weight_fn w, const zs_placement *pl, const zs_plan *p,
                              const zs_plan_units *u, size_t t) {
  size_t s = 0;
  for (int i = 0; i < u->n; i++) {
    const size_t m = w(pl, p, u, i);
    if (m >= t) s = sat_add(s, m);
  }
  return s;
}

/* The prefix of the largest-first order (ties: the lower index) whose weights reach need: the
   largest cut with weight_at_least(cut) >= need (every unit above it is in), and of the units
   exactly at it the first ones in unit order until need is met. When every weight together
   does not reach need, cut 0 and tie_last the last unit (all in). */
static void choose_prefix(weight_fn w, const zs_placement *pl, const zs_plan *p,
                          const zs_plan_units *u, size_t need, size_t *cut, int *tie_last) {
  size_t maxw = 0;
  for (int i = 0; i < u->n; i++) {
    const size_t m = w(pl, p, u, i);
    if (m > maxw) maxw = m;
  }
  if (weight_at_least(w, pl, p, u, 0) < need) {
    *cut = 0;
    *tie_last = u->n - 1;
    return;
  }
  size_t lo = 1, hi = maxw; /* weight_at_least(1) = the total >= need */
  while (lo < hi) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    if (weight_at_least(w, pl, p, u, mid) >= need)
      lo = mid;
    else
      hi = mid - 1;
  }
  *cut = lo;
  *tie_last = -1;
  size_t got = lo == SIZE_MAX ? 0 : weight_at_least(w, pl, p, u, lo + 1);
  for (int i = 0; i < u->n && got < need; i++)
    if (w(pl, p, u, i) == lo) {
      got = sat_add(got, lo);
      *tie_last = i;
    }
}

static void budget_make(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u,
                        zs_placement *out) {
  out->active = 1;
  out->budget = c->offload_budget_bytes;
  out->with_params = zs_state_is(&p->table, ZS_ST_PARAM_SHARD, ZS_LIFE_PERSISTENT);
  size_t all[ZS_MEM_NCAT] = {0};
  for (int i = 0; i < u->n; i++) {
    zs_state_table t; /* on the device: a frozen unit's params alone */
    zs_placement_unit_table(p, u, i, 0, &t);
    zs_plan_unit_bytes_of(p, &t, zs_plan_unit_numel(u, i), all);
  }
  size_t dev = zs_plan_buffers(p, c, world, u);
  for (int k = ZS_MEM_PARAMS; k <= ZS_MEM_BUFFERS; k++)
    if (k != ZS_MEM_BUFFERS) dev = sat_add(dev, all[k]);
  out->ceil_bytes = dev;
  const size_t total = weight_at_least(moved_w, out, p, u, 0);
  out->floor_bytes = dev - (total < dev ? total : dev);
  if (dev <= out->budget) {
    out->device_bytes = dev;
    out->fits = 1;
    return;
  }
  /* dev - budget: the bytes that must leave the device */
  choose_prefix(moved_w, out, p, u, dev - out->budget, &out->cut, &out->tie_last);
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

int zs_placement_offload_optimizer(const zs_config *c) {
  return (c->offload & ZS_OFFLOAD_OPTIMIZER) ||
         (c->offload_budget_bytes && c->offload_budget_bytes != ZS_UNSET_SIZE);
}

size_t zs_placement_pipe_bytes(const zs_config *c) {
  const int on = zs_placement_offload_optimizer(c);
  size_t chunk = c->offload_chunk;
  if (!chunk || chunk == ZS_UNSET_SIZE) chunk = (size_t)1 << 22; /* the default */
  return on ? zs_offload_pipe_bytes(c->device, chunk) : 0;
}

/* The NVMe tier's placement after the budget's (out holds it). */
static void nvme_make(const zs_plan *p, const zs_config *c, const zs_plan_units *u,
                      zs_placement *out) {
  out->nvme = 1;
  out->host_cap = c->offload_host_bytes;
  size_t host[ZS_MEM_NCAT] = {0};
  for (int i = 0; i < u->n; i++) {
    zs_state_table t;
    zs_placement_unit_table(p, u, i, zs_placement_host(out, p, u, i), &t);
    zs_plan_unit_bytes_of(p, &t, zs_plan_unit_numel(u, i), host);
  }
  const size_t h = sat_add(host[ZS_MEM_HOST_PINNED], zs_placement_pipe_bytes(c));
  out->host_bytes = h;
  out->host_fits = 1;
  if (h <= out->host_cap) return;
  const size_t st = zs_placement_nvme_staging(c);
  const size_t over = sat_add(h, st);
  const size_t need = over - (out->host_cap < over ? out->host_cap : over);
  choose_prefix(nvme_w, out, p, u, need, &out->nvme_cut, &out->nvme_tie_last);
  size_t freed = 0;
  for (int i = 0; i < u->n; i++)
    if (zs_placement_nvme(out, p, u, i)) {
      out->nnvme++;
      freed = sat_add(freed, nvme_w(out, p, u, i));
      out->disk_bytes =
          sat_add(out->disk_bytes, nvme_sum(p, u, i, zs_placement_host(out, p, u, i), 0));
    }
  out->staging_bytes = out->nnvme ? st : 0;
  out->host_bytes = sat_add(h - (freed < h ? freed : h), out->staging_bytes);
  out->host_fits = out->host_bytes <= out->host_cap;
}

void zs_placement_make(const zs_plan *p, const zs_config *c, int world, const zs_plan_units *u,
                       zs_placement *out) {
  memset(out, 0, sizeof *out);
  out->cut = out->nvme_cut = SIZE_MAX;
  out->tie_last = out->nvme_tie_last = -1;
  out->host_fits = 1;
  if (c->offload_budget_bytes && c->offload_budget_bytes != ZS_UNSET_SIZE)
    budget_make(p, c, world, u, out);
  if (c->nvme_path) nvme_make(p, c, u, out);
}

/* The bytes of the arrays the NVMe tier would take from unit i: in memory (charged: each array's
   whole pages, what moving it frees on the host) or on disk. */
static size_t nvme_sum(const zs_plan *p, const zs_plan_units *u, int i, int host, int charged) {
  zs_state_table t;
  zs_placement_unit_table(p, u, i, host, &t);
  if (!charged) zs_state_table_unpack(&t); /* the tier's files hold whole ranges */
  int any = 0;                             /* optimizer state on the host to move */
  for (int k = ZS_ST_MASTER; k <= ZS_ST_MASTER_REM; k++)
    any |= zs_state_is(&t, (zs_state)k, ZS_LIFE_PERSISTENT) && t.s[k].tier == ZS_TIER_HOST;
  if (!any) return 0;
  const size_t P = zs_plan_padded(p, zs_plan_unit_numel(u, i)), sh = P / (size_t)p->nshards;
  size_t b = 0; /* the master (or the remainders where the mode has them), the state arrays */
  for (int k = ZS_ST_MASTER; k <= ZS_ST_MASTER_REM; k++)
    if (zs_state_is(&t, (zs_state)k, ZS_LIFE_PERSISTENT)) {
      const size_t a = zs_state_bytes(&t, (zs_state)k, P, sh);
      if (a) b = sat_add(b, charged ? zs_host_charge(a) : a); /* none for an empty packed one */
    }
  return b;
}

size_t zs_placement_nvme_bytes(const zs_plan *p, const zs_plan_units *u, int i, int host) {
  return nvme_sum(p, u, i, host, 1);
}

void zs_placement_nvme_elems(const zs_config *c, size_t eb[1 + ZS_OPT_MAX_STATE]) {
  eb[0] = (size_t)zs_master_mode_of(c->master)->master_bytes;
  const int ns = zs_opt_shape_of(c)->nstate;
  for (int i = 0; i < ZS_OPT_MAX_STATE; i++)
    eb[1 + i] = i < ns ? zs_dtype_size(c->moment_dtype) : 0;
}

size_t zs_placement_nvme_staging(const zs_config *c) {
  size_t chunk = c->offload_chunk, eb[1 + ZS_OPT_MAX_STATE], per = 0;
  if (!chunk || chunk == ZS_UNSET_SIZE) chunk = (size_t)1 << 22; /* the default */
  zs_placement_nvme_elems(c, eb);
  for (int w = 0; w < 1 + ZS_OPT_MAX_STATE; w++)
    per += 3 * eb[w]; /* 3 slots x the arrays' bytes */
  if (!per) return 0;
  return chunk > SIZE_MAX / per ? SIZE_MAX : chunk * per;
}

int zs_placement_nvme(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i) {
  if (!pl->nvme || pl->nvme_cut == SIZE_MAX) return 0;
  const size_t m = nvme_w(pl, p, u, i);
  return m > 0 && (m > pl->nvme_cut || (m == pl->nvme_cut && i <= pl->nvme_tie_last));
}

void zs_placement_unit_of(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i,
                          zs_state_table *t) {
  zs_placement_unit_table(p, u, i, zs_placement_host(pl, p, u, i), t);
  if (!zs_placement_nvme(pl, p, u, i)) return;
  zs_state_table_unpack(t); /* the tier's files hold whole ranges */
  for (int k = ZS_ST_MASTER; k <= ZS_ST_MASTER_REM;
       k++) /* master or remainders, the state arrays */
    if (zs_state_is(t, (zs_state)k, ZS_LIFE_PERSISTENT)) t->s[k].tier = ZS_TIER_NVME;
}

int zs_placement_host(const zs_placement *pl, const zs_plan *p, const zs_plan_units *u, int i) {
  if (!pl->active || pl->cut == SIZE_MAX) return 0;
  const size_t m = zs_placement_moved(p, u, i);
  return m > pl->cut || (m == pl->cut && i <= pl->tie_last);
}
