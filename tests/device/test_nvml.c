/* The GPU counters' loader (src/device/nvml.c) against a stand-in NVML with fixed answers
 * (fake_nvml.c, its path in argv[1]): the values read are the stand-in's, a device on another
 * bus and a library without NVML's entry points are ZS_ERR_UNSUPPORTED saying why, a missing
 * library too, and every successful open is shut down once. Then zs_engine_device_usage on a CPU
 * engine: ZS_ERR_UNSUPPORTED, twice, with the reason. */
#include <dlfcn.h>
#include <string.h>

#include "device/nvml.h"
#include "zs_test.h"

int main(int argc, char **argv) {
  ZS_EXPECT(argc == 2, "usage: test_nvml FAKE_NVML_LIBRARY");
  if (argc != 2) return 1;
  zs_nvml *n = NULL;
  ZS_EXPECT_STATUS(zs_nvml_open("libzshard-no-such-nvml.so.1", "0000:3b:00.0", &n),
                   ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(n == NULL && strstr(zs_last_error(), "could not be loaded"), "missing: %s",
            zs_last_error());
  ZS_EXPECT_STATUS(zs_nvml_open("libm.so.6", "0000:3b:00.0", &n), ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(strstr(zs_last_error(), "lacks the NVML entry points"), "libm: %s", zs_last_error());

  void *fake = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL); /* the same instance nvml.c loads */
  ZS_EXPECT(fake != NULL, "dlopen %s: %s", argv[1], dlerror());
  if (!fake) return 1;
  int (*inits)(void) = (int (*)(void))dlsym(fake, "fake_nvml_inits");
  int (*shutdowns)(void) = (int (*)(void))dlsym(fake, "fake_nvml_shutdowns");
  ZS_EXPECT(inits && shutdowns, "%s does not export its counters", argv[1]);
  if (!inits || !shutdowns) return 1;
  ZS_EXPECT_STATUS(zs_nvml_open(argv[1], "0000:00:01.0", &n), ZS_ERR_UNSUPPORTED);
  ZS_EXPECT(strstr(zs_last_error(), "no device on PCI bus 0000:00:01.0: Not Found"),
            "wrong bus: %s", zs_last_error());
  ZS_EXPECT(inits() == 1 && shutdowns() == 1, "wrong bus: %d inits, %d shutdowns", inits(),
            shutdowns());

  ZS_OK_OR_DIE(zs_nvml_open(argv[1], "0000:3b:00.0", &n));
  zs_nvml_usage u;
  ZS_OK_OR_DIE(zs_nvml_read(n, &u));
  ZS_EXPECT(u.total == 80000000000ull && u.used == 12345678ull, "memory %llu of %llu",
            (unsigned long long)u.used, (unsigned long long)u.total);
  ZS_EXPECT(u.util_gpu == 55 && u.util_mem == 21, "utilisation %u %u", u.util_gpu, u.util_mem);
  zs_nvml_close(n);
  ZS_EXPECT(inits() == 2 && shutdowns() == 2, "%d inits, %d shutdowns", inits(), shutdowns());
  zs_nvml_close(NULL);

  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  zs_config c;
  zs_config_default(&c);
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  zs_device_usage d;
  for (int i = 0; i < 2; i++) {
    ZS_EXPECT_STATUS(zs_engine_device_usage(e, &d), ZS_ERR_UNSUPPORTED);
    ZS_EXPECT(strstr(zs_last_error(), "CPU device has no GPU counters"), "cpu: %s",
              zs_last_error());
  }
  ZS_EXPECT_STATUS(zs_engine_device_usage(e, NULL), ZS_ERR_INVALID_ARG);
  zs_engine_destroy(e);
  zs_comm_destroy(comm);
  dlclose(fake);
  ZS_TEST_END("test_nvml");
}
