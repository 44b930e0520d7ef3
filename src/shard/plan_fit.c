/* Fit verdicts (plan_fit.h): need against room, and the sentence that says what would fit. */
#include "plan_fit.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

/* " data-parallel" where the ranks a sentence counts are not every rank (tp_size > 1). */
static const char *dp_word(const zs_config *c) {
  return c->tp_size > 1 ? " data-parallel" : "";
}

static size_t sat_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

zs_status zs_plan_need_of(const zs_config *c, int world, const zs_plan_units *u, size_t act,
                          zs_plan_need *n) {
  memset(n, 0, sizeof *n);
  const int g = c->shard_group_size ? c->shard_group_size : world;
  if (world < 1 || g < 1 || g > world || world % g != 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "shard group of %d does not divide %d ranks: use a divisor of the world, or 0 "
                  "for the whole world",
                  g, world);
  zs_plan p;
  ZS_CHECK(zs_plan_make(c, g, &p));
  zs_plan_memory(&p, c, world, u, n->cat);
  zs_placement_make(&p, c, world, u, &n->place);
  n->activations = act;
  size_t d = act;
  for (int k = ZS_MEM_PARAMS; k <= ZS_MEM_BUFFERS; k++)
    d = sat_add(d, n->cat[k]);
  n->device_total = d;
  n->host_total = n->cat[ZS_MEM_HOST_PINNED];
  n->host_cap = c->offload_host_bytes == ZS_UNSET_SIZE ? 0 : c->offload_host_bytes;
  return ZS_OK;
}

int zs_plan_fits(const zs_plan_need *n, const zs_plan_room *r) {
  if (n->place.active && !n->place.fits) return 0;
  if (n->place.nvme && !n->place.host_fits) return 0; /* over offload_host_bytes, all on disk */
  if (n->host_cap && n->host_total > n->host_cap) return 0; /* the host arena's capacity */
  if (r->device == ZS_DEVICE_CPU) return sat_add(n->device_total, n->host_total) <= r->device_bytes;
  return n->device_total <= r->device_bytes && n->host_total <= r->host_bytes;
}

