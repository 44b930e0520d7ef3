/* --freeze SPEC (see freeze.h). */
#include "freeze.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int gpt2_freeze_spec(const char *spec, int layers, const char *last_name, int *mask) {
  const int n = layers + 2;
  for (int i = 0; i < n; i++)
    mask[i] = 0;
  for (const char *p = spec; p && *p;) {
    const char *end = strchr(p, ',');
    const size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[32];
    if (len == 0 || len >= sizeof item) return gpt2_fail("--freeze: bad item in '%s'", spec);
    memcpy(item, p, len);
    item[len] = 0;
    int lo, hi;
    char *e1, *e2;
    if (!strcmp(item, "embedding")) {
      lo = hi = 0;
    } else if (!strcmp(item, "blocks")) {
      lo = 1;
      hi = layers;
    } else if (!strcmp(item, last_name)) {
      lo = hi = layers + 1;
    } else {
      lo = hi = (int)strtol(item, &e1, 10);
      if (e1 == item) return gpt2_fail("--freeze: '%s' is not a unit, index or range", item);
      if (*e1 == '-') {
        hi = (int)strtol(e1 + 1, &e2, 10);
        if (e2 == e1 + 1 || *e2) return gpt2_fail("--freeze: bad range '%s'", item);
      } else if (*e1) {
        return gpt2_fail("--freeze: '%s' is not a unit, index or range", item);
      }
    }
    if (lo < 0 || hi >= n || lo > hi)
      return gpt2_fail("--freeze: '%s' is outside the units 0..%d", item, n - 1);
    for (int i = lo; i <= hi; i++)
      mask[i] = 1;
    p = end ? end + 1 : p + len;
  }
  return 0;
}
