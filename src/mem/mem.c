/* The engine's memory owner (mem.h). */
#include "mem/mem.h"

#include <stdlib.h>

#include "base/error.h"

void zs_mem_init(zs_mem *m, zs_dev *dev) {
  *m = (zs_mem){0};
  m->dev = dev;
}

zs_status zs_mem_alloc(zs_mem *m, zs_mem_cat c, size_t bytes, void **p, void *stream) {
  ZS_CHECK(zs_dev_alloc(m->dev, bytes, p, stream));
  zs_ledger_add(&m->ledger, c, bytes);
  return ZS_OK;
}

/* What the host tier holds for an allocation of `bytes`. */
static size_t host_charge(const zs_mem *m, size_t bytes) {
  return m->host.charge ? m->host.charge(bytes) : bytes;
}

zs_status zs_mem_alloc_host(zs_mem *m, size_t bytes, void **p) {
  if (!m->host.alloc) return zs_err(ZS_ERR_STATE, "offloaded state: no host memory tier attached");
  zs_status rc = m->host.alloc(m->host.impl, bytes, p);
  if (rc != ZS_OK) return zs_err_wrap(rc, "offloaded state");
  zs_ledger_add(&m->ledger, ZS_MEM_HOST_PINNED, host_charge(m, bytes));
  return ZS_OK;
}

/* Queues a free for zs_mem_drain. If the queue cannot grow, the buffer leaks (still booked)
   rather than being freed while a collective may write into it. */
static void defer(zs_mem *m, zs_mem_deferred d) {
  if (m->ndeferred == m->cap_deferred) {
    const int cap = m->cap_deferred ? 2 * m->cap_deferred : 16;
    zs_mem_deferred *n = realloc(m->deferred, (size_t)cap * sizeof *n);
    if (!n) return;
    m->deferred = n;
    m->cap_deferred = cap;
  }
  m->deferred[m->ndeferred++] = d;
}

/* The free itself, unbooked. */
static void release(zs_mem *m, zs_mem_deferred d, void *stream) {
  if (d.host)
    m->host.free(m->host.impl, d.p);
  else
    zs_dev_free(m->dev, d.p, stream);
  zs_ledger_sub(&m->ledger, d.cat, d.bytes);
}

void zs_mem_free(zs_mem *m, zs_mem_cat c, void *p, size_t bytes, void *stream) {
  if (!p) return;
  const zs_mem_deferred d = {p, c, bytes, 0};
  if (m->broken)
    defer(m, d);
  else
    release(m, d, stream);
}

void zs_mem_free_host(zs_mem *m, void *p, size_t bytes) {
  if (!p) return;
  const zs_mem_deferred d = {p, ZS_MEM_HOST_PINNED, host_charge(m, bytes), 1};
  if (m->broken)
    defer(m, d);
  else
    release(m, d, NULL);
}

int zs_mem_may_be_written(zs_status s) {
  return s == ZS_ERR_COMM || s == ZS_ERR_TIMEOUT || s == ZS_ERR_DEVICE;
}

void zs_mem_free_after(zs_mem *m, zs_status s, zs_mem_cat c, void *p, size_t bytes, void *stream) {
  if (p && zs_mem_may_be_written(s))
    defer(m, (zs_mem_deferred){p, c, bytes, 0});
  else
    zs_mem_free(m, c, p, bytes, stream);
}

void zs_mem_break(zs_mem *m) {
  m->broken = 1;
}

void zs_mem_drain(zs_mem *m) {
  m->broken = 0;
  for (int i = 0; i < m->ndeferred; i++)
    release(m, m->deferred[i], NULL);
  free(m->deferred);
  m->deferred = NULL;
  m->ndeferred = m->cap_deferred = 0;
}
