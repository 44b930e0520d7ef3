/* A stand-in for the driver's libnvidia-ml.so.1 with fixed answers, for test_nvml: one device on
 * PCI bus 0000:3b:00.0 with 80 GB, 12,345,678 bytes used, 55% busy, 21% on memory. It counts
 * nvmlInit_v2 and nvmlShutdown calls, so the test can see that every init is shut down. */
#include <string.h>

static int inits, shutdowns, device = 1;

int fake_nvml_inits(void) {
  return inits;
}
int fake_nvml_shutdowns(void) {
  return shutdowns;
}

int nvmlInit_v2(void) {
  inits++;
  return 0;
}
int nvmlShutdown(void) {
  shutdowns++;
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
  if (strcmp(bus, "0000:3b:00.0") != 0) return 6; /* NVML_ERROR_NOT_FOUND */
  *dev = &device;
  return 0;
}
typedef struct { /* nvmlMemory_t's layout */
  unsigned long long total, free, used;
} fake_memory;
typedef struct { /* nvmlUtilization_t's */
  unsigned int gpu, memory;
} fake_util;
int nvmlDeviceGetMemoryInfo(void *dev, fake_memory *m) {
  if (dev != &device) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  m->total = 80000000000ull;
  m->free = 80000000000ull - 12345678ull;
  m->used = 12345678ull;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void *dev, fake_util *u) {
  if (dev != &device) return 2;
  u->gpu = 55;
  u->memory = 21;
  return 0;
}
const char *nvmlErrorString(int r) {
  return r == 6 ? "Not Found" : r == 2 ? "Invalid Argument" : "Unknown Error";
}
