/* The memory tiers (tier.h): device memory and the host arena. Both are addressed by pointer and
 * share their code; they differ in where a state is allocated and in how its bytes reach host
 * memory (a plain copy from the arena, or on the CPU device; a device copy otherwise). The update
 * hands each tensor's segment to the optimizer in place, which picks its path from where the
 * master and the params are (optim.h). */
#include <string.h>

#include "base/error.h"
#include "tier/tier.h"

/* A packed array no tensor with elements keeps (opt_pack.h) has no bytes and no buffer. */
static zs_status device_alloc(zs_tiers *t, zs_unit *u, zs_state s) {
  const size_t bytes = zs_unit_state_bytes(u, s);
  void **p = zs_unit_slot(u, s);
  if (!bytes) return ZS_OK;
  zs_dev *d = t->sh->dev;
  ZS_CHECK(zs_mem_alloc(t->sh->mem, u->st.s[s].cat, bytes, p, NULL));
  return zs_dev_zero(d, *p, bytes, d->compute_stream);
}

static void device_free(zs_tiers *t, zs_unit *u, zs_state s) {
  void **p = zs_unit_slot(u, s);
  if (!*p) return;
  zs_mem_free(t->sh->mem, u->st.s[s].cat, *p, zs_unit_state_bytes(u, s), NULL);
  *p = NULL;
}

static zs_status host_alloc(zs_tiers *t, zs_unit *u, zs_state s) {
  const size_t bytes = zs_unit_state_bytes(u, s);
  void **p = zs_unit_slot(u, s);
  if (!bytes) return ZS_OK;
  ZS_CHECK(zs_mem_alloc_host(t->sh->mem, bytes, p));
  memset(*p, 0, bytes);
  return ZS_OK;
}

static void host_free(zs_tiers *t, zs_unit *u, zs_state s) {
  void **p = zs_unit_slot(u, s);
  if (!*p) return;
  zs_mem_free_host(t->sh->mem, *p, zs_unit_state_bytes(u, s));
  *p = NULL;
}

/* The address of element `first` of array a of u's optimizer range: the remainders, u->master
   (the fp32 master, or the alias of the params' home), or the optimizer's state. */
static void *arr_at(const zs_unit *u, zs_arr a, size_t first) {
  const zs_state s = zs_arr_state(u, a);
  void *base = a != ZS_ARR_MASTER      ? u->opt[a - ZS_ARR_OPT0]
               : s == ZS_ST_MASTER_REM ? (void *)u->rem
                                       : (void *)u->master;
  return zs_ptr_add(base, first, u->st.s[s].dtype);
}

/* Whether array a's bytes may be copied with memcpy: in the host arena, or on the CPU device. */
static int direct(const zs_tiers *t, const zs_unit *u, zs_arr a) {
  return zs_unit_on_host(u, zs_arr_state(u, a)) || t->sh->dev->kind == ZS_DEVICE_CPU;
}

/* One run of a range's copy: bytes between host memory h and the tier's address p. */
static zs_status copy_run(zs_tiers *t, const zs_unit *u, zs_arr a, void *h, void *p, size_t bytes,
                          int write) {
  if (direct(t, u, a)) {
    memcpy(write ? p : h, write ? h : p, bytes);
    return ZS_OK;
  }
  return write ? zs_dev_from_host(t->sh->dev, p, h, bytes)
               : zs_dev_to_host(t->sh->dev, h, p, bytes);
}

/* A range of a packed array (opt_pack.h): the kept elements' runs are copied; the rest reads as
   zeros and its writes are dropped (no update reads it, and zs_unit_get_state says zeros). */
static zs_status packed_io(zs_tiers *t, const zs_unit *u, zs_arr a, size_t first, size_t n, void *h,
                           int write) {
  const int i = (int)a - ZS_ARR_OPT0;
  const size_t es = zs_tier_elem(u, a), lo = u->opt_off + first, hi = lo + n;
  if (!write) memset(h, 0, n * es);
  for (int k = 0; k < u->ntensors; k++) {
    size_t x, y;
    if (!zs_unit_kept_overlap(u, k, i, lo, hi, &x, &y)) continue;
    ZS_CHECK(copy_run(t, u, a, (char *)h + (x - lo) * es,
                      (char *)u->opt[i] + zs_unit_opt_at(u, i, k, x) * es, (y - x) * es, write));
  }
  return ZS_OK;
}

static int packed(const zs_unit *u, zs_arr a) {
  return a != ZS_ARR_MASTER && u->st.s[ZS_ST_OPT((int)a - ZS_ARR_OPT0)].packed;
}

static zs_status mem_read(zs_tiers *t, const zs_unit *u, zs_arr a, size_t first, size_t n,
                          void *dst) {
  if (packed(u, a)) return packed_io(t, u, a, first, n, dst, 0);
  return copy_run(t, u, a, dst, arr_at(u, a, first), n * zs_tier_elem(u, a), 0);
}

static zs_status mem_write(zs_tiers *t, const zs_unit *u, zs_arr a, size_t first, size_t n,
                           const void *src) {
  if (packed(u, a)) return packed_io(t, u, a, first, n, (void *)src, 1);
  return copy_run(t, u, a, (void *)src, arr_at(u, a, first), n * zs_tier_elem(u, a), 1);
}

zs_optim_seg zs_tier_mem_seg(zs_unit *u, int k, size_t a, size_t b) {
  const size_t lo = a - u->opt_off;
  zs_optim_seg seg = {u->master ? u->master + lo : NULL, /* lean, remainder: none */
                      {NULL},
                      zs_unit_home_at(u, ZS_ST_GRAD_FULL, a),
                      zs_unit_home_at(u, ZS_ST_PARAM_FULL, a),
                      b - a,
                      u->t[k].no_weight_decay,
                      zs_unit_on_host(u, ZS_ST_MASTER),
                      zs_unit_on_host(u, zs_state_home(&u->st, ZS_ST_PARAM_FULL)),
                      u->group[k],
                      u->index,
                      a,
                      u->rem ? u->rem + lo : NULL,
                      u->whole_dir && u->whole_owner[k] >= 0 ? u->whole_dir + a : NULL};
  /* A tensor's own arrays (packed: its part; NULL where the piece reaches past what it keeps). */
  for (int j = 0; j < ZS_OPT_MAX_STATE; j++) {
    size_t x, y;
    if (u->opt[j] && (!u->st.s[ZS_ST_OPT(j)].packed ||
                      (zs_unit_kept_overlap(u, k, j, a, b, &x, &y) && x == a && y == b)))
      seg.state[j] = zs_ptr_add(u->opt[j], zs_unit_opt_at(u, j, k, a), u->st.s[ZS_ST_OPT(j)].dtype);
  }
  return seg;
}

static zs_status mem_update(zs_tiers *t, zs_unit *u) {
  zs_status rc = ZS_OK;
  for (int k = 0; k < u->ntensors && rc == ZS_OK; k++) {
    size_t a, b;
    if (!zs_layout_overlap(&u->lay, k, u->opt_off, u->opt_off + u->opt_n, &a, &b)) continue;
    const zs_optim_seg seg = zs_tier_mem_seg(u, k, a, b);
    rc = zs_optim_update(t->optim, &seg);
  }
  return rc;
}

const zs_tier_ops zs_tier_device_ops = {"device", device_alloc, device_free,
                                        mem_read, mem_write,    mem_update};
const zs_tier_ops zs_tier_host_ops = {"host",   host_alloc, host_free,
                                      mem_read, mem_write,  mem_update};
