/* Host memory available to this process: the least of the kernel's MemAvailable, the room left
 * under the cgroup's limit (v2 memory.max - memory.current, or v1 limit_in_bytes - usage) and
 * the room left under RLIMIT_AS. Linux overcommits, so an allocation beyond these succeeds and
 * the first touch summons the OOM killer: the engine compares with this before allocating. */
#include "host_mem.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* Reads the first unsigned number of file root/path (after `key` when key != NULL, as in
   /proc/meminfo), times mult. Returns 0 when absent or not a number ("max"). */
static int read_num(const char *root, const char *path, const char *key, size_t mult, size_t *out) {
  char full[512];
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
  char full[512];
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

/* Room under the cgroup limit of this process; 0 when there is no limit (or none readable). */
static int cgroup_room(const char *root, size_t *room, size_t *limit_out) {
  char cg[384], path[512];
  size_t limit = 0, cur = 0;
  if (cgroup_path(root, 1, cg, sizeof cg)) {
    snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", cg);
    if (read_num(root, path, NULL, 1, &limit)) {
      snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", cg);
      read_num(root, path, NULL, 1, &cur);
      goto found;
    }
  }
  if (cgroup_path(root, 0, cg, sizeof cg)) {
    snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", cg);
    if (read_num(root, path, NULL, 1, &limit) && limit < ((size_t)1 << 60)) {
      snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", cg);
      read_num(root, path, NULL, 1, &cur);
      goto found;
    }
  }
  return 0;
found:
  *room = limit > cur ? limit - cur : 0;
  *limit_out = limit;
  return 1;
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
