/* The GPU's own counters through NVML (the library nvidia-smi reads), loaded at run time with
 * dlopen so that builds and CPU runs need no driver: the whole device's used and total memory
 * (every process's, not only this engine's) and its utilisation. */
#ifndef ZS_DEVICE_NVML_H
#define ZS_DEVICE_NVML_H

#include <stdint.h>

#include "zshard.h"

typedef struct zs_nvml zs_nvml;

typedef struct {
  uint64_t used, total; /* bytes of device memory, the whole device's */
  unsigned util_gpu;    /* percent of the last sample period in which a kernel ran (0 where
                           NVML has no utilisation, as on a MIG slice) */
  unsigned util_mem;    /* percent of it in which device memory was read or written */
} zs_nvml_usage;

/* Loads the NVML library `lib` (dlopen: "libnvidia-ml.so.1" for the driver's), initialises it and
   finds the device on PCI bus pci_bus_id ("0000:3b:00.0", cudaDeviceGetPCIBusId's). On failure
   *out is NULL and ZS_ERR_UNSUPPORTED says why (no such library, no device there, NVML's error). */
zs_status zs_nvml_open(const char *lib, const char *pci_bus_id, zs_nvml **out);
/* Reads the counters now. ZS_ERR_DEVICE with NVML's message when it refuses. */
zs_status zs_nvml_read(zs_nvml *n, zs_nvml_usage *out);
/* Shuts NVML down (it counts its users) and unloads it; NULL is a no-op. */
void zs_nvml_close(zs_nvml *n);

#endif
