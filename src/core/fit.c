/* Commit-time fit check: what this rank will hold (persistent state by category, plus a bound on
 * the transient buffers) against what its device has, before anything is allocated. A model that
 * cannot fit is refused with ZS_ERR_OUT_OF_MEMORY naming the bytes and what would fit, instead of
 * "succeeding" on an overcommitting host and dying to the OOM killer at the first touch. */
#include <stdio.h>
#include <string.h>

#include "engine_internal.h"
#include "error.h"
#include "host_mem.h"

/* Bytes of one rank for a hypothetical (stage, offload, shard count S). */
typedef struct {
  size_t params, grads, optimizer, buffers; /* on the device */
  size_t host;                              /* offloaded state in the pinned host arena */
} zs_need;

static size_t round_up(size_t n, size_t S) {
  size_t p = (n + S - 1) / S * S;
  return p < S ? S : p;
}

static void need_of(const zs_engine *e, int stage, unsigned offload, size_t S, zs_need *n) {
  const size_t ps = zs_dtype_size(e->cfg.param_dtype), rs = zs_dtype_size(e->cfg.reduce_dtype);
  memset(n, 0, sizeof *n);
  size_t max_full = 0;
  for (int i = 0; i < e->nunits; i++) {
    const size_t Sx = stage == 0 ? 1 : S;
    const size_t P = round_up(e->units[i]->lay.numel_total, Sx), s = P / Sx;
    if (P > max_full) max_full = P;
    if (stage <= 2)
      n->params += P * ps;
    else if (offload & ZS_OFFLOAD_PARAMS)
      n->host += s * ps;
    else
      n->params += s * ps;
    n->grads += (stage <= 1 ? P : s) * ps;
    const size_t opt = 3 * 4 * (stage == 0 ? P : s);
    if (offload & ZS_OFFLOAD_OPTIMIZER)
      n->host += opt;
    else
      n->optimizer += opt;
  }
  /* Transient buffers, bounded: gathered units (one held, one more held by the caller, the
     prefetch window; or max_live_bytes), the full gradient of a unit in backward, and the
     reduction scratch (a reduce_dtype copy and two packed pieces of at most a unit). */
  size_t gathered = 0;
  if (stage == 3) {
    gathered = ((size_t)e->cfg.prefetch_units + 2) * max_full * ps;
    if (e->cfg.max_live_bytes && e->cfg.max_live_bytes < gathered) gathered = e->cfg.max_live_bytes;
  }
  const size_t grad = stage >= 2 ? max_full * ps : 0;
  size_t scratch = 2 * max_full * rs;
  if (e->cfg.bucket_bytes && 2 * e->cfg.bucket_bytes < scratch) scratch = 2 * e->cfg.bucket_bytes;
  if (e->cfg.reduce_dtype != e->cfg.param_dtype) scratch += max_full * rs;
  n->buffers = gathered + grad + scratch;
}

static size_t device_total(const zs_need *n) {
  return n->params + n->grads + n->optimizer + n->buffers;
}

/* Memory this rank may count on: device and (offload) host, shared fairly with the other ranks
   on this host (they commit the same model at the same time). *what describes the source. */
static int available(zs_engine *e, size_t *dev, size_t *host, char *what, size_t n) {
  zs_host_mem hm;
  const int have_host = zs_host_mem_available(NULL, &hm);
  const size_t local = e->comm->local_size > 0 ? (size_t)e->comm->local_size : 1;
  *host = have_host ? hm.available / local : 0;
  if (e->cfg.device == ZS_DEVICE_CPU) {
    *dev = *host;
    snprintf(what, n, "host memory: %s %zu bytes shared by %zu rank(s) on this host",
             have_host ? hm.source : "unknown", hm.available, local);
    return have_host;
  }
  size_t fr = 0, tot = 0;
  if (zs_dev_mem_info(&e->dev, &fr, &tot) != ZS_OK) return 0;
  const int ndev = zs_dev_cuda_count();
  const size_t per_gpu = ndev > 0 ? (local + (size_t)ndev - 1) / (size_t)ndev : 1;
  *dev = fr / per_gpu;
  snprintf(what, n, "GPU %d: %zu of %zu bytes free, shared by %zu rank(s)", e->dev.index, fr, tot,
           per_gpu);
  return 1;
}

zs_status zs_engine_check_fit(zs_engine *e) {
  size_t dev = 0, host = 0;
  char what[160];
  if (!available(e, &dev, &host, what, sizeof what)) return ZS_OK; /* nothing known: trust it */
  const int cpu = e->cfg.device == ZS_DEVICE_CPU;
  const size_t S = (size_t)e->shard_size;
  zs_need n;
  need_of(e, e->cfg.stage, e->cfg.offload, S, &n);
  /* On the CPU device the "device" is host memory too: both draw on one pool. */
  const size_t need_dev = device_total(&n) + (cpu ? n.host : 0);
  const int dev_ok = need_dev <= dev, host_ok = cpu || n.host <= host;
  if (dev_ok && host_ok) return ZS_OK;

  /* What would fit: a higher stage, offload, or more ranks (stage 3, same offload). */
  char hint[320] = "";
  size_t h = 0;
  for (int st = e->cfg.stage + 1; st <= 3; st++) {
    zs_need m;
    need_of(e, st, e->cfg.offload, S, &m);
    if (device_total(&m) + (cpu ? m.host : 0) <= dev && (cpu || m.host <= host)) {
      h += (size_t)snprintf(hint + h, sizeof hint - h, "stage %d needs %zu bytes; ", st,
                            device_total(&m));
      break;
    }
  }
  if (!cpu) {
    zs_need m;
    unsigned off = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
    need_of(e, 3, off, S, &m);
    if (h < sizeof hint)
      h += (size_t)snprintf(hint + h, sizeof hint - h,
                            "stage 3 with optimizer and params offloaded needs %zu device bytes "
                            "and %zu host bytes (%zu available); ",
                            device_total(&m), m.host, host);
  }
  for (size_t k = 2; k <= 4096 && h < sizeof hint; k *= 2) {
    zs_need m;
    need_of(e, 3, e->cfg.offload, S * k, &m);
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
