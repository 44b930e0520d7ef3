/* The deprecated zs_kernels_* names (include/zshard_kernels.h, "Deprecated names") still compile
 * and reach the zs_k_* calls: a program written against zshard 0.1.0's names, built on the public
 * headers and the installed libraries' link (PUBLIC_API), on the CPU device. The section goes
 * away in 1.0, and this test with it. */
#include <stdio.h>
#include <string.h>

#include "zshard_kernels.h"

int main(void) {
  int failures = 0;
  zs_kernels *k = NULL;
  float in[4] = {1, 2, 3, 4}, *buf = NULL;
  if (zs_kernels_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k) != ZS_OK) {
    fprintf(stderr, "FAIL zs_kernels_create: %s\n", zs_last_error());
    return 1;
  }
  failures += zs_kernels_watch(k, NULL) != ZS_OK;
  failures += zs_kernels_alloc(k, sizeof in, (void **)&buf) != ZS_OK;
  if (buf) {
    failures += zs_kernels_copy(k, buf, in, sizeof in) != ZS_OK;
    failures += zs_kernels_zero(k, buf + 2, 2 * sizeof(float)) != ZS_OK;
    failures += zs_kernels_sync(k) != ZS_OK;
    failures += !(buf[0] == 1 && buf[1] == 2 && buf[2] == 0 && buf[3] == 0);
    zs_kernels_free(k, buf);
  }
  /* The old name is the new function, not a copy of it. */
  failures += (void *)&zs_kernels_create != (void *)&zs_k_create;
  zs_kernels_destroy(k);
  if (failures)
    fprintf(stderr, "FAIL: %d deprecated-name checks (last error: %s)\n", failures,
            zs_last_error());
  else
    printf("test_kernels_deprecated: OK\n");
  return failures != 0;
}