void zs_plan_human(size_t bytes, char *out, size_t cap) {
  const double b = (double)bytes;
  if (b >= 1024.0 * 1024 * 1024)
    snprintf(out, cap, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    snprintf(out, cap, "%.1f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    snprintf(out, cap, "%.1f KiB", b / 1024.0);
  else
    snprintf(out, cap, "%zu bytes", bytes);
}

/* c with the stage, offload and world changed (the switches follow the stage; a set shard group
   grows with the world). 1 when it is a plan that fits. */
static int fits_as(const zs_config *c0, int world0, int stage, unsigned off, int world,
                   const zs_plan_units *u, size_t act, const zs_plan_room *r) {
  zs_config c = *c0;
  if (stage != c.stage || off != c.offload) {
    c.stage = stage;
    c.offload = off;
    c.shard_params = c.shard_grads = c.shard_optimizer = ZS_SHARD_AS_STAGE;
  }
  if (c.shard_group_size)
    c.shard_group_size = (int)((long long)c.shard_group_size * world / world0);
  zs_plan_need n;
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", zs_last_error()); /* a probe must not clobber the caller's */
  const int ok = zs_plan_need_of(&c, world, u, act, &n) == ZS_OK && zs_plan_fits(&n, r);
  zs_error_report(ZS_OK, saved);
  return ok;
}

static const char *offload_words(unsigned off) {
  return off == (ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS) ? "optimizer and params offload"
         : off == ZS_OFFLOAD_OPTIMIZER                     ? "optimizer offload"
                                                           : "params offload";
}

/* Appends " or " (after the first) and the text; keeps msg terminated when full. */
static void append(char *msg, size_t cap, size_t *h, int *count, const char *text) {
  if (*h >= cap) return;
  int w = snprintf(msg + *h, cap - *h, "%s%s", *count ? " or " : "", text);
  *h += w > 0 ? (size_t)w : 0;
  (*count)++;
}

/* The alternatives that fit, appended to msg: a higher stage, more ranks, offload. */
static void alternatives(const zs_config *c, int world, const zs_plan_units *u, size_t act,
                         const zs_plan_room *r, char *msg, size_t cap, size_t *h, int *count) {
  char t[160];
  int higher = 0;
  for (int st = c->stage + 1; st <= 3 && !higher; st++)
    if (fits_as(c, world, st, c->offload, world, u, act, r)) {
      snprintf(t, sizeof t, "at stage %d", st);
      append(msg, cap, h, count, t);
      higher = 1;
    }
  int found = 0;
  /* More ranks at the same stage, else (when no higher stage fits as it is) at stage 3. */
  for (int pass = 0; pass < 2 && !found; pass++) {
    const int st = pass ? 3 : c->stage;
    if (pass && (st == c->stage || higher)) break;
    for (long long k = 2; k <= 4096 && !found; k *= 2) {
      if ((long long)world * k > INT32_MAX) break;
      const int w = (int)(world * k);
      if (!fits_as(c, world, st, c->offload, w, u, act, r)) continue;
      if (pass)
        snprintf(t, sizeof t, "with %d%s ranks at stage 3", w, dp_word(c));
      else
        snprintf(t, sizeof t, "with %d%s ranks", w, dp_word(c));
      append(msg, cap, h, count, t);
      found = 1;
    }
  }
  if (r->device == ZS_DEVICE_CPU) return; /* offload moves bytes within the same host memory */
  const unsigned offs[2] = {ZS_OFFLOAD_OPTIMIZER, ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS};
  for (int i = 0; i < 2; i++) {
    if ((c->offload & offs[i]) == offs[i]) continue;
    const unsigned off = c->offload | offs[i];
    int st = c->stage < 1 ? 1 : c->stage;
    if (off & ZS_OFFLOAD_PARAMS) st = 3;
    if (!fits_as(c, world, st, off, world, u, act, r)) continue;
    if (st != c->stage)
      snprintf(t, sizeof t, "with %s at stage %d", offload_words(off), st);
    else
      snprintf(t, sizeof t, "with %s", offload_words(off));
    append(msg, cap, h, count, t);
    break;
  }
}

/* The verdict of a model over its offload budget even with every unit on the host, into msg:
   the least budget, when that fits the room too; returns its length (cap when full). */
static size_t over_budget(const zs_config *c, int world, const zs_plan_units *u, size_t act,
                          const zs_plan_room *r, const zs_plan_need *n, char *msg, size_t cap) {
  zs_config least = *c;
  least.offload_budget_bytes = n->place.floor_bytes;
  zs_plan_need ln;
  const int floor_fits =
      zs_plan_need_of(&least, world, u, act, &ln) == ZS_OK && zs_plan_fits(&ln, r);
  char fl[32], bu[32];
  zs_plan_human(n->place.floor_bytes, fl, sizeof fl);
  zs_plan_human(n->place.budget, bu, sizeof bu);
  snprintf(msg, cap,
           "does not fit: needs %s %s at stage %d with %d%s rank%s with every unit's optimizer "
           "state%s on the host, over the offload budget of %s",
           fl, c->device == ZS_DEVICE_CPU ? "on each rank" : "on each GPU", c->stage, world,
           dp_word(c), world == 1 ? "" : "s", n->place.with_params ? " and param shard" : "", bu);
  size_t h = strlen(msg);
  if (h + 1 < cap)
    snprintf(msg + h, cap - h,
             floor_fits ? "; fits with an offload budget of %s (%zu bytes) or more"
                        : "; the least budget, %s (%zu bytes), does not fit this memory either",
             fl, n->place.floor_bytes);
  h = strlen(msg);
  return h + 1 >= cap ? cap : h;
}

/* " (offload budget 1.0 GiB: 3 of 12 units on the host)", or "" without a budget. */
static void budget_words(const zs_plan_need *n, int nunits, char *out, size_t cap) {
  *out = '\0';
  if (!n->place.active) return;
  char bu[32] = "free"; /* ZS_BUDGET_FREE unmeasured (the planner): no model exceeds it */
  if (n->place.budget != ZS_BUDGET_FREE) zs_plan_human(n->place.budget, bu, sizeof bu);
  snprintf(out, cap, " (offload budget %s: %d of %d units on the host)", bu, n->place.nhost,
           nunits);
}

int zs_plan_verdict(const zs_config *c, int world, const zs_plan_units *u, size_t act,
                    const zs_plan_room *r, char *msg, size_t cap) {
  zs_plan_need n;
  if (zs_plan_need_of(c, world, u, act, &n) != ZS_OK) {
    snprintf(msg, cap, "%s", zs_last_error());
    return -1;
  }
  const int ok = zs_plan_fits(&n, r), cpu = r->device == ZS_DEVICE_CPU;
  if (n.place.active && !n.place.fits) {
    size_t h = over_budget(c, world, u, act, r, &n, msg, cap);
    char alt[400] = "";
    size_t ah = 0;
    int count = 0;
    if (h < cap) alternatives(c, world, u, act, r, alt, sizeof alt, &ah, &count);
    if (count && h < cap)
      snprintf(msg + h, cap - h, "%s%s", strstr(msg, "; fits") ? " or " : "; fits ", alt);
    return 0;
  }
  if (n.host_cap && n.host_total > n.host_cap) { /* over the host cap (with the NVMe tier: with
                                                    every offloaded unit's state on it) */
    char hb[32], cb[32];
    zs_plan_human(n.host_total, hb, sizeof hb);
    zs_plan_human(n.host_cap, cb, sizeof cb);
    snprintf(msg, cap,
             "does not fit: needs %s of host memory at stage %d with %d%s rank%s%s, over "
             "offload_host_bytes of %s; fits with offload_host_bytes of %zu bytes or more",
             hb, c->stage, world, dp_word(c), world == 1 ? "" : "s",
             n.place.nvme ? " with every offloaded unit's optimizer state on the NVMe tier" : "",
             cb, n.host_total);
    return 0;
  }
  /* What is short: on the CPU device the one pool; on a GPU the device, else the host. */
  const int host_short = !ok && !cpu && n.device_total <= r->device_bytes;
  char need[32], host[64] = "", grp[48] = "";
  zs_plan_human(cpu          ? sat_add(n.device_total, n.host_total)
                : host_short ? n.host_total
                             : n.device_total,
                need, sizeof need);
  if (!cpu && !host_short && n.host_total) {
    char hb[32];
    zs_plan_human(n.host_total, hb, sizeof hb);
    snprintf(host, sizeof host, " and %s of host memory", hb);
  }
  if (c->shard_group_size && c->shard_group_size != world)
    snprintf(grp, sizeof grp, " (shard groups of %d)", c->shard_group_size);
  char bw[96];
  budget_words(&n, u->n, bw, sizeof bw);
  size_t h = (size_t)snprintf(msg, cap, "%s: needs %s %s%s at stage %d with %d%s rank%s%s%s",
                              ok ? "fits" : "does not fit", need,
                              cpu          ? "on each rank"
                              : host_short ? "of host memory on each rank"
                                           : "on each GPU",
                              host, c->stage, world, dp_word(c), world == 1 ? "" : "s", grp, bw);
  if (ok || h >= cap) return ok;
  char alt[400] = "";
  size_t ah = 0;
  int count = 0;
  alternatives(c, world, u, act, r, alt, sizeof alt, &ah, &count);
  if (count)
    snprintf(msg + h, cap - h, "; fits %s", alt);
  else
    snprintf(msg + h, cap - h, "; nothing fits: no higher stage, offload or up to 4096x the ranks");
  return 0;
}
