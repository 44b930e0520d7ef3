/* Commit's disk step before the NVMe tier opens (engine_internal.h, zs_engine_nvme_disk): dead
 * runs' tier directories reclaimed, then the free space checked per disk, not per rank. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "base/error.h"
#include "engine/agree.h"
#include "engine/engine_internal.h"
#include "offload/nvme_dir.h"
#include "tier/nvme_tier.h"

/* The disk of root on this machine: the kernel's boot id (one per booted machine, the same in
   every container on it; the host name where it cannot be read) mixed with root's device number
   (never 0); 0 when root cannot be read (zs_nvme_dir_open then says why). */
static uint64_t disk_key(const char *root) {
  struct stat st;
  char id[256] = {0};
  if (stat(root, &st) != 0) return 0;
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (!f || !fgets(id, sizeof id, f)) gethostname(id, sizeof id - 1);
  if (f) fclose(f);
  const uint64_t dev = (uint64_t)st.st_dev;
  return XXH64(&dev, sizeof dev, XXH64(id, strlen(id), 0x6e766d65ull)) | 1u;
}

zs_status zs_engine_nvme_disk(zs_engine *e, zs_status prior) {
  const char *root = e->cfg.nvme_path;
  zs_nvme_reclaimed got = {0, 0};
  uint64_t mine[4] = {0, 0, 0, 0}; /* the disk's key, this rank's bytes on it, what it reclaimed */
  if (prior == ZS_OK) {
    zs_nvme_reclaim(root, &got);
    mine[0] = disk_key(root);
    mine[1] = zs_nvme_tier_disk_bytes(&e->tiers, zs_nvme_root_align(root));
    mine[2] = (uint64_t)got.dirs;
    mine[3] = got.bytes;
  }
  /* Every rank's reclaim is over once the words are gathered, so the space seen below is what
     is left of dead runs' too. */
  char phrase[512];
  snprintf(phrase, sizeof phrase,
           " could not allocate its buffers or open its NVMe tier under nvme_path '%s' (its "
           "error says why); nothing was committed",
           root);
  const zs_agree_text say = {.what = "zs_engine_commit", .phrase = phrase};
  const size_t W = 5; /* a rank's row: its status, then mine */
  uint64_t *all =
      calloc((size_t)e->all_size * W, sizeof *all); /* every rank: tp peers share disks */
  zs_status rc = all ? ZS_OK : zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_commit: out of host memory");
  rc = zs_engine_agree_words(e, rc != ZS_OK ? rc : prior, NULL, &say, mine, 4, all);
  if (rc != ZS_OK || !all) {
    free(all);
    return rc;
  }
  uint64_t total = 0;
  int nranks = 0;
  memset(&e->nvme_reclaimed, 0, sizeof e->nvme_reclaimed); /* every rank's, for the info */
  for (int r = 0; r < e->all_size; r++) {
    const uint64_t *row = all + (size_t)r * W;
    e->nvme_reclaimed.dirs += (int)row[3];
    e->nvme_reclaimed.bytes += row[4];
    if (row[1] == mine[0]) {
      total += row[2];
      nranks++;
    }
  }
  free(all);
  rc = mine[0] ? zs_nvme_space_check(root, NULL, total, mine[1], nranks) : ZS_OK;
  if (rc != ZS_OK) zs_err_wrap(rc, "zs_engine_commit");
  /* Before any rank reserves its files, so no rank's reservation is seen as another's lack. */
  return zs_engine_agree(e, rc, NULL, &say);
}
