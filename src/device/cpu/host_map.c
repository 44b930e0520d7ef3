/* The CPU device's memory (host_map.h). Every buffer has a 256-byte header in front (so the
 * caller's pointer keeps the 256-byte alignment the device promises) that says where it came
 * from: a mapping of its own (len = the mapping's length, header included) or jemalloc (len 0). */
#include "device/cpu/host_map.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include "base/huge_pages.h"

#define ZS_CPU_HDR ((size_t)256) /* the header's bytes: the device's alignment */

typedef struct {
  size_t len; /* of the mapping (header included); 0: a jemalloc buffer */
} zs_cpu_hdr;

void *zs_cpu_alloc(size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (bytes > SIZE_MAX - ZS_CPU_HDR - page) return NULL;
  void *m;
  size_t len = 0;
  if (bytes < ZS_CPU_MAP_MIN) {
    m = mallocx(bytes + ZS_CPU_HDR, MALLOCX_ALIGN(ZS_CPU_HDR));
    if (!m) return NULL;
  } else {
    len = (bytes + ZS_CPU_HDR + page - 1) / page * page;
    m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    zs_advise_huge_pages(m, len);
  }
  ((zs_cpu_hdr *)m)->len = len;
  return (char *)m + ZS_CPU_HDR;
}

void zs_cpu_free(void *p) {
  if (!p) return;
  char *m = (char *)p - ZS_CPU_HDR;
  const size_t len = ((const zs_cpu_hdr *)m)->len;
  if (len)
    munmap(m, len);
  else
    dallocx(m, 0);
}
