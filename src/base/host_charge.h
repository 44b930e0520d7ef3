/* What the pinned host tier charges for one allocation. The host arena maps every allocation as
 * a region of its own, in whole pages (one page for 0 bytes), so an allocation of n bytes holds n
 * rounded up to the page. The arena reserves, the ledger books and the planner counts this same
 * figure per array, so that the three agree to the byte at every size. */
#ifndef ZS_BASE_HOST_CHARGE_H
#define ZS_BASE_HOST_CHARGE_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* n rounded up to the page (one page for 0; SIZE_MAX when that overflows). */
static inline size_t zs_host_charge(size_t n) {
  const long ps = sysconf(_SC_PAGESIZE);
  const size_t page = ps > 0 ? (size_t)ps : 4096;
  if (n == 0) return page;
  if (n > SIZE_MAX - (page - 1)) return SIZE_MAX;
  return (n + page - 1) / page * page;
}

#endif
