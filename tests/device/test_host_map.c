/* The CPU device's memory (src/device/cpu/host_map.h, through zs_dev_alloc/zs_dev_free): every
 * buffer 256-byte aligned and writable to its last byte; a large one takes exactly its bytes
 * rounded to the page (plus the 256-byte header) of address space, measured independently as
 * the kernel's VmSize of this process, and gives all of it back when freed. (jemalloc's size
 * classes would take up to 25% more, and its retained mappings would never give it back.) Under
 * AddressSanitizer, where zs_dev_alloc is posix_memalign and VmSize is the shadow's, only the
 * alignment and the writes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "device/device.h"
#include "zs_test.h"

#if !defined(__SANITIZE_ADDRESS__)
/* This process's address space in bytes (VmSize of /proc/self/status), 0 if unreadable. */
static size_t vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
  fclose(f);
  return kb * 1024;
}
#endif

int main(void) {
  zs_dev d;
  ZS_OK_OR_DIE(zs_dev_open(&d, ZS_DEVICE_CPU, -1));
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  /* Small and large sizes, odd and just past jemalloc's size classes (1 MiB + 1: its class is
     1.25 MiB). */
  const size_t sizes[] = {1, 255, 4096, 65535, 65536, 300001, (1u << 20) + 1, 5u << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    unsigned char *p = NULL;
    ZS_OK_OR_DIE(zs_dev_alloc(&d, sizes[k], (void **)&p, NULL));
    ZS_EXPECT(((uintptr_t)p % 256) == 0, "%zu bytes at %p: not 256-byte aligned", sizes[k],
              (void *)p);
    memset(p, 0xa5, sizes[k]);
    ZS_EXPECT(p[sizes[k] - 1] == 0xa5, "%zu bytes: the last byte did not hold", sizes[k]);
    zs_dev_free(&d, p, NULL);
  }
#if defined(__SANITIZE_ADDRESS__)
  printf("AddressSanitizer build: zs_dev_alloc is posix_memalign, VmSize the shadow's: the "
         "address-space part is not checked\n");
  (void)page;
#else
  /* 40 large buffers of 1 MiB + 1 byte: the address space grows by their pages exactly (and by
     nothing else: this thread allocates nothing more meanwhile), and shrinks back at the frees. */
  enum { N = 40 };
  const size_t bytes = ((size_t)1 << 20) + 1;
  const size_t each = (bytes + 256 + page - 1) / page * page;
  void *bufs[N];
  const size_t before = vm_size();
  ZS_EXPECT(before > 0, "cannot read VmSize from /proc/self/status");
  for (int i = 0; i < N; i++) {
    ZS_OK_OR_DIE(zs_dev_alloc(&d, bytes, &bufs[i], NULL));
    memset(bufs[i], i, bytes);
  }
  const size_t held = vm_size();
  ZS_EXPECT(held - before == (size_t)N * each,
            "%d buffers of %zu bytes grew the address space by %zu bytes, want %zu (%zu each)", N,
            bytes, held - before, (size_t)N * each, each);
  for (int i = 0; i < N; i++)
    ZS_EXPECT(((unsigned char *)bufs[i])[bytes - 1] == (unsigned char)i,
              "buffer %d lost its last byte", i);
  for (int i = 0; i < N; i++)
    zs_dev_free(&d, bufs[i], NULL);
  const size_t after = vm_size();
  ZS_EXPECT(after == before, "after the frees the address space is %zu bytes, was %zu before",
            after, before);
#endif
  zs_dev_close(&d);
  ZS_TEST_END("device_host_map");
}
