/* The memory owner (src/mem/mem.c) on the CPU device: allocations are booked in the ledger by
 * category; a free while broken (after zs_mem_break) is deferred, and so is a free after a
 * failure a collective may still write through (zs_mem_free_after), whether broken or not; the
 * deferred buffers stay booked and stay valid until zs_mem_drain performs every free, after which
 * frees are immediate again. The ledger is checked exactly after every call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "mem/mem.h"
#include "zs_test.h"

/* The ledger of m against the bytes wanted per category (and their total). */
static void expect_ledger(const zs_mem *m, const char *when, size_t params, size_t buffers,
                          size_t host) {
  const size_t want[ZS_MEM_NCAT] = {params, 0, 0, buffers, host};
  size_t total = 0;
  for (int c = 0; c < ZS_MEM_NCAT; c++) {
    ZS_EXPECT(m->ledger.cat[c].cur == want[c], "%s: category %d holds %zu bytes, want %zu", when, c,
              m->ledger.cat[c].cur, want[c]);
    total += want[c];
  }
  ZS_EXPECT(m->ledger.total.cur == total, "%s: total %zu, want %zu", when, m->ledger.total.cur,
            total);
}

/* A host tier on malloc that counts the allocations it has out. */
static int host_out;
static zs_status host_alloc(void *impl, size_t bytes, void **p) {
  (void)impl;
  *p = malloc(bytes);
  if (!*p) return zs_err(ZS_ERR_OUT_OF_MEMORY, "test host tier: out of memory");
  host_out++;
  return ZS_OK;
}
static void host_free(void *impl, void *p) {
  (void)impl;
  free(p);
  host_out--;
}

int main(void) {
  zs_dev dev;
  ZS_OK_OR_DIE(zs_dev_open(&dev, ZS_DEVICE_CPU, -1));
  zs_mem m;
  zs_mem_init(&m, &dev);
  void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *h = NULL;
  ZS_EXPECT_STATUS(zs_mem_alloc_host(&m, 16, &h), ZS_ERR_STATE); /* no host tier yet */
  m.host = (zs_mem_host){host_alloc, host_free, NULL, NULL};     /* booked as asked */
  ZS_OK_OR_DIE(zs_mem_alloc(&m, ZS_MEM_BUFFERS, 100, &a, NULL));
  ZS_OK_OR_DIE(zs_mem_alloc(&m, ZS_MEM_PARAMS, 64, &b, NULL));
  ZS_OK_OR_DIE(zs_mem_alloc(&m, ZS_MEM_BUFFERS, 40, &c, NULL));
  ZS_OK_OR_DIE(zs_mem_alloc(&m, ZS_MEM_BUFFERS, 8, &d, NULL));
  ZS_OK_OR_DIE(zs_mem_alloc_host(&m, 256, &h));
  expect_ledger(&m, "after the allocations", 64, 148, 256);

  /* Healthy: a free is a free, and a free after a failure no collective writes after too. */
  zs_mem_free(&m, ZS_MEM_BUFFERS, a, 100, NULL);
  expect_ledger(&m, "a freed", 64, 48, 256);
  zs_mem_free_after(&m, ZS_ERR_INVALID_ARG, ZS_MEM_BUFFERS, d, 8, NULL);
  expect_ledger(&m, "d freed after an invalid argument", 64, 40, 256);
  ZS_EXPECT(m.ndeferred == 0, "nothing deferred yet (%d)", m.ndeferred);

  /* A free after a collective's failure is deferred before anything is marked broken. */
  zs_mem_free_after(&m, ZS_ERR_TIMEOUT, ZS_MEM_BUFFERS, c, 40, NULL);
  expect_ledger(&m, "c deferred after a timeout", 64, 40, 256);
  ZS_EXPECT(m.ndeferred == 1, "c deferred (%d)", m.ndeferred);
  memset(c, 1, 40); /* still ours: an abandoned collective may write here (ASan would tell) */

  /* Broken: every free waits, device and host alike, and the buffers stay valid and booked. */
  zs_mem_break(&m);
  zs_mem_free(&m, ZS_MEM_PARAMS, b, 64, NULL);
  zs_mem_free_host(&m, h, 256);
  zs_mem_free(&m, ZS_MEM_BUFFERS, NULL, 0, NULL); /* NULL stays a no-op */
  expect_ledger(&m, "b and h deferred while broken", 64, 40, 256);
  ZS_EXPECT(m.ndeferred == 3, "three deferred frees (%d)", m.ndeferred);
  memset(b, 2, 64);
  memset(h, 3, 256);
  ZS_EXPECT(host_out == 1, "the host tier still lends h (%d)", host_out);

  /* The drain performs them all and ends the deferring. */
  zs_mem_drain(&m);
  expect_ledger(&m, "after the drain", 0, 0, 0);
  ZS_EXPECT(m.ndeferred == 0 && !m.broken, "drained (%d deferred, broken %d)", m.ndeferred,
            m.broken);
  ZS_EXPECT(host_out == 0, "the host tier got its memory back (%d outstanding)", host_out);
  ZS_OK_OR_DIE(zs_mem_alloc(&m, ZS_MEM_BUFFERS, 32, &a, NULL));
  zs_mem_free(&m, ZS_MEM_BUFFERS, a, 32, NULL);
  expect_ledger(&m, "a free after the drain", 0, 0, 0);
  ZS_EXPECT(m.ledger.cat[ZS_MEM_BUFFERS].peak == 148 && m.ledger.cat[ZS_MEM_PARAMS].peak == 64 &&
                m.ledger.cat[ZS_MEM_HOST_PINNED].peak == 256,
            "peaks %zu %zu %zu", m.ledger.cat[ZS_MEM_BUFFERS].peak,
            m.ledger.cat[ZS_MEM_PARAMS].peak, m.ledger.cat[ZS_MEM_HOST_PINNED].peak);
  zs_dev_close(&dev);
  printf("test_mem: ok\n");
  ZS_TEST_END("test_mem");
}
