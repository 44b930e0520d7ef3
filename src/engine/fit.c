/* Commit-time fit check: what this rank will hold (persistent state by category, plus a bound on
 * the transient buffers) against what its device has, before anything is allocated. A model that
 * cannot fit is refused with ZS_ERR_OUT_OF_MEMORY naming the bytes and what would fit, instead of
 * "succeeding" on an overcommitting host and dying to the OOM killer at the first touch. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "base/error.h"
#include "mem/host_mem.h"

/* Bytes of one rank under a plan: on the device and (offloaded) in the host arena. */
typedef struct {
  size_t params, grads, optimizer, buffers; /* on the device */
  size_t host;                              /* offloaded state in the pinned host arena */
} zs_need;

static size_t sat_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* The need of this engine's units under its config with the stage, offload and shard group
   size changed (switches follow the stage). Returns 0 when that combination is no plan. */
static int need_of(const zs_engine *e, int stage, unsigned offload, size_t S, zs_need *n) {
  zs_config c = e->cfg;
  if (stage != c.stage || offload != c.offload) {
    c.stage = stage;
    c.offload = offload;
    c.shard_params = c.shard_grads = c.shard_optimizer = ZS_SHARD_AS_STAGE;
  }
  zs_plan p;
  if (zs_plan_make(&c, S > INT32_MAX ? INT32_MAX : (int)S, &p) != ZS_OK) return 0;
  size_t out[ZS_MEM_NCAT];
  zs_plan_memory(&p, &c, e->units, e->nunits, out);
  n->params = out[ZS_MEM_PARAMS];
  n->grads = out[ZS_MEM_GRADS];
  n->optimizer = out[ZS_MEM_OPTIMIZER];
  n->buffers = out[ZS_MEM_BUFFERS];
  n->host = out[ZS_MEM_HOST_PINNED];
  return 1;
}

static size_t device_total(const zs_need *n) {
  return sat_add(sat_add(n->params, n->grads), sat_add(n->optimizer, n->buffers));
}

/* Memory this rank may count on: device and (offload) host, each divided by the ranks that
   really share it (peers.c): host memory by the ranks on this host, the cgroup's room by those
   in the same cgroup, a GPU's free memory by the ranks on that GPU. Every rank measures after a
   barrier and before anyone allocates. *what describes the source. */
static int available(zs_engine *e, size_t *dev, size_t *host, char *what, size_t n) {
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

/* This rank's verdict: ZS_OK, or ZS_ERR_OUT_OF_MEMORY with the message set. */
static zs_status check_local(zs_engine *e) {
  size_t dev = 0, host = 0;
  char what[256];
  if (!available(e, &dev, &host, what, sizeof what)) return ZS_OK; /* nothing known: trust it */
  const int cpu = e->cfg.device == ZS_DEVICE_CPU;
  const size_t S = (size_t)e->shard_size;
  zs_need n;
  if (!need_of(e, e->cfg.stage, e->cfg.offload, S, &n)) return ZS_OK;
  /* On the CPU device the "device" is host memory too: both draw on one pool. */
  const size_t need_dev = device_total(&n) + (cpu ? n.host : 0);
  const int dev_ok = need_dev <= dev, host_ok = cpu || n.host <= host;
  if (dev_ok && host_ok) return ZS_OK;

  /* What would fit: a higher stage, offload, or more ranks (stage 3, same offload). */
  char hint[400] = "";
  size_t h = 0;
  for (int st = e->cfg.stage + 1; st <= 3; st++) { /* (a higher stage shorthand) */
    zs_need m;
    if (!need_of(e, st, e->cfg.offload, S, &m)) continue;
    if (device_total(&m) + (cpu ? m.host : 0) <= dev && (cpu || m.host <= host)) {
      h += (size_t)snprintf(hint + h, sizeof hint - h, "stage %d needs %zu bytes; ", st,
                            device_total(&m));
      break;
    }
  }
  if (!cpu) {
    zs_need m;
    unsigned off = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
    if (need_of(e, 3, off, S, &m) && h < sizeof hint)
      h += (size_t)snprintf(hint + h, sizeof hint - h,
                            "stage 3 with optimizer and params offloaded needs %zu device bytes "
                            "and %zu host bytes (%zu available); ",
                            device_total(&m), m.host, host);
  }
  for (size_t k = 2; k <= 4096 && h < sizeof hint; k *= 2) {
    zs_need m;
    if (!need_of(e, 3, e->cfg.offload, S * k, &m)) continue;
    if (device_total(&m) + (cpu ? m.host : 0) <= dev && (cpu || m.host <= host)) {
      h += (size_t)snprintf(hint + h, sizeof hint - h,
                            "stage 3 over %zu ranks per shard group needs %zu bytes per rank; ",
                            S * k, device_total(&m) + (cpu ? m.host : 0));
      break;
    }
  }
  if (h == 0) snprintf(hint, sizeof hint, "no stage, offload or up to 4096x more ranks fits; ");
  if (!dev_ok)
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "zs_engine_commit: this rank needs %zu bytes (params %zu, grads %zu, optimizer "
                  "%zu, buffers up to %zu%s%zu) but %zu are available (%s); nothing was "
                  "allocated. What would fit: %s",
                  need_dev, n.params, n.grads, n.optimizer, n.buffers,
                  cpu ? ", offloaded " : ", host ", n.host, dev, what, hint);
  return zs_err(ZS_ERR_OUT_OF_MEMORY,
                "zs_engine_commit: this rank's offloaded state needs %zu bytes of host memory but "
                "%zu are available to it; nothing was allocated. What would fit: %s",
                n.host, host, hint);
}

zs_status zs_engine_check_fit(zs_engine *e) {
  ZS_CHECK(zs_coll_barrier(e->world)); /* every rank measures before anyone allocates */
  const zs_status mine = check_local(e);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", mine == ZS_OK ? "" : zs_last_error());
  /* One verdict for all: a rank that goes on while another refuses would hang in the first
     collective. */
  uint64_t flag = mine == ZS_OK ? 0 : 1, *all = calloc((size_t)e->world_size, sizeof *all);
  if (!all) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_commit: out of host memory");
  zs_status rc = zs_engine_allgather_u64(e, &flag, 1, all);
  int first = -1, count = 0;
  for (int r = 0; r < e->world_size && rc == ZS_OK; r++)
    if (all[r]) {
      if (first < 0) first = r;
      count++;
    }
  free(all);
  if (rc != ZS_OK) return zs_err_wrap(rc, "zs_engine_commit: agreeing on the fit check");
  if (mine != ZS_OK) return zs_err(ZS_ERR_OUT_OF_MEMORY, "%s", msg);
  if (count)
    return zs_err(ZS_ERR_OUT_OF_MEMORY,
                  "zs_engine_commit: %d rank(s) cannot hold the model (rank %d's message says "
                  "how much it needs and what would fit); nothing was allocated on any rank",
                  count, first);
  return ZS_OK;
}
