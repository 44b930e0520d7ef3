/* Page-locking host regions for a CUDA device (compiled only with CUDA). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <sys/resource.h>

#include "base/error.h"
#include "offload/host_arena_impl.h"

zs_status zs_host_pin(void *p, size_t len) {
  cudaError_t ce = cudaHostRegister(p, len, cudaHostRegisterPortable);
  if (ce == cudaSuccess) return ZS_OK;
  (void)cudaGetLastError(); /* clear the sticky-free error so later calls do not see it */
  struct rlimit rl;
  char lim[64] = "unknown";
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    if (rl.rlim_cur == RLIM_INFINITY)
      snprintf(lim, sizeof lim, "unlimited");
    else
      snprintf(lim, sizeof lim, "%llu KiB", (unsigned long long)rl.rlim_cur / 1024);
  }
  return zs_err(ZS_ERR_DEVICE,
                "cudaHostRegister of %zu bytes failed (%s); RLIMIT_MEMLOCK is %s: raise it "
                "(ulimit -l unlimited, or memlock in limits.conf / the container's settings) or "
                "create the arena with ZS_HOST_ARENA_ALLOW_UNPINNED or ZS_HOST_ARENA_NO_PIN",
                len, cudaGetErrorString(ce), lim);
}

zs_status zs_host_pin_prepare(int device) {
  /* Initialises the runtime and the device's primary context without making it current (a switch
     and a restore would create device 0's context where the thread never chose one). */
  const cudaError_t ce = cudaInitDevice(device, 0, 0);
  if (ce == cudaSuccess) return ZS_OK;
  (void)cudaGetLastError();
  return zs_err(ZS_ERR_DEVICE,
                "the CUDA context of device %d could not be created (%s): check the device "
                "ordinal and CUDA_VISIBLE_DEVICES, or create the arena with "
                "ZS_HOST_ARENA_NO_PIN",
                device, cudaGetErrorString(ce));
}

void zs_host_unpin(void *p) {
  if (cudaHostUnregister(p) != cudaSuccess) (void)cudaGetLastError();
}
