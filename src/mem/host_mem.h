/* Host memory available to this process (for the engine's commit-time fit check). */
#ifndef ZS_MEM_HOST_MEM_H
#define ZS_MEM_HOST_MEM_H

#include <stddef.h>

typedef struct {
  size_t available;     /* the least of the limits below that are known */
  size_t mem_available; /* /proc/meminfo MemAvailable (0 = unknown) */
  size_t cgroup_limit;  /* the cgroup's memory limit (0 = none) */
  size_t cgroup_room;   /* that limit minus the cgroup's current usage */
  size_t as_room;       /* RLIMIT_AS minus VmSize (0 = no limit) */
  char source[32];      /* which limit is the least ("MemAvailable", "cgroup limit", ...) */
} zs_host_mem;

/* Fills *out from the files under `root` ("" or NULL = the real /proc and /sys; tests pass a
   folder holding proc/meminfo, proc/self/cgroup and sys/fs/cgroup/...). RLIMIT_AS is consulted
   only for the real root. Returns 0 when nothing could be read (available unknown). */
int zs_host_mem_available(const char *root, zs_host_mem *out);

#endif
