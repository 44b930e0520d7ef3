/* Where host memory and host threads for offload go: the NUMA node nearest a GPU (or the calling
 * thread's node), found with hwloc. Shared by host_arena.c and worker_pool.c. */
#ifndef ZS_OFFLOAD_NUMA_PLACE_H
#define ZS_OFFLOAD_NUMA_PLACE_H

#include <hwloc.h>

#include "zshard.h"

/* A chosen node. The bitmaps are owned by the struct (zs_numa_place_free). */
typedef struct {
  int node;                /* OS index of the NUMA node */
  int nnodes;              /* NUMA nodes in the machine */
  hwloc_nodeset_t nodeset; /* just `node` */
  hwloc_cpuset_t cpuset;   /* the node's PUs (those this process may use) */
  char how[200];           /* why this node: "nearest GPU 0 (hwloc)", "calling thread's node ..." */
} zs_numa_place;

/* Loads the machine topology (hwloc_topology_init + load), errors as ZS_ERR_UNSUPPORTED. */
zs_status zs_topo_open(hwloc_topology_t *out);

/* Node nearest CUDA device `cuda_device`: its PCI locality cpuset from hwloc's CUDA runtime
   helper (CUDA builds). When that is the whole machine (VMs often hide locality), cuda_device is
   -1, or the build has no CUDA, the calling thread's node is used and `how` says so. The
   environment variable ZS_OFFLOAD_NUMA_NODE=<os index> overrides the choice. */
zs_status zs_numa_place_for_device(hwloc_topology_t topo, int cuda_device, zs_numa_place *out);
/* Node with OS index `node`, or the calling thread's node for node < 0. */
zs_status zs_numa_place_node(hwloc_topology_t topo, int node, zs_numa_place *out);
/* Frees the bitmaps (safe on a zeroed or half-filled struct). */
void zs_numa_place_free(zs_numa_place *p);

#ifdef ZS_HAVE_CUDA
/* numa_place_cuda.c: the CPUs near CUDA device `dev` into `set` (hwloc_cudart_get_device_cpuset).
 */
zs_status zs_numa_cuda_cpuset(hwloc_topology_t topo, int dev, hwloc_cpuset_t set);
#endif

#endif
