/* Host memory available to the process (src/mem/host_mem.c) on made-up /proc and /sys trees:
 * MemAvailable alone; a cgroup v2 limit with page cache that does not count; a tighter limit on
 * an ancestor; cgroup v1; a v2 path that does not exist under the mount (no cgroup namespace);
 * nothing readable. Expected values are computed here by hand, not by the code under test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem/host_mem.h"
#include "zs_test.h"

static char root[256];

static void put(const char *path, const char *text) {
  char full[512], dir[512];
  snprintf(full, sizeof full, "%s%s", root, path);
  snprintf(dir, sizeof dir, "%s", full);
  for (char *p = dir + strlen(root) + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(dir, 0755);
      *p = '/';
    }
  FILE *f = fopen(full, "w");
  if (!f) {
    perror(full);
    exit(1);
  }
  fputs(text, f);
  fclose(f);
}

static void fresh(const char *name) {
  snprintf(root, sizeof root, "/tmp/zs_host_mem_%d_%s", (int)getpid(), name);
  mkdir(root, 0755);
}

int main(void) {
  zs_host_mem m;
  const size_t G = (size_t)1 << 30;

  fresh("plain");
  put("/proc/meminfo", "MemTotal: 16000000 kB\nMemFree: 1000 kB\nMemAvailable: 8000000 kB\n");
  put("/proc/self/cgroup", "0::/\n");
  ZS_EXPECT(zs_host_mem_available(root, &m) == 1, "readable");
  ZS_EXPECT(m.available == (size_t)8000000 * 1024 && m.cgroup_limit == 0,
            "MemAvailable only: %zu (limit %zu)", m.available, m.cgroup_limit);

  fresh("v2");
  put("/proc/meminfo", "MemAvailable: 8000000 kB\n");
  put("/proc/self/cgroup", "0::/job/step\n");
  put("/sys/fs/cgroup/job/step/memory.max", "4294967296\n");     /* 4 GiB */
  put("/sys/fs/cgroup/job/step/memory.current", "3221225472\n"); /* 3 GiB, 2 GiB of it cache */
  put("/sys/fs/cgroup/job/step/memory.stat", "anon 1073741824\ninactive_file 2147483648\n");
  put("/sys/fs/cgroup/job/memory.max", "max\n");
  ZS_EXPECT(zs_host_mem_available(root, &m) == 1, "readable");
  ZS_EXPECT(m.cgroup_room == 3 * G && m.available == 3 * G,
            "v2: 4 GiB limit, 1 GiB charged: room %zu available %zu", m.cgroup_room, m.available);

  put("/sys/fs/cgroup/job/memory.max", "2147483648\n"); /* the job's 2 GiB binds the step */
  put("/sys/fs/cgroup/job/memory.current", "1073741824\n");
  put("/sys/fs/cgroup/job/memory.stat", "inactive_file 0\n");
  ZS_EXPECT(zs_host_mem_available(root, &m) == 1 && m.available == G,
            "v2 ancestor: 2 GiB limit, 1 GiB used: %zu", m.available);

  fresh("v1");
  put("/proc/meminfo", "MemAvailable: 8000000 kB\n");
  put("/proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n");
  put("/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "2147483648\n");
  put("/sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", "1610612736\n");
  put("/sys/fs/cgroup/memory/docker/abc/memory.stat", "cache 1\ntotal_inactive_file 536870912\n");
  ZS_EXPECT(zs_host_mem_available(root, &m) == 1 && m.available == G,
            "v1: 2 GiB limit, 1.5 GiB usage with 0.5 GiB inactive cache: %zu", m.available);

  fresh("nons");
  put("/proc/meminfo", "MemAvailable: 1000 kB\n");
  put("/proc/self/cgroup", "0::/not/mounted/here\n");
  put("/sys/fs/cgroup/memory.max", "8589934592\n");
  put("/sys/fs/cgroup/memory.current", "0\n");
  ZS_EXPECT(zs_host_mem_available(root, &m) == 1 && m.cgroup_limit == 8 * G &&
                m.available == (size_t)1000 * 1024,
            "no namespace: the mount's own limit is found (%zu), MemAvailable is less (%zu)",
            m.cgroup_limit, m.available);

  fresh("none");
  ZS_EXPECT(zs_host_mem_available(root, &m) == 0 && m.available == 0, "nothing readable");

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf /tmp/zs_host_mem_%d_*", (int)getpid());
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove the test trees\n");
  printf("test_host_mem: %d failure(s)\n", zs_test_failures);
  ZS_TEST_END("test_host_mem");
}
