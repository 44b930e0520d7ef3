/* The CPUs nearest a CUDA device, from hwloc's CUDA runtime helper (compiled only with CUDA). */
#include "offload/numa_place.h"

#include <cuda_runtime_api.h>
#include <hwloc/cudart.h>

#include "base/error.h"

zs_status zs_numa_cuda_cpuset(hwloc_topology_t topo, int dev, hwloc_cpuset_t set) {
  int count = 0;
  cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess)
    return zs_err(ZS_ERR_DEVICE, "cudaGetDeviceCount failed (%s): is a GPU visible?",
                  cudaGetErrorString(ce));
  if (dev >= count)
    return zs_err(ZS_ERR_INVALID_ARG, "CUDA device %d does not exist (%d visible)", dev, count);
  if (hwloc_cudart_get_device_cpuset(topo, dev, set) != 0)
    return zs_err(ZS_ERR_DEVICE, "hwloc could not read the CPU locality of CUDA device %d", dev);
  return ZS_OK;
}
