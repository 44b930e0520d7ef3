/* Choosing the NUMA node for offload memory and threads (see numa_place.h). */
#include "offload/numa_place.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"

zs_status zs_topo_open(hwloc_topology_t *out) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0)
    return zs_err(ZS_ERR_UNSUPPORTED, "hwloc_topology_init failed (%s)", strerror(errno));
  if (hwloc_topology_load(t) != 0) {
    int e = errno;
    hwloc_topology_destroy(t);
    return zs_err(ZS_ERR_UNSUPPORTED, "hwloc could not read the machine topology (%s)",
                  strerror(e));
  }
  *out = t;
  return ZS_OK;
}

void zs_numa_place_free(zs_numa_place *p) {
  if (!p) return;
  if (p->nodeset) hwloc_bitmap_free(p->nodeset);
  if (p->cpuset) hwloc_bitmap_free(p->cpuset);
  p->nodeset = p->cpuset = NULL;
}

/* Fills p for the NUMA object `obj` (its cpuset may be empty for memory-only nodes). */
static zs_status zs_place_fill(hwloc_topology_t topo, hwloc_obj_t obj, zs_numa_place *p) {
  p->node = (int)obj->os_index;
  p->nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  p->nodeset = hwloc_bitmap_alloc();
  p->cpuset = hwloc_bitmap_dup(obj->cpuset);
  if (!p->nodeset || !p->cpuset) {
    zs_numa_place_free(p);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "hwloc bitmap allocation failed");
  }
  hwloc_bitmap_only(p->nodeset, obj->os_index);
  return ZS_OK;
}

/* The NUMA node (with CPUs) holding the CPU the calling thread last ran on; NULL if unknown. */
static hwloc_obj_t zs_caller_node(hwloc_topology_t topo) {
  hwloc_cpuset_t cpu = hwloc_bitmap_alloc();
  hwloc_obj_t found = NULL;
  if (cpu && hwloc_get_last_cpu_location(topo, cpu, HWLOC_CPUBIND_THREAD) == 0) {
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) != NULL)
      if (hwloc_bitmap_intersects(n->cpuset, cpu)) {
        found = n;
        break;
      }
  }
  if (!found) { /* unknown location: the first node that has CPUs */
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) != NULL)
      if (!hwloc_bitmap_iszero(n->cpuset)) {
        found = n;
        break;
      }
  }
  hwloc_bitmap_free(cpu);
  return found;
}

zs_status zs_numa_place_node(hwloc_topology_t topo, int node, zs_numa_place *out) {
  memset(out, 0, sizeof *out);
  hwloc_obj_t obj;
  if (node < 0) {
    obj = zs_caller_node(topo);
    if (!obj) return zs_err(ZS_ERR_UNSUPPORTED, "hwloc reports no NUMA node with CPUs");
    snprintf(out->how, sizeof out->how, "calling thread's node");
  } else {
    obj = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)node);
    if (!obj) {
      int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
      return zs_err(ZS_ERR_INVALID_ARG,
                    "NUMA node %d does not exist (this machine has %d: see "
                    "`lstopo` or /sys/devices/system/node)",
                    node, n);
    }
    snprintf(out->how, sizeof out->how, "node %d as asked", node);
  }
  return zs_place_fill(topo, obj, out);
}

/* Node for an explicit ZS_OFFLOAD_NUMA_NODE; 1 if the variable is set (result in *rc). */
static int zs_place_from_env(hwloc_topology_t topo, zs_numa_place *out, zs_status *rc) {
  const char *s = zs_env("ZS_OFFLOAD_NUMA_NODE");
  if (!s || !*s) return 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < 0 || v > 65535) {
    *rc = zs_err(ZS_ERR_INVALID_ARG, "ZS_OFFLOAD_NUMA_NODE=\"%s\" is not a node index (0, 1, ...)",
                 s);
    return 1;
  }
  *rc = zs_numa_place_node(topo, (int)v, out);
  if (*rc == ZS_OK) snprintf(out->how, sizeof out->how, "node %ld from ZS_OFFLOAD_NUMA_NODE", v);
  return 1;
}

zs_status zs_numa_place_for_device(hwloc_topology_t topo, int cuda_device, zs_numa_place *out) {
  zs_status rc;
  if (zs_place_from_env(topo, out, &rc)) return rc;
  char why[120];
  if (cuda_device < 0) {
    snprintf(why, sizeof why, "CPU device");
  } else {
#ifdef ZS_HAVE_CUDA
    hwloc_cpuset_t near = hwloc_bitmap_alloc();
    if (!near) return zs_err(ZS_ERR_OUT_OF_MEMORY, "hwloc bitmap allocation failed");
    rc = zs_numa_cuda_cpuset(topo, cuda_device, near);
    if (rc != ZS_OK) {
      hwloc_bitmap_free(near);
      return rc;
    }
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
    int nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (!hwloc_bitmap_iszero(near) && (nnodes == 1 || !hwloc_bitmap_isincluded(all, near))) {
      /* The first node with CPUs in the GPU's locality set. */
      hwloc_obj_t n = NULL;
      while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) != NULL)
        if (hwloc_bitmap_intersects(n->cpuset, near)) break;
      hwloc_bitmap_free(near);
      if (n) {
        memset(out, 0, sizeof *out);
        rc = zs_place_fill(topo, n, out);
        if (rc == ZS_OK)
          snprintf(out->how, sizeof out->how, "nearest GPU %d (hwloc PCI locality)", cuda_device);
        return rc;
      }
    } else {
      hwloc_bitmap_free(near);
    }
    snprintf(why, sizeof why, "GPU %d locality unknown (hwloc reports the whole machine)",
             cuda_device);
#else
    snprintf(why, sizeof why, "GPU %d locality unknown (built without CUDA)", cuda_device);
#endif
  }
  rc = zs_numa_place_node(topo, -1, out);
  if (rc == ZS_OK) {
    char node_how[sizeof out->how];
    snprintf(node_how, sizeof node_how, "%s", out->how);
    snprintf(out->how, sizeof out->how, "%.110s: %.80s", why, node_how);
  }
  return rc;
}
