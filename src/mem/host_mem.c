/* Host memory available to this process: the least of the kernel's MemAvailable, the room left
 * under the cgroup's limit (v2 memory.max - memory.current, or v1 limit_in_bytes - usage) and
 * the room left under RLIMIT_AS (inactive file cache does not count as used: the kernel reclaims
 * it; limits of ancestor cgroups apply too). Linux overcommits, so an allocation beyond these
 * succeeds and the first touch summons the OOM killer: the engine compares with this before
 * allocating. */
#include "mem/host_mem.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* Reads the first unsigned number of file root/path (after `key` when key != NULL, as in
   /proc/meminfo), times mult. Returns 0 when absent or not a number ("max"). */
static int read_num(const char *root, const char *path, const char *key, size_t mult, size_t *out) {
  char full[1024];
  snprintf(full, sizeof full, "%s%s", root, path);
  FILE *f = fopen(full, "r");
  if (!f) return 0;
  char line[256];
  int ok = 0;
  while (fgets(line, sizeof line, f)) {
    const char *p = line;
    if (key) {
      size_t k = strlen(key);
      if (strncmp(line, key, k) != 0) continue;
      p = line + k;
    }
    unsigned long long v = 0;
    if (sscanf(p, " %llu", &v) == 1) {
      *out = (size_t)v * mult;
      ok = 1;
    }
    break;
  }
  fclose(f);
  return ok;
}

/* The cgroup (v2 unified, or v1 memory controller) path of this process, relative to the cgroup
   mount, from root/proc/self/cgroup. */
static int cgroup_path(const char *root, int v2, char *out, size_t n) {
  char full[1024];
  snprintf(full, sizeof full, "%s/proc/self/cgroup", root);
  FILE *f = fopen(full, "r");
  if (!f) return 0;
  char line[512];
  int ok = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    const char *a = strchr(line, ':');
    const char *b = a ? strchr(a + 1, ':') : NULL;
    if (!b) continue;
    const int is_v2 = a[1] == ':';
    const int is_mem = strstr(a, "memory") != NULL && strstr(a, "memory") < b;
    if ((v2 && is_v2) || (!v2 && is_mem)) {
      snprintf(out, n, "%s", strcmp(b + 1, "/") == 0 ? "" : b + 1);
      ok = 1;
      break;
    }
  }
  fclose(f);
  return ok;
}

/* Usage that counts against a cgroup limit: current minus the inactive file cache (the kernel
   reclaims it before it would OOM, so a process that read a large data set is not refused). */
static size_t charged(const char *root, const char *dir, const char *cur_name,
                      const char *inactive_key) {
  char path[600];
  size_t cur = 0, inactive = 0;
  snprintf(path, sizeof path, "%s/%s", dir, cur_name);
  read_num(root, path, NULL, 1, &cur);
  snprintf(path, sizeof path, "%s/memory.stat", dir);
  read_num(root, path, inactive_key, 1, &inactive);
  return cur > inactive ? cur - inactive : 0;
}

/* Least room under the v2 limits of the cgroup at `cg` and every ancestor (limits set on a
   parent, such as a job's slice, bind the leaf too). Returns 0 when none is set. */
static int v2_room(const char *root, const char *cg, size_t *room, size_t *limit_out) {
  char dir[512];
  snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", cg);
  int found = 0;
  for (;;) {
    char path[600];
    size_t limit = 0;
    snprintf(path, sizeof path, "%s/memory.max", dir);
    if (read_num(root, path, NULL, 1, &limit)) {
      const size_t used = charged(root, dir, "memory.current", "inactive_file ");
      const size_t r = limit > used ? limit - used : 0;
      if (!found || r < *room) {
        *room = r;
        *limit_out = limit;
      }
      found = 1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir + strlen("/sys/fs")) break; /* reached /sys/fs/cgroup */
    *slash = '\0';
  }
  return found;
}

/* Room under the cgroup limit of this process; 0 when there is no limit (or none readable). */
static int cgroup_room(const char *root, size_t *room, size_t *limit_out) {
  char cg[384];
  if (cgroup_path(root, 1, cg, sizeof cg)) {
    if (v2_room(root, cg, room, limit_out)) return 1;
    /* Without a cgroup namespace the path may not exist under this mount: the mount's own
       files then describe this process's cgroup. */
    if (cg[0] && v2_room(root, "", room, limit_out)) return 1;
  }
  if (cgroup_path(root, 0, cg, sizeof cg)) {
    char dir[512];
    size_t limit = 0;
    for (int pass = 0; pass < 2; pass++) {
      snprintf(dir, sizeof dir, "/sys/fs/cgroup/memory%s", pass == 0 ? cg : "");
      char path[600];
      snprintf(path, sizeof path, "%s/memory.limit_in_bytes", dir);
      if (read_num(root, path, NULL, 1, &limit) && limit < ((size_t)1 << 60)) {
        const size_t used = charged(root, dir, "memory.usage_in_bytes", "total_inactive_file ");
        *room = limit > used ? limit - used : 0;
        *limit_out = limit;
        return 1;
      }
    }
  }
  return 0;
}

int zs_host_mem_available(const char *root, zs_host_mem *out) {
  if (!root) root = "";
  memset(out, 0, sizeof *out);
  size_t best = SIZE_MAX;
  int any = 0;
  size_t v = 0, lim = 0;
  if (read_num(root, "/proc/meminfo", "MemAvailable:", 1024, &v)) {
    out->mem_available = v;
    best = v;
    any = 1;
    snprintf(out->source, sizeof out->source, "MemAvailable");
  }
  if (cgroup_room(root, &v, &lim)) {
    out->cgroup_limit = lim;
    out->cgroup_room = v;
    if (v < best) {
      best = v;
      snprintf(out->source, sizeof out->source, "cgroup limit");
    }
    any = 1;
  }
  struct rlimit rl;
  if (root[0] == '\0' && getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    size_t vm = 0;
    read_num(root, "/proc/self/status", "VmSize:", 1024, &vm);
    v = (size_t)rl.rlim_cur > vm ? (size_t)rl.rlim_cur - vm : 0;
    out->as_room = v;
    if (v < best) {
      best = v;
      snprintf(out->source, sizeof out->source, "RLIMIT_AS (ulimit -v)");
    }
    any = 1;
  }
  out->available = any ? best : 0;
  return any;
}
