/* Commit-time fit check: what this rank will hold (persistent state by category, plus a bound on
 * the transient buffers) against what its device has, before anything is allocated. A model that
 * cannot fit is refused with ZS_ERR_OUT_OF_MEMORY naming the bytes and what would fit, instead of
 * "succeeding" on an overcommitting host and dying to the OOM killer at the first touch. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/agree.h"
#include "engine/engine_internal.h"
#include "base/error.h"
#include "mem/host_mem.h"
#include "shard/plan_fit.h"

/* Memory this rank may count on: device and (offload) host, each divided by the ranks that
   really share it (peers.c): host memory by the ranks on this host, the cgroup's room by those
   in the same cgroup, a GPU's free memory by the ranks on that GPU. Every rank measures after a
   barrier and before anyone allocates. *what describes the source. */
int zs_engine_available(zs_engine *e, size_t *dev, size_t *host, char *what, size_t n) {
  zs_host_mem hm;
  const int have_host = zs_host_mem_available(NULL, &hm);
  int idx, on_host, in_cg, on_gpu;
  zs_peers_share(e, ZS_PEER_HOST, &idx, &on_host);
  zs_peers_share(e, ZS_PEER_CGROUP, &idx, &in_cg);
  zs_peers_share(e, ZS_PEER_GPU, &idx, &on_gpu);
  size_t h = SIZE_MAX;
  if (hm.mem_available) h = hm.mem_available / (size_t)on_host;
  if (hm.cgroup_limit && hm.cgroup_room / (size_t)in_cg < h) h = hm.cgroup_room / (size_t)in_cg;
  if (hm.as_room && hm.as_room < h) h = hm.as_room; /* per process */
  *host = have_host ? h : 0;
  if (e->cfg.device == ZS_DEVICE_CPU) {
    *dev = *host;
    snprintf(what, n,
             "host: MemAvailable %zu over %d rank(s) of this host, cgroup room %zu over %d "
             "rank(s) in it, address-space room %zu",
             hm.mem_available, on_host, hm.cgroup_room, in_cg, hm.as_room);
    return have_host;
  }
  size_t fr = 0, tot = 0;
  if (zs_dev_mem_info(&e->dev, &fr, &tot) != ZS_OK) return 0;
  *dev = fr / (size_t)on_gpu;
  snprintf(what, n, "GPU %d: %zu of %zu bytes free, shared by %d rank(s)", e->dev.index, fr, tot,
           on_gpu);
  return 1;
}

/* This rank's verdict: ZS_OK, or ZS_ERR_OUT_OF_MEMORY with the message set. The sentence comes
   from zs_plan_verdict, the same as zs_plan_model's and zshard-plan's (activations: 0, the
   engine does not know the caller's). */
static zs_status check_local(zs_engine *e) {
  size_t dev = 0, host = 0;
  char what[256];
  const zs_plan_units us = {e->units, NULL, e->nunits, NULL, NULL, NULL, NULL, NULL};
  zs_plan_need n;
  if (zs_plan_need_of(&e->cfg, e->world_size, &us, 0, &n) != ZS_OK) return ZS_OK;
  if ((n.place.active && !n.place.fits) || (n.host_cap && n.host_total > n.host_cap)) {
    /* over its own budget or host cap, whatever the memory */
    const zs_plan_room any = {e->cfg.device, SIZE_MAX, SIZE_MAX};
    char verdict[640];
    zs_plan_verdict(&e->cfg, e->world_size, &us, 0, &any, verdict, sizeof verdict);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_commit: %s; nothing was allocated", verdict);
  }
  if (!zs_engine_available(e, &dev, &host, what, sizeof what))
    return ZS_OK; /* nothing known: trust it */
  const zs_plan_room room = {e->cfg.device, dev, host};
  if (zs_plan_fits(&n, &room)) return ZS_OK;
  char verdict[640];
  zs_plan_verdict(&e->cfg, e->world_size, &us, 0, &room, verdict, sizeof verdict);
  return zs_err(ZS_ERR_OUT_OF_MEMORY,
                "zs_engine_commit: %s (this rank: params %zu, grads %zu, optimizer %zu, buffers "
                "up to %zu, offloaded %zu bytes; available %zu bytes on the device, %zu on the "
                "host: %s); nothing was allocated",
                verdict, n.cat[ZS_MEM_PARAMS], n.cat[ZS_MEM_GRADS], n.cat[ZS_MEM_OPTIMIZER],
                n.cat[ZS_MEM_BUFFERS], n.cat[ZS_MEM_HOST_PINNED], dev, host, what);
}

zs_status zs_engine_check_fit(zs_engine *e) {
  ZS_CHECK(zs_coll_barrier(e->all)); /* every rank measures before anyone allocates */
  const zs_status mine = check_local(e);
  /* One verdict for all: a rank that goes on while another refuses would hang in the first
     collective. */
  const zs_agree_text say = {.what = "zs_engine_commit",
                             .phrase = " cannot hold the model (its message says how much it "
                                       "needs and what would fit); nothing was allocated on any "
                                       "rank",
                             .theirs = ZS_ERR_OUT_OF_MEMORY,
                             .fail_on_exchange = 1};
  return zs_engine_agree(e, mine, NULL, &say);
}
