/* zs_engine_device_usage (zshard.h): the GPU's own counters through NVML (device/nvml.h), opened
 * at the first call and kept until destroy; a failure to open is remembered, so a program that
 * asks every step pays for the dlopen once. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "device/nvml.h"
#include "engine/engine_internal.h"

zs_status zs_engine_device_usage(zs_engine *e, zs_device_usage *out) {
  if (!e || !out) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_device_usage: NULL argument");
  memset(out, 0, sizeof *out);
  out->struct_version = 1;
  if (!e->nvml) {
    if (e->nvml_why[0]) return zs_err(e->nvml_rc, "%s", e->nvml_why);
    char bus[64];
    zs_status rc = zs_dev_pci_bus_id(&e->dev, bus, sizeof bus);
    if (rc == ZS_OK) rc = zs_nvml_open("libnvidia-ml.so.1", bus, &e->nvml);
    if (rc != ZS_OK) {
      snprintf(e->nvml_why, sizeof e->nvml_why, "zs_engine_device_usage: %s", zs_last_error());
      e->nvml_rc = rc;
      return zs_err(rc, "%s", e->nvml_why);
    }
  }
  zs_nvml_usage u;
  ZS_CHECK(zs_nvml_read(e->nvml, &u));
  out->used_bytes = (size_t)u.used;
  out->total_bytes = (size_t)u.total;
  out->util_gpu_pct = u.util_gpu;
  out->util_mem_pct = u.util_mem;
  return ZS_OK;
}
