/* NVML through dlopen (nvml.h). Only the few entry points read here are declared, with the
 * layouts of NVML's public header (nvml.h of the CUDA toolkit, API version 2 names). */
#include "device/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

typedef int nvml_ret; /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef void *nvml_dev;
typedef struct {
  unsigned long long total, free, used;
} nvml_memory; /* nvmlMemory_t */
typedef struct {
  unsigned int gpu, memory;
} nvml_util; /* nvmlUtilization_t */

struct zs_nvml {
  void *lib;
  nvml_dev dev;
  nvml_ret (*shutdown)(void);
  nvml_ret (*mem)(nvml_dev, nvml_memory *);
  nvml_ret (*util)(nvml_dev, nvml_util *);
  const char *(*str)(nvml_ret);
};

/* NVML's words for r, or its number when the library has no nvmlErrorString. */
static const char *why(const zs_nvml *n, nvml_ret r, char *buf, size_t len) {
  if (n->str) {
    const char *s = n->str(r);
    if (s) return s;
  }
  snprintf(buf, len, "NVML error %d", r);
  return buf;
}

void zs_nvml_close(zs_nvml *n) {
  if (!n) return;
  if (n->shutdown) n->shutdown();
  if (n->lib) dlclose(n->lib);
  free(n);
}

zs_status zs_nvml_open(const char *lib, const char *pci_bus_id, zs_nvml **out) {
  *out = NULL;
  zs_nvml *n = calloc(1, sizeof *n);
  if (!n) return zs_err(ZS_ERR_OUT_OF_MEMORY, "no memory for the NVML handle");
  n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!n->lib) {
    const char *e = dlerror();
    zs_status rc = zs_err(ZS_ERR_UNSUPPORTED,
                          "no GPU counters: NVML (%s) could not be loaded (%s); it comes with "
                          "the NVIDIA driver",
                          lib, e ? e : "unknown reason");
    free(n);
    return rc;
  }
  nvml_ret (*init)(void) = (nvml_ret(*)(void))dlsym(n->lib, "nvmlInit_v2");
  nvml_ret (*by_bus)(const char *, nvml_dev *) =
      (nvml_ret(*)(const char *, nvml_dev *))dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
  n->shutdown = (nvml_ret(*)(void))dlsym(n->lib, "nvmlShutdown");
  n->mem = (nvml_ret(*)(nvml_dev, nvml_memory *))dlsym(n->lib, "nvmlDeviceGetMemoryInfo");
  n->util = (nvml_ret(*)(nvml_dev, nvml_util *))dlsym(n->lib, "nvmlDeviceGetUtilizationRates");
  n->str = (const char *(*)(nvml_ret))dlsym(n->lib, "nvmlErrorString");
  if (!init || !by_bus || !n->shutdown || !n->mem || !n->util) {
    n->shutdown = NULL; /* never initialised */
    zs_nvml_close(n);
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "no GPU counters: %s lacks the NVML entry points zshard "
                  "reads (nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2, "
                  "nvmlDeviceGetMemoryInfo, nvmlDeviceGetUtilizationRates)",
                  lib);
  }
  char buf[32];
  nvml_ret r = init();
  if (r != 0) {
    zs_status rc = zs_err(ZS_ERR_UNSUPPORTED, "no GPU counters: nvmlInit failed: %s",
                          why(n, r, buf, sizeof buf));
    n->shutdown = NULL;
    zs_nvml_close(n);
    return rc;
  }
  r = by_bus(pci_bus_id, &n->dev);
  if (r != 0) {
    zs_status rc =
        zs_err(ZS_ERR_UNSUPPORTED, "no GPU counters: NVML has no device on PCI bus %s: %s",
               pci_bus_id, why(n, r, buf, sizeof buf));
    zs_nvml_close(n);
    return rc;
  }
  *out = n;
  return ZS_OK;
}

zs_status zs_nvml_read(zs_nvml *n, zs_nvml_usage *out) {
  memset(out, 0, sizeof *out);
  nvml_memory m;
  nvml_util u;
  char buf[32];
  nvml_ret r = n->mem(n->dev, &m);
  if (r != 0)
    return zs_err(ZS_ERR_DEVICE, "nvmlDeviceGetMemoryInfo: %s", why(n, r, buf, sizeof buf));
  r = n->util(n->dev, &u);
  if (r == 3) /* NVML_ERROR_NOT_SUPPORTED (a MIG slice): the memory figures still stand */
    u.gpu = u.memory = 0;
  else if (r != 0)
    return zs_err(ZS_ERR_DEVICE, "nvmlDeviceGetUtilizationRates: %s", why(n, r, buf, sizeof buf));
  out->used = m.used;
  out->total = m.total;
  out->util_gpu = u.gpu;
  out->util_mem = u.memory;
  return ZS_OK;
}
