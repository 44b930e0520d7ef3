/* Who shares what with whom: every rank's host, cgroup, GPU and offload NUMA node, all-gathered
 * once at engine creation. Memory checks and CPU worker placement divide a shared resource by
 * the ranks that really share it (not by an assumed layout: ranks may see one GPU each through
 * CUDA_VISIBLE_DEVICES, or sit in per-task cgroups). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "base/error.h"

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Hash of a small text file's contents (0 when unreadable). */
static uint64_t file_hash(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return fnv1a(0xcbf29ce484222325ull, buf, n) | 1;
}

zs_status zs_engine_allgather_u64(zs_engine *e, const uint64_t *mine, size_t n, uint64_t *all) {
  return zs_engine_allgather_u64_on(e, e->world, e->world_rank, e->world_size, mine, n, all);
}

zs_status zs_engine_allgather_u64_on(zs_engine *e, zs_coll *g, int grank, int gsize,
                                     const uint64_t *mine, size_t n, uint64_t *all) {
  const size_t W = (size_t)gsize, bytes = W * n * sizeof(uint64_t);
  zs_dev *d = &e->dev;
  if (d->kind == ZS_DEVICE_CPU) {
    /* Through the engine's kept buffer, not the caller's: the caller frees `all` when this
       fails, while an abandoned request may still write into the buffer until destroy. */
    if (e->xchg_words < W * n) {
      if (e->mem.broken)
        return zs_err(ZS_ERR_STATE, "zs_engine_allgather_u64: the engine failed earlier");
      uint64_t *p = realloc(e->xchg, bytes);
      if (!p)
        return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for a %zu-byte exchange", bytes);
      e->xchg = p;
      e->xchg_words = W * n;
    }
    uint64_t *slot = e->xchg + (size_t)grank * n;
    memcpy(slot, mine, n * sizeof(uint64_t));
    const zs_status rc = zs_coll_all_gather(g, slot, e->xchg, n, ZS_CDT_U64, NULL);
    if (rc == ZS_OK) memcpy(all, e->xchg, bytes);
    return rc;
  }
  /* CUDA groups move device memory: through the engine's kept device buffer (xchg_dev), never a
     cudaMalloc/cudaFree per call (cudaFree waits for the whole device, which may hold another
     group's collective). It is sized once for the largest exchange (ZS_XCHG_WORDS per rank) and
     grown only for a larger one, freed at destroy once the groups are gone. */
  if (e->xchg_dev_words < W * n) {
    if (e->mem.broken)
      return zs_err(ZS_ERR_STATE, "zs_engine_allgather_u64: the engine failed earlier");
    const size_t words = W * (n > ZS_XCHG_WORDS ? n : ZS_XCHG_WORDS);
    /* A healthy engine has no exchange in flight: the last one was synchronised. */
    if (e->xchg_dev) zs_dev_free(d, e->xchg_dev, NULL);
    e->xchg_dev = NULL;
    e->xchg_dev_words = 0;
    ZS_CHECK(zs_dev_alloc(d, words * sizeof(uint64_t), (void **)&e->xchg_dev, NULL));
    e->xchg_dev_words = words;
  }
  uint64_t *buf = e->xchg_dev, *slot = buf + (size_t)grank * n;
  zs_status rc = zs_dev_from_host(d, slot, mine, n * sizeof(uint64_t));
  if (rc == ZS_OK) rc = zs_coll_all_gather(g, slot, buf, n, ZS_CDT_U64, d->comm_stream);
  if (rc == ZS_OK) rc = zs_coll_sync(g, d->comm_stream);
  if (rc == ZS_OK) rc = zs_dev_to_host(d, all, buf, bytes);
  return rc;
}

zs_status zs_peers_gather(zs_engine *e, int node) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "?");
  uint64_t mine[ZS_PEER_WORDS] = {fnv1a(0xcbf29ce484222325ull, host, strlen(host)),
                                  file_hash("/proc/self/cgroup"), zs_dev_id_hash(&e->dev),
                                  (uint64_t)(int64_t)node};
  /* Every rank, tp peers too: they share the node's cores and memory as data-parallel ones do. */
  const size_t W = (size_t)e->all_size;
  e->peers = calloc(W * ZS_PEER_WORDS, sizeof *e->peers);
  if (!e->peers) return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the peer table");
  zs_status rc = zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, mine,
                                            ZS_PEER_WORDS, e->peers);
  if (rc != ZS_OK) return zs_err_wrap(rc, "zs_engine_create: exchanging the ranks' placement");
  return ZS_OK;
}

void zs_peers_share(const zs_engine *e, int what, int *idx, int *cnt) {
  const uint64_t *me = e->peers + (size_t)e->all_rank * ZS_PEER_WORDS;
  int i = 0, c = 0;
  for (int r = 0; r < e->all_size; r++) {
    const uint64_t *p = e->peers + (size_t)r * ZS_PEER_WORDS;
    if (p[ZS_PEER_HOST] != me[ZS_PEER_HOST] || p[what] != me[what]) continue;
    if (r < e->all_rank) i++;
    c++;
  }
  *idx = i;
  *cnt = c > 0 ? c : 1;
}
