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
int nvmlDeviceGetMemoryInfo(void *dev, unsigned long long *m) {
  if (dev != &device) return 2;        /* NVML_ERROR_INVALID_ARGUMENT */
  m[0] = 80000000000ull;               /* total */
  m[1] = 80000000000ull - 12345678ull; /* free */
  m[2] = 12345678ull;                  /* used */
  return 0;
}
int nvmlDeviceGetUtilizationRates(void *dev, unsigned int *u) {
  if (dev != &device) return 2;
  u[0] = 55;
  u[1] = 21;
  return 0;
}
const char *nvmlErrorString(int r) {
  return r == 6 ? "Not Found" : r == 2 ? "Invalid Argument" : "Unknown Error";
}
